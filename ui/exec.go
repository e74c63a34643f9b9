package ui

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
	"mlxchat/safefile"
	"mlxchat/themes"
)

// runCommand carries out a parsed slash command. An error is one line that
// names the command; nothing has changed when it is returned. The command
// returned, if any, finishes the work off the UI goroutine (/load reads
// its file there).
func (m *model) runCommand(c Command) (tea.Cmd, error) {
	name := "/" + string(c.Name)
	s := m.set.cur
	switch c.Name {
	case CmdKV:
		if c.Bits != 0 {
			return nil, m.kvBitsCommand(c.Bits)
		}
		if c.Off {
			s.MaxKV = 0
			msg := "kv cap off: the live window is unlimited"
			if c := m.info.ContextLength; c > 0 {
				msg = fmt.Sprintf("kv cap off: the live window is the model's %s-token context; older tokens after the sink are trimmed beyond it", groupDigits(c))
			}
			return nil, m.changeSettings(name, s, msg)
		} else {
			s.MaxKV = int(c.Int)
			if err := m.checkCapAgainstContext(s.MaxKV); err != nil {
				return nil, fmt.Errorf("%s %d: %w", name, s.MaxKV, err)
			}
			if err := m.checkPins(s, -1); err != nil {
				return nil, fmt.Errorf("%s %d: %w", name, s.MaxKV, err)
			}
			msg := fmt.Sprintf("kv cap %d tokens; older tokens after the sink are trimmed", s.MaxKV)
			if m.st.meter.Live > s.MaxKV {
				msg = fmt.Sprintf("kv cap %d tokens: the next answer trims the %d live tokens to it", s.MaxKV, m.st.meter.Live)
			}
			return nil, m.changeSettings(name, s, msg)
		}
	case CmdChunk:
		s.PrefillChunk = int(c.Int)
		return nil, m.changeSettings(name, s, fmt.Sprintf("prefill chunk %d tokens", s.PrefillChunk))
	case CmdTemp:
		s.Temperature = c.Float
		return nil, m.changeSettings(name, s, fmt.Sprintf("temperature %g", c.Float))
	case CmdTopP:
		s.TopP = c.Float
		if c.Off || s.TopP == 1 {
			s.TopP = 0
			return nil, m.changeSettings(name, s, "top-p off")
		}
		return nil, m.changeSettings(name, s, fmt.Sprintf("top-p %g", c.Float))
	case CmdTopK:
		s.TopK = int(c.Int)
		if s.TopK == 0 {
			return nil, m.changeSettings(name, s, "top-k off")
		}
		return nil, m.changeSettings(name, s, fmt.Sprintf("top-k %d", s.TopK))
	case CmdMinP:
		s.MinP = c.Float
		if s.MinP == 0 {
			return nil, m.changeSettings(name, s, "min-p off")
		}
		return nil, m.changeSettings(name, s, fmt.Sprintf("min-p %g", c.Float))
	case CmdSeed:
		s.Seed = uint64(c.Int)
		return nil, m.changeSettings(name, s, fmt.Sprintf("seed %d", s.Seed))
	case CmdMax:
		s.MaxTokens = int(c.Int)
		if c.Off {
			return nil, m.changeSettings(name, s, "no limit on new tokens per answer")
		}
		return nil, m.changeSettings(name, s, fmt.Sprintf("at most %d new tokens per answer", s.MaxTokens))
	case CmdThink:
		return nil, m.thinkCommand(c)
	case CmdSystem:
		s.System = c.Text
		msg := "system prompt cleared"
		if c.Text != "" {
			msg = fmt.Sprintf("system prompt set (%d chars); the next answer prefills from the start", len(c.Text))
		}
		return nil, m.changeSettings(name, s, msg)
	case CmdPin, CmdUnpin:
		return nil, m.pinCommand(c)
	case CmdClear:
		m.clear()
	case CmdSummarize:
		return nil, m.runSummarize(c.Text)
	case CmdStats:
		m.tr.addInfo(m.statsText())
	case CmdTheme:
		t, err := themes.Get(c.Text, m.sess.noColor)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := m.applyTheme(t); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		m.tr.welcome = m.welcome()
		m.sess.cfg.Theme = t.Name
		m.tr.refresh()
		if m.sess.cfgPath == "" {
			m.setNotice("theme " + t.Name)
			return nil, nil
		}
		if err := SaveTheme(m.sess.cfgPath, t.Name); err != nil {
			m.setError(fmt.Errorf("%s: theme %s is on, but not saved: %w", name, t.Name, err))
			return nil, nil
		}
		m.setNotice(fmt.Sprintf("theme %s (saved to %s)", t.Name, m.sess.cfgPath))
	case CmdSave:
		return nil, m.save(c.Text)
	case CmdLoad:
		return m.startLoad(c.Text)
	case CmdRead:
		return m.startRead(c.Text)
	case CmdModel:
		m.tr.addInfo(m.modelText())
	case CmdHelp:
		m.tr.addInfo(HelpText())
	case CmdQuit:
		m.quit()
	}
	return nil, nil
}

