package ui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"mlxchat/engine"
	"mlxchat/themes"
)

// runCommand carries out a parsed slash command. An error is one line that
// names the command; nothing has changed when it is returned.
func (m *model) runCommand(c Command) error {
	name := "/" + string(c.Name)
	s := m.settings
	switch c.Name {
	case CmdKV:
		if c.Off {
			s.MaxKV = 0
			return m.changeSettings(name, s, "kv cap off: the live window is unlimited")
		} else {
			s.MaxKV = int(c.Int)
			msg := fmt.Sprintf("kv cap %d tokens; older tokens after the sink are trimmed", s.MaxKV)
			if m.meter.Live > s.MaxKV {
				msg = fmt.Sprintf("kv cap %d tokens; the %d live tokens are trimmed to it when the next answer starts", s.MaxKV, m.meter.Live)
			}
			return m.changeSettings(name, s, msg)
		}
	case CmdChunk:
		s.PrefillChunk = int(c.Int)
		return m.changeSettings(name, s, fmt.Sprintf("prefill chunk %d tokens", s.PrefillChunk))
	case CmdTemp:
		s.Temperature = c.Float
		return m.changeSettings(name, s, fmt.Sprintf("temperature %g", c.Float))
	case CmdTopP:
		s.TopP = c.Float
		return m.changeSettings(name, s, fmt.Sprintf("top-p %g", c.Float))
	case CmdTopK:
		s.TopK = int(c.Int)
		return m.changeSettings(name, s, fmt.Sprintf("top-k %d", s.TopK))
	case CmdMinP:
		s.MinP = c.Float
		return m.changeSettings(name, s, fmt.Sprintf("min-p %g", c.Float))
	case CmdSeed:
		s.Seed = uint64(c.Int)
		return m.changeSettings(name, s, fmt.Sprintf("seed %d", s.Seed))
	case CmdMax:
		s.MaxTokens = int(c.Int)
		return m.changeSettings(name, s, fmt.Sprintf("at most %d new tokens per answer", s.MaxTokens))
	case CmdSystem:
		s.System = c.Text
		msg := "system prompt cleared"
		if c.Text != "" {
			msg = fmt.Sprintf("system prompt set (%d chars); the next answer prefills from the start", len(c.Text))
		}
		return m.changeSettings(name, s, msg)
	case CmdClear:
		m.clear()
	case CmdStats:
		m.addInfo(m.statsText())
	case CmdTheme:
		t, err := themes.Get(c.Text, m.noColor)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := m.applyTheme(t); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		m.cfg.Theme = t.Name
		m.refresh()
		if m.cfgPath == "" {
			m.setNotice("theme " + t.Name)
			return nil
		}
		if err := SaveTheme(m.cfgPath, t.Name); err != nil {
			m.setError(fmt.Errorf("%s: theme %s is on, but not saved: %w", name, t.Name, err))
			return nil
		}
		m.setNotice(fmt.Sprintf("theme %s (saved to %s)", t.Name, m.cfgPath))
	case CmdSave:
		return m.save(c.Text)
	case CmdLoad:
		return m.loadFile(c.Text)
	case CmdModel:
		m.addInfo(m.modelText())
	case CmdHelp:
		m.addInfo(HelpText())
	case CmdQuit:
		m.quit()
	}
	return nil
}

// changeSettings validates s, sends it to the engine and shows okMsg. On a
// bad value nothing changes and the error names the command.
func (m *model) changeSettings(cmd string, s engine.Settings, okMsg string) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	prev := m.settings
	m.settings = s
	m.meter.Max = s.MaxKV
	id := m.eng.Submit(engine.UpdateSettings{Settings: s})
	m.pendingSt[id] = prev
	if m.gen != nil {
		okMsg += " (from the next answer)"
	}
	m.setNotice(okMsg)
	m.autosave()
	return nil
}

// clear starts a new conversation (and a new autosave file).
func (m *model) clear() {
	if m.gen != nil {
		m.eng.Submit(engine.Cancel{ID: m.gen.id})
		m.gen = nil
	}
	m.eng.Submit(engine.Reset{})
	m.autosave()
	m.turns = nil
	m.created = m.now()
	if m.convDir != "" && *m.cfg.Autosave {
		m.saver.start(m.convDir, m.created)
	}
	m.meter.Live, m.meter.Seen, m.meter.Trimmed = 0, 0, 0
	m.stats = nil
	m.decodeTPS = 0
	m.setNotice("new conversation")
	m.refresh()
}