// fromNextAnswer is the notice of a change made while an answer runs,
// which takes effect from the next one: msg with "(from the next answer)"
// unless it names the next answer itself ("kv cap 64 tokens: the next
// answer trims the 593 live tokens to it" said "next answer" twice).
func (m *model) fromNextAnswer(msg string) string {
	if !m.phase.busy() || strings.Contains(msg, "next answer") {
		return msg
	}
	return msg + " (from the next answer)"
}

// checkCapAgainstContext refuses a cap above the model's context length
// (max_position_embeddings, known once the model has loaded): a live
// window wider than the positions the model was trained on would make it
// attend over distances it never saw, and hold memory for keys no answer
// can use well. /kv off already makes the whole context the live window.
func (m *model) checkCapAgainstContext(capTokens int) error {
	ctx := m.info.ContextLength
	if ctx <= 0 || capTokens <= ctx {
		return nil
	}
	return fmt.Errorf("above the model's context length of %s tokens (max_position_embeddings); use /kv %d or less, or /kv off for the whole context",
		groupDigits(ctx), ctx)
}

// dropCapAboveContext takes off a /kv cap that the model's context
// length, known once it has loaded, turns out to be below: /kv N typed
// while the model loaded was taken unchecked, and a cap above the context
// is refused once it is known (checkCapAgainstContext; --max-kv-size is
// refused by cli). The error says so; the live window is then the whole
// context, the nearest allowed cap to what was asked.
func (m *model) dropCapAboveContext() {
	s := m.set.cur
	if m.checkCapAgainstContext(s.MaxKV) == nil {
		return
	}
	asked, ctx := s.MaxKV, m.info.ContextLength
	s.MaxKV = 0
	if m.changeSettings("/kv", s, "") != nil {
		return
	}
	m.setError(fmt.Errorf("/kv %d, typed while the model loaded, is above its context length of %s tokens (max_position_embeddings): the cap is off instead, so the live window is the whole context (/kv %d or less sets one)",
		asked, groupDigits(ctx), ctx))
}

// changeSettings validates s, sends it to the engine and shows okMsg. On a
// bad value nothing changes and the error names the command.
func (m *model) changeSettings(cmd string, s engine.Settings, okMsg string) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	prev := m.set.cur
	m.set.cur = s
	m.st.meter.Max = m.liveCap(s)
	id := m.sess.eng.Submit(engine.UpdateSettings{Settings: s})
	m.set.pending[id] = prev
	m.setNotice(m.fromNextAnswer(okMsg))
	m.autosave()
	m.recheckHeld(s)
	return nil
}

// kvBitsCommand carries out /kv bits 32|16|8: the storage precision of the
// KV cache. A change empties the cache (engine.RestartKVBits), so the next
// answer prefills the conversation again.
func (m *model) kvBitsCommand(bits int) error {
	s := m.set.cur
	if kvBits(s) == bits {
		m.setNotice(fmt.Sprintf("the KV cache is already %d-bit", bits))
		return nil
	}
	s.KVBits = bits
	msg := "KV cache 32-bit (float32, the format attention reads)"
	switch bits {
	case 16:
		msg = "KV cache 16-bit (float16: half the memory of float32, decoded to float32 at every step)"
	case 8:
		msg = "KV cache 8-bit (int8 with a scale per token and head: a little over a quarter of the memory of float32, decoded to float32 at every step)"
	}
	return m.changeSettings("/kv bits", s, msg+"; the cache starts over and the next answer prefills the conversation again")
}

// kvBits is the KV storage precision of s (32, float32, when unset).
func kvBits(s engine.Settings) int {
	if s.KVBits == 0 {
		return 32
	}
	return s.KVBits
}

// pinCommand carries out /pin [N] and /unpin [N]: it sets or clears the
// Pinned flag of message N (the #N of its label; by default the last
// message for /pin, the last pinned one for /unpin), which the next
// request sends to the engine. A pin that would take the sink and the
// pins past half of the cap (the engine's limit) is refused when the
// tokens are known; otherwise the engine refuses the next answer with the
// same reason.
func (m *model) pinCommand(c Command) error {
	pin := c.Name == CmdPin
	name := "/" + string(c.Name)
	if c.Int > 0 {
		name += fmt.Sprintf(" %d", c.Int)
	}
	count := m.tr.messageCount()
	num := int(c.Int)
	switch {
	case count == 0 && pin:
		return fmt.Errorf("%s: there is no message to pin yet (send one first)", name)
	case num == 0 && pin:
		num = count
	case num == 0:
		if num = m.tr.lastPinned(); num == 0 {
			return fmt.Errorf("%s: no message is pinned", name)
		}
	}
	if num > count {
		if count == 0 {
			return fmt.Errorf("%s: no message #%d: there is no message yet", name, num)
		}
		return fmt.Errorf("%s: no message #%d: the messages are #1 to #%d (the numbers at the right of their labels)", name, num, count)
	}
	i := m.tr.message(num)
	t := &m.tr.turns[i]
	if t.pinned == pin {
		if pin {
			m.setNotice(fmt.Sprintf("message #%d is already pinned", num))
		} else {
			m.setNotice(fmt.Sprintf("message #%d is not pinned", num))
		}
		return nil
	}
	if pin {
		if err := m.checkPins(m.set.cur, i); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	t.pinned = pin
	m.tr.changed(i)
	var msg string
	switch {
	case !pin:
		msg = fmt.Sprintf("message #%d unpinned: trimming may drop it again from the next answer", num)
	case m.liveCap(m.set.cur) <= 0:
		msg = fmt.Sprintf("message #%d pinned: there is no cap now, so nothing is trimmed; under /kv N it stays in the live window", num)
	case liveState(t) != "":
		msg = fmt.Sprintf("message #%d pinned: it was trimmed, so the next answer prefills the conversation again to keep it whole", num)
	default:
		msg = fmt.Sprintf("message #%d pinned: trimming never drops it", num)
		if p, ok := m.pinnedTokens(i); ok {
			msg = fmt.Sprintf("message #%d pinned (%s): trimming never drops it", num, p)
		}
	}
	m.setNotice(m.fromNextAnswer(msg))
	m.tr.refresh()
	m.autosave()
	m.recheckHeld(m.set.cur)
	return nil
}

// checkPins says when the pinned messages (with turn extra pinned too,
// -1 for none) and the sink would need more than half of the cap of s,
// the most the engine lets never-trimmed tokens take. Messages whose
// tokens are not known are left out (the engine checks them).
func (m *model) checkPins(s engine.Settings, extra int) error {
	c := m.liveCap(s.Normalize())
	if c <= 0 {
		return nil
	}
	pinned, others := 0, 0
	for i := range m.tr.turns {
		t := &m.tr.turns[i]
		if !t.isMessage() || (!t.pinned && i != extra) {
			continue
		}
		p, ok := m.pinnedTokens(i)
		if !ok {
			continue
		}
		pinned += p.beside
		if i != extra {
			others += p.beside
		}
	}
	sink := m.sinkTokens()
	if pinned == 0 || sink+pinned <= c/2 {
		return nil
	}
	half, need := c/2, sink+pinned
	if extra < 0 {
		return fmt.Errorf("the pinned messages (%s tokens beside the sink) and the %d-token sink need %s, more than half of the cap (%s), the most they may keep; /unpin one first or set /kv %d or more",
			groupDigits(pinned), sink, groupDigits(need), groupDigits(half), 2*need)
	}
	what := fmt.Sprintf("with the %d-token sink", sink)
	if others > 0 {
		what = fmt.Sprintf("with the messages already pinned (%s tokens beside the sink) and the %d-token sink", groupDigits(others), sink)
	}
	return fmt.Errorf("message #%d has %s tokens beside the sink; %s that is %s, more than half of the %s-token cap (%s), the most pins may keep; /unpin a message or raise /kv to %d",
		m.tr.number(extra), groupDigits(pinned-others), what, groupDigits(need), groupDigits(c), groupDigits(half), 2*need)
}

// pinLines lists the pinned messages for /stats.
func (m *model) pinLines() []string {
	var nums []string
	var total pinCount
	known := true
	for i := range m.tr.turns {
		t := &m.tr.turns[i]
		if !t.isMessage() || !t.pinned {
			continue
		}
		who := "you"
		if t.kind == turnAssistant {
			who = m.tr.label
		}
		nums = append(nums, fmt.Sprintf("#%d %s", m.tr.number(i), who))
		if p, ok := m.pinnedTokens(i); ok {
			total.beside += p.beside
			total.inSink += p.inSink
		} else {
			known = false
		}
	}
	if len(nums) == 0 {
		return nil
	}
	line := "pinned " + strings.Join(nums, ", ")
	if known {
		line += fmt.Sprintf(" (%s; never trimmed)", total)
	} else {
		line += " (never trimmed)"
	}
	return []string{line}
}

// clear starts a new conversation (and a new autosave file).
func (m *model) clear() {
	if m.req != nil {
		m.sess.eng.Submit(engine.Cancel{ID: m.req.id})
		m.req = nil
		m.phase = phaseIdle
	}
	m.sess.eng.Submit(engine.Reset{})
	m.autosave()
	m.tr.reset()
	m.created = m.sess.now()
	if m.files.convDir != "" && *m.sess.cfg.Autosave {
		m.files.saver.start(m.files.convDir, m.created)
	}
	m.st.emptied()
	m.st.stats = nil
	m.st.decodeTPS = 0
	m.setNotice("new conversation")
	m.tr.refresh()
}

// save writes the conversation to name (or the autosave file).
func (m *model) save(name string) error {
	if name == "" {
		if m.files.saver.folder() == "" {
			return fmt.Errorf("/save: autosave is off, expected a FILE name")
		}
		m.record(true)
		path := m.files.saver.currentPath()
		if path == "" {
			return fmt.Errorf("/save: nothing to save yet (no message, draft or system prompt)")
		}
		if err := m.files.saver.flush(); err != nil {
			return fmt.Errorf("/save: %w", err)
		}
		m.setNotice("saved to " + m.files.saver.currentPath())
		return nil
	}
	path, err := savePath(m.files.convDir, name)
	if err != nil {
		return fmt.Errorf("/save: %w", err)
	}
	if err := saveConversation(path, m.snapshot()); err != nil {
		return fmt.Errorf("/save: %w", err)
	}
	m.setNotice("saved to " + path)
	return nil
}

// savePath resolves a /save FILE argument. A bare name goes to the
// conversations folder convDir (the working directory when autosave is
// off), ".json" added when it has no extension. A path with a folder must
// name an existing folder (it is not created), and an existing file is
// written as named, without ".json" added, only when it is a regular file.
func savePath(convDir, name string) (string, error) {
	bare := !strings.ContainsRune(name, '/') && !strings.ContainsRune(name, os.PathSeparator)
	if bare && convDir == "" {
		convDir = "."
	}
	if !bare {
		p := expandHome(name)
		if st, err := os.Stat(p); err == nil {
			if !st.Mode().IsRegular() {
				return "", fmt.Errorf("%s is %s, expected a regular file or a new file name", p, safefile.Kind(st.Mode()))
			}
			return p, nil
		}
		dir := filepath.Dir(p)
		st, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("no folder %s for %s (create it first)", dir, p)
		case err != nil:
			return "", err
		case !st.IsDir():
			return "", fmt.Errorf("%s: %s is not a folder", p, dir)
		}
	}
	p := resolveConversationPath(convDir, name)
	if st, err := os.Stat(p); err == nil && !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is %s, expected a regular file or a new file name", p, safefile.Kind(st.Mode()))
	}
	return p, nil
}