// save writes the conversation to name (or the autosave file).
func (m *model) save(name string) error {
	if name == "" {
		if m.saver.folder() == "" {
			return fmt.Errorf("/save: autosave is off, expected a FILE name")
		}
		m.record(true)
		path := m.saver.currentPath()
		if path == "" {
			return fmt.Errorf("/save: nothing to save yet (no message, draft or system prompt)")
		}
		if err := m.saver.flush(); err != nil {
			return fmt.Errorf("/save: %w", err)
		}
		m.setNotice("saved to " + m.saver.currentPath())
		return nil
	}
	path := resolveConversationPath(m.convDir, name)
	if m.convDir == "" && !filepath.IsAbs(path) && !strings.ContainsRune(name, '/') {
		path = name
	}
	if err := saveConversation(path, m.snapshot()); err != nil {
		return fmt.Errorf("/save: %w", err)
	}
	m.setNotice("saved to " + path)
	return nil
}

// findConversation resolves a /load argument: the path as given (".json"
// added when it has no extension), else the same name in the conversations
// folder.
func (m *model) findConversation(name string) (string, error) {
	cands := []string{name}
	if filepath.Ext(name) == "" {
		cands = append(cands, name+".json")
	}
	if m.convDir != "" {
		cands = append(cands, resolveConversationPath(m.convDir, name))
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	where := ""
	if m.convDir != "" {
		where = " or in " + m.convDir
	}
	return "", fmt.Errorf("no file %q here%s", name, where)
}

// loadFile replaces the conversation with a saved one.
func (m *model) loadFile(name string) error {
	if m.gen != nil {
		return errors.New("/load: an answer is running, press Esc first")
	}
	path, err := m.findConversation(name)
	if err != nil {
		return fmt.Errorf("/load: %w", err)
	}
	c, err := loadConversation(path)
	if err != nil {
		return fmt.Errorf("/load: %w", err)
	}
	m.autosave() // keep the conversation we are leaving
	m.turns = m.turns[:0:0]
	for _, sm := range c.Messages {
		t := turn{content: sm.Content, partial: sm.Partial}
		if sm.Role == engine.RoleUser {
			t.kind = turnUser
			t.display = sm.Content
			if sm.Display != "" {
				t.display = sm.Display
			}
		} else {
			t.kind = turnAssistant
			t.note = loadedNote(sm)
		}
		m.turns = append(m.turns, t)
	}
	if m.ta.Value() == "" && c.Draft != "" {
		m.ta.SetValue(c.Draft)
		m.pastes.blocks = append([]pasteBlock(nil), c.DraftPastes...)
		m.afterEdit()
	}
	if c.System != m.settings.System {
		s := m.settings
		s.System = c.System
		prev := m.settings
		m.settings = s
		m.pendingSt[m.eng.Submit(engine.UpdateSettings{Settings: s})] = prev
	}
	if !c.Created.IsZero() {
		m.created = c.Created
	}
	if m.convDir != "" && *m.cfg.Autosave {
		if abs, err := filepath.Abs(path); err == nil && filepath.Dir(abs) == filepath.Clean(m.convDir) {
			m.saver.adopt(abs)
		} else {
			m.saver.start(m.convDir, m.now())
		}
	}
	m.setNotice(fmt.Sprintf("loaded %d messages from %s", len(c.Messages), path))
	m.autosave()
	m.refresh()
	m.vp.GotoBottom()
	return nil
}

// addInfo appends command output to the view (not part of the chat).
func (m *model) addInfo(text string) {
	m.turns = append(m.turns, turn{kind: turnInfo, content: text})
	m.refresh()
	m.vp.GotoBottom()
}

func (m *model) statsText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cache  %s", meterText(m.meter))
	if m.settings.MaxKV > 0 {
		fmt.Fprintf(&b, " (cap %d, sink %d)", m.settings.MaxKV, m.settings.Normalize().SinkTokens)
	} else {
		b.WriteString(" (no cap)")
	}
	if m.meter.Trimmed > 0 {
		fmt.Fprintf(&b, "\n       %d of %d tokens seen are no longer attended (trimmed to fit the cap)", m.meter.Trimmed, m.meter.Seen)
	}
	if s := m.stats; s != nil {
		reused := fmt.Sprintf("%d reused", s.ReusedTokens)
		if s.ReusedTrimmed > 0 {
			reused += fmt.Sprintf(" of which %d were already trimmed", s.ReusedTrimmed)
		}
		fmt.Fprintf(&b, "\nprompt %d tokens (%s, %d prefilled) at %.1f tok/s, first token after %s",
			s.PromptTokens, reused, s.PrefillTokens, s.PromptTokPerSec, s.TimeToFirstToken.Round(1e6))
		if s.RewoundTokens > 0 {
			fmt.Fprintf(&b, "\n       the cache was rewound by %d tokens: %s", s.RewoundTokens, rewindText(s.CacheRewind))
		}
		if why := restartText(s.CacheRestart); why != "" {
			fmt.Fprintf(&b, "\n       the cache started over: %s", why)
		}
		fmt.Fprintf(&b, "\ndecode %d tokens at %.1f tok/s in %s", s.DecodeTokens, s.DecodeTokPerSec, s.DecodeTime.Round(1e6))
		fmt.Fprintf(&b, "\nmemory %s (kv cache %s)", formatBytes(s.MemoryBytes), formatBytes(s.KVBytes))
	} else {
		b.WriteString("\nno answer yet")
	}
	return b.String()
}