// loadedMsg carries a conversation file read off the UI goroutine.
type loadedMsg struct {
	name string // the /load argument
	path string
	file conversationFile
	err  error
}

// startLoad begins /load NAME: the file is found and read by the returned
// command, off the UI goroutine, so a slow, huge or blocking file cannot
// freeze the chat; applyLoad takes the result.
func (m *model) startLoad(name string) (tea.Cmd, error) {
	if m.phase.busy() {
		return nil, errors.New("/load: an answer is running, press Esc first")
	}
	if m.jobs.loading != "" {
		return nil, fmt.Errorf("/load: still reading %s", m.jobs.loading)
	}
	m.jobs.loading = name
	m.setNotice("reading " + name + "…")
	convDir := m.files.convDir
	return func() tea.Msg {
		path, err := findConversation(convDir, name)
		if err != nil {
			return loadedMsg{name: name, err: err}
		}
		c, err := loadConversation(path)
		return loadedMsg{name: name, path: path, file: c, err: err}
	}, nil
}

// findConversation resolves a /load argument. A bare name (no folder in
// it) is looked for first in the conversations folder convDir, where
// /save NAME writes it and the exit line's /load NAME points, then in the
// current directory; a path is taken as given. ".json" is added to a name
// without an extension.
func findConversation(convDir, name string) (string, error) {
	bare := !strings.ContainsRune(name, os.PathSeparator) && !strings.Contains(name, "/")
	var cands []string
	if bare && convDir != "" {
		cands = append(cands, resolveConversationPath(convDir, name))
	}
	cands = append(cands, name)
	if filepath.Ext(name) == "" {
		cands = append(cands, name+".json")
	}
	if !bare {
		cands = append(cands, resolveConversationPath(convDir, name)) // "~/x" in the home directory
	}
	notFile := ""
	for _, c := range cands {
		st, err := os.Stat(c)
		switch {
		case err == nil && !st.IsDir():
			return c, nil
		case err == nil && notFile == "":
			notFile = c
		}
	}
	if notFile != "" {
		return "", fmt.Errorf("%s is a directory, expected a conversation file", notFile)
	}
	where := ""
	if convDir != "" {
		where = " or in " + convDir
	}
	return "", fmt.Errorf("no file %q here%s", name, where)
}

// applyLoad replaces the conversation with a file startLoad read. The
// file is repaired so that the chat can go on (repairConversation): the
// notice says what was repaired, and an unanswered last message goes back
// into the editor. A failure leaves the chat as it was and says that ↑
// brings the command back, to be fixed.
func (m *model) applyLoad(msg loadedMsg) {
	m.jobs.loading = ""
	if msg.err == nil && m.phase.busy() {
		msg.err = errors.New("an answer started meanwhile, press Esc first")
	}
	if msg.err != nil {
		m.commandFailed(fmt.Errorf("/load: %w", msg.err)) // ↑ brings the /load back
		return
	}
	path, c := msg.path, msg.file
	fixed, repairs, unanswered := repairConversation(c)
	m.autosave() // keep the conversation we are leaving
	m.tr.reset()
	for _, sm := range fixed.Messages {
		t := turn{content: sm.Content, partial: sm.Partial, pinned: sm.Pinned && !sm.orphan}
		switch {
		case sm.Role == engine.RoleUser:
			t.kind = turnUser
			t.display = sm.Content
			if sm.Display != "" {
				t.display = sm.Display
			}
			if sm.Summarize != nil {
				t.summarize = &summarizeSource{instruction: sm.Summarize.Instruction}
			}
		case sm.orphan:
			t.kind = turnInfo
			t.content = "(an answer from the file without a question before it; not sent to the model)\n" + sm.Content
		default:
			t.kind = turnAssistant
			t.note, t.maxTokens = loadedNote(sm), sm.MaxTokens
			t.reasoning = sm.Reasoning
			if sm.Summary != nil {
				t.pieces, t.piecesInline = loadPieces(sm.Summary.Pieces), sm.Summary.Inline
			}
		}
		m.tr.add(t)
	}
	draft, blocks := c.Draft, append([]pasteBlock(nil), c.DraftPastes...)
	if unanswered != nil {
		text := unanswered.Content
		if isLongPaste(text, m.sess.cfg.PasteMinChars, m.sess.cfg.PasteMinLines) {
			text = m.ed.pastes.add(text, m.sess.count) // collapsed again, exact text kept
			blocks = append(m.ed.pastes.blocks[len(m.ed.pastes.blocks)-1:], blocks...)
			m.ed.pastes.blocks = nil
		}
		if draft != "" {
			text += "\n" + draft
		}
		draft = text
	}
	if draft != "" {
		if cur := m.ed.value(); cur != "" {
			draft += "\n" + cur
			blocks = append(blocks, m.ed.pastes.present(cur)...)
		}
		m.ed.set(draft, blocks)
		m.afterEdit()
	}
	if c.System != m.set.cur.System {
		s := m.set.cur
		s.System = c.System
		prev := m.set.cur
		m.set.cur = s
		m.set.pending[m.sess.eng.Submit(engine.UpdateSettings{Settings: s})] = prev
	}
	if !c.Created.IsZero() {
		m.created = c.Created
	}
	if m.files.convDir != "" && *m.sess.cfg.Autosave {
		if abs, err := filepath.Abs(path); err == nil && filepath.Dir(abs) == filepath.Clean(m.files.convDir) {
			m.files.saver.adopt(abs)
		} else {
			m.files.saver.start(m.files.convDir, m.sess.now())
		}
	}
	notice := fmt.Sprintf("loaded %d messages from %s", len(c.Messages), path)
	if len(repairs) > 0 {
		notice += "; repaired: " + strings.Join(repairs, "; ")
	}
	m.setNotice(notice)
	m.autosave()
	m.tr.refresh()
	m.tr.gotoBottom()
}