// restartText explains engine.Stats.CacheRestart for /stats.
func restartText(why string) string {
	switch why {
	case "":
		return ""
	case engine.RestartHistory:
		return "the conversation no longer starts with what the cache holds (an edit, another system prompt, or an answer that re-tokenizes differently)"
	case engine.RestartCapRaised:
		return "the kv cap was raised or turned off, so tokens trimmed earlier were prefilled again"
	case engine.RestartNothingNew:
		return "the prompt added nothing to what the cache holds"
	case engine.RestartBeyondRewind:
		return "the conversation changed further back than the cache can rewind (into trimmed tokens, or past the sliding layers' rewind slack)"
	}
	return why
}

// rewindText explains engine.Stats.CacheRewind for /stats.
func rewindText(why string) string {
	switch why {
	case engine.RewindDiverged:
		return "the conversation differs from what the cache was fed after that point (an edited turn, or an answer that re-tokenizes differently)"
	case engine.RewindNothingNew:
		return "the prompt added nothing new, so its last token is prefilled again"
	}
	return why
}

func (m *model) modelText() string {
	var b strings.Builder
	i := m.info
	fmt.Fprintf(&b, "model   %s", m.displayModel())
	if m.modelDir != "" {
		fmt.Fprintf(&b, "\ndir     %s", m.modelDir)
	}
	if i.ModelType != "" {
		fmt.Fprintf(&b, "\ntype    %s · %d layers · vocab %d", i.ModelType, i.Layers, i.VocabSize)
		if i.ContextLength > 0 {
			fmt.Fprintf(&b, " · context %d", i.ContextLength)
		}
		if i.SlidingWindow > 0 {
			fmt.Fprintf(&b, " · sliding window %d", i.SlidingWindow)
		}
		fmt.Fprintf(&b, "\nbackend %s · %s of weights per token", i.Backend, formatBytes(i.WeightBytes))
	}
	s := m.settings.Normalize()
	kv := "off"
	if s.MaxKV > 0 {
		kv = fmt.Sprint(s.MaxKV)
	}
	off := func(on bool, v string) string {
		if on {
			return v
		}
		return "off"
	}
	fmt.Fprintf(&b, "\nsettings /kv %s · /chunk %d · /temp %g · /topk %s · /topp %s · /minp %s · /seed %d",
		kv, s.PrefillChunk, s.Temperature, off(s.TopK > 0, fmt.Sprint(s.TopK)),
		off(s.TopP > 0 && s.TopP < 1, fmt.Sprint(s.TopP)), off(s.MinP > 0, fmt.Sprint(s.MinP)), s.Seed)
	if s.MaxTokens > 0 {
		fmt.Fprintf(&b, " · /max %d", s.MaxTokens)
	}
	if s.System != "" {
		fmt.Fprintf(&b, "\nsystem  %s", s.System)
	}
	return b.String()
}