// repairConversation makes a loaded conversation one the model accepts:
// roles alternate user, assistant, user... (chat templates such as
// Gemma's refuse anything else). What a crash or an older version left
// is mended, never dropped: consecutive messages of one role are merged
// into one (texts joined by a blank line), an answer with no question
// before it is kept for display only (orphan), and a last user
// message that has no answer is taken out and returned, for the editor.
// repairs says, in words, what was changed (nil when nothing was).
func repairConversation(c conversationFile) (fixed conversationFile, repairs []string, unanswered *savedMessage) {
	fixed = c
	fixed.Messages = nil
	merged := map[string]int{}
	orphans := 0
	for _, sm := range c.Messages {
		n := len(fixed.Messages)
		switch {
		case n > 0 && fixed.Messages[n-1].Role == sm.Role && !fixed.Messages[n-1].orphan:
			prev := &fixed.Messages[n-1]
			pd, sd := prev.Display, sm.Display
			if pd == "" {
				pd = prev.Content
			}
			if sd == "" {
				sd = sm.Content
			}
			prev.Content += "\n\n" + sm.Content
			if pd+"\n\n"+sd != prev.Content {
				prev.Display = pd + "\n\n" + sd
			}
			prev.Partial = prev.Partial || sm.Partial
			prev.Pinned = prev.Pinned || sm.Pinned
			if sm.Note != "" {
				prev.Note = sm.Note
			}
			merged[sm.Role]++
		case sm.Role == engine.RoleAssistant && !hasUser(fixed.Messages):
			sm.orphan = true
			fixed.Messages = append(fixed.Messages, sm)
			orphans++
		default:
			fixed.Messages = append(fixed.Messages, sm)
		}
	}
	for _, role := range []string{engine.RoleUser, engine.RoleAssistant} {
		if k := merged[role]; k > 0 {
			repairs = append(repairs, fmt.Sprintf("merged %s into the %s message before %s", plural(k, role+" message"), role, pronoun(k)))
		}
	}
	if orphans > 0 {
		repairs = append(repairs, fmt.Sprintf("%s without a question kept for display only", plural(orphans, "answer")))
	}
	if n := len(fixed.Messages); n > 0 && fixed.Messages[n-1].Role == engine.RoleUser {
		last := fixed.Messages[n-1]
		unanswered = &last
		fixed.Messages = fixed.Messages[:n-1]
		repairs = append(repairs, "the last message had no answer and is back in the editor")
	}
	return fixed, repairs, unanswered
}

func hasUser(msgs []savedMessage) bool {
	for _, sm := range msgs {
		if sm.Role == engine.RoleUser {
			return true
		}
	}
	return false
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// addInfo appends command output to the view (not part of the chat).
func (m *model) addInfo(text string) {
	m.tr.turns = append(m.tr.turns, turn{kind: turnInfo, content: text})
	m.tr.refresh()
	m.tr.gotoBottom()
}

func (m *model) statsText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cache  %s", meterText(m.st.meter))
	if m.set.cur.MaxKV > 0 {
		fmt.Fprintf(&b, " (cap %d, sink %d)", m.set.cur.MaxKV, m.set.cur.Normalize().SinkTokens)
	} else if c := m.info.ContextLength; c > 0 {
		fmt.Fprintf(&b, " (no cap: the model's %d-token context, sink %d)", c, m.set.cur.Normalize().SinkTokens)
	} else {
		b.WriteString(" (no cap)")
	}
	if m.st.meter.Trimmed > 0 {
		fmt.Fprintf(&b, "\n       %d of %d tokens seen are no longer attended (trimmed to fit the cap)", m.st.meter.Trimmed, m.st.meter.Seen)
	}
	for _, l := range m.tr.windowLines() {
		b.WriteString("\n" + l)
	}
	for _, l := range m.pinLines() {
		b.WriteString("\n" + l)
	}
	if s := m.st.stats; s != nil {
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
	case engine.RestartPinned:
		return "a message pinned after part of it was trimmed is kept whole, so the conversation was prefilled again"
	case engine.RestartKVBits:
		return "the KV storage changed (/kv bits), so the conversation was prefilled again in the new format"
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
	if m.sess.modelDir != "" {
		fmt.Fprintf(&b, "\ndir     %s", m.sess.modelDir)
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
	s := m.set.cur.Normalize()
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
	kv += fmt.Sprintf(" (%d-bit)", kvBits(s))
	fmt.Fprintf(&b, "\nsettings /kv %s · /chunk %d · /temp %g · /topk %s · /topp %s · /minp %s · /seed %d",
		kv, s.PrefillChunk, s.Temperature, off(s.TopK > 0, fmt.Sprint(s.TopK)),
		off(s.TopP > 0 && s.TopP < 1, fmt.Sprint(s.TopP)), off(s.MinP > 0, fmt.Sprint(s.MinP)), s.Seed)
	if s.MaxTokens > 0 {
		fmt.Fprintf(&b, " · /max %d", s.MaxTokens)
	}
	if m.info.Reasoning {
		fmt.Fprintf(&b, " · /think %s", off(!s.NoThinking, "on"))
	}
	if s.System != "" {
		fmt.Fprintf(&b, "\nsystem  %s", s.System)
	}
	return b.String()
}

// pinCount is what a pinned message keeps: its tokens beside the sink,
// which the meter counts as "pinned" and the engine's budget (sink + pins
// at most half the cap) counts, and those of its tokens that lie in the
// sink already (only a first message can reach into it).
type pinCount struct {
	beside, inSink int
}

// String is how the pin notice and /stats say it: "20 tokens beside the
// sink", or "7 tokens beside the sink, 1 more in it".
func (p pinCount) String() string {
	s := groupDigits(p.beside) + " tokens beside the sink"
	if p.beside == 1 {
		s = "1 token beside the sink"
	}
	if p.inSink > 0 {
		s += fmt.Sprintf(", %s more in it", groupDigits(p.inSink))
	}
	return s
}

// pinnedTokens counts the tokens message turn i keeps when pinned (see
// pinCount); ok is false when they are not known. Where the message
// lies in the cache is known from its Layout span; before one, its
// tokens are counted and none are taken to lie in the sink.
func (m *model) pinnedTokens(i int) (pinCount, bool) {
	n, ok := m.tr.tokens(i, m.sess.count)
	if !ok {
		return pinCount{}, false
	}
	in := 0
	if s := m.tr.turns[i].span; s != nil {
		in = max(0, min(s.Tokens.End, m.sinkTokens())-s.Tokens.Start)
	}
	return pinCount{beside: n - in, inSink: in}, true
}

// sinkTokens is the attention sink's size: as the cache last reported
// it, else as the settings give it.
func (m *model) sinkTokens() int {
	if s := m.st.meter.Sink; s > 0 {
		return s
	}
	return m.set.cur.Normalize().SinkTokens
}
