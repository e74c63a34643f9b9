package ui

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/progress"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textarea"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"mlxchat/engine"
	"mlxchat/themes"
)

// Timing of the screen.
const (
	frameInterval  = time.Second / 30 // streaming re-render rate
	flashDuration  = 800 * time.Millisecond
	quitArmWindow  = 2 * time.Second
	draftSaveEvery = 3 * time.Second
	maxEventBatch  = 512 // events handled per Update
	maxInputLines  = 8
)

// Messages the model sends itself.
type (
	// eventsMsg is a batch of engine events; closed means the channel closed.
	eventsMsg struct {
		events []engine.Event
		closed bool
	}
	frameMsg     struct{}
	flashOffMsg  struct{ seq int }
	quitDisarm   struct{ seq int }
	draftSaveMsg struct{}
	// signalMsg is sent by Run on SIGHUP, SIGINT, SIGTERM or SIGQUIT.
	signalMsg struct{}
)

// waitEvents blocks for the next engine event and then takes whatever else is
// already queued, so a burst of tokens costs one Update.
func waitEvents(ch <-chan engine.Event) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return eventsMsg{closed: true}
		}
		batch := []engine.Event{ev}
		for len(batch) < maxEventBatch {
			select {
			case ev, ok := <-ch:
				if !ok {
					return eventsMsg{events: batch, closed: true}
				}
				batch = append(batch, ev)
			default:
				return eventsMsg{events: batch}
			}
		}
		return eventsMsg{events: batch}
	}
}

// turnKind is what a block of the conversation view is.
type turnKind int

const (
	turnUser turnKind = iota
	turnAssistant
	turnInfo  // command output; not part of the chat
	turnError // a failed request; not part of the chat
)

// turn is one block of the conversation view.
type turn struct {
	kind    turnKind
	content string       // exact text (sent to / received from the model)
	display string       // user turns: the text with pastes collapsed
	pastes  []pasteBlock // user turns: the pastes behind the labels in display
	partial bool         // assistant answer stopped early
	note    string       // assistant: why it stopped early

	stream  *stream // assistant answer while it streams
	out     string  // cached rendering, already fitted to the viewport
	outOK   bool
	outWide int // m.width the cached rendering was made for
	outFit  int // viewport width it was fitted to
}

// generation is the Generate request in flight.
type generation struct {
	id       engine.RequestID
	turn     int // index of the assistant turn
	prefill  engine.PrefillProgress
	inDecode bool
	first    time.Time // time of the first token event
	last     time.Time
	tokens   int
	stopping bool
}

// loadState is the model-loading screen.
type loadState struct {
	stage       string
	done, total int64
	err         error
}

// model is the bubbletea model of the chat.
type model struct {
	eng       Engine
	modelName string
	modelDir  string
	count     TokenCounter
	cfg       Config
	cfgPath   string // where /theme saves the theme ("" = not saved)
	noColor   bool
	profile   termenv.Profile
	theme     themes.Theme
	md        *markdown
	saver     *autosaver
	stateDir  string // where history.json goes ("" = nowhere)
	convDir   string // where conversations go ("" = nowhere)
	histPath  string
	// stateWarning says why the state dir given was not used (shown once).
	stateWarning string
	// input cuts pastes out of the terminal input (Run); nil in tests that
	// send pastes as KeyMsgs directly.
	input *pasteInput
	// counting holds the pastes whose tokens are being counted, by label.
	counting    map[string]countJob
	countNotice string // the progress notice last shown
	countFrame  int
	// loading is the /load argument being read ("" = none).
	loading string
	// saveErr is the last save error shown, so a save that keeps failing
	// the same way is reported once, not on every tick.
	saveErr string
	now     func() time.Time
	events  <-chan engine.Event

	width, height int
	ready         bool
	load          loadState
	fatal         error // ends Run with this error
	quitting      bool
	prog          progress.Model
	spin          spinner.Model

	info      engine.ModelInfo
	settings  engine.Settings                      // as the user set them
	confirmed engine.Settings                      // as the engine last confirmed
	pendingSt map[engine.RequestID]engine.Settings // UpdateSettings in flight -> settings to revert to

	turns   []turn
	created time.Time

	vp        viewport.Model
	ta        textarea.Model
	inputH    int
	pastes    pasteSet
	history   []historyEntry
	histIdx   int // len(history) = editing a new entry
	histDraft historyEntry
	lastDraft string
	// lastStreamed is the length of the streaming answer at the last
	// snapshot, so the periodic save also keeps what streamed since.
	lastStreamed int

	gen       *generation
	meter     meterState
	flash     bool
	flashSeq  int
	flashDrop int
	stats     *engine.Stats
	decodeTPS float64

	notice    string
	noticeErr bool
	// noticeCause is the innermost cause of an error notice ("no space
	// left on device"); when the notice is too wide it is shown first.
	noticeCause string
	noticeH     int // lines the notice area has in the layout
	completions []string
	quitArmed   bool
	quitSeq     int
	frameQueued bool
	dirty       bool
	saveQueued  bool
}

// modelConfig is what newModel needs; Run fills it from Options.
type modelConfig struct {
	eng       Engine
	modelName string
	modelDir  string
	settings  engine.Settings
	count     TokenCounter
	cfg       Config
	cfgPath   string // config file /theme writes to ("" = none)
	theme     themes.Theme
	noColor   bool
	profile   termenv.Profile
	stateDir  string // "" = nothing written
	history   []historyEntry
	now       func() time.Time
}

func newModel(c modelConfig) (*model, error) {
	if c.now == nil {
		c.now = time.Now
	}
	m := &model{
		eng:       c.eng,
		modelName: c.modelName,
		modelDir:  c.modelDir,
		count:     c.count,
		cfg:       c.cfg.withDefaults(),
		cfgPath:   c.cfgPath,
		noColor:   c.noColor,
		profile:   c.profile,
		theme:     c.theme,
		saver:     &autosaver{},
		stateDir:  c.stateDir,
		now:       c.now,
		events:    c.eng.Events(),
		settings:  c.settings,
		confirmed: c.settings,
		pendingSt: map[engine.RequestID]engine.Settings{},
		counting:  map[string]countJob{},
		history:   c.history,
		histIdx:   len(c.history),
		width:     80,
		height:    24,
		created:   c.now(),
	}
	m.meter.Max = c.settings.MaxKV
	if c.stateDir != "" {
		d := prepareStateDir(c.stateDir)
		m.stateDir, m.convDir = d.root, d.conversations
		if d.root != "" {
			m.histPath = filepath.Join(d.root, "history.json")
		}
		if *m.cfg.Autosave && d.conversations != "" {
			m.saver.start(m.convDir, m.created)
		}
		m.stateWarning = d.warning
	}
	m.ta = textarea.New()
	m.ta.ShowLineNumbers = false
	m.ta.CharLimit = 0
	m.ta.MaxHeight = 0
	m.ta.MaxWidth = 0
	m.ta.Placeholder = "Message (Enter sends, Alt+Enter newline, /help)"
	km := textarea.DefaultKeyMap
	km.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j"))
	km.LineEnd = key.NewBinding(key.WithKeys("end"))
	km.Paste = key.NewBinding(key.WithDisabled())
	m.ta.KeyMap = km
	m.ta.Focus()
	m.vp = viewport.New(m.width, 10)
	m.vp.KeyMap = viewport.KeyMap{} // keys go to the editor; PgUp/PgDn are handled here
	m.spin = spinner.New(spinner.WithSpinner(spinner.Dot))
	if err := m.applyTheme(c.theme); err != nil {
		return nil, err
	}
	m.layout()
	if m.stateWarning != "" {
		m.setError(errors.New(m.stateWarning))
	}
	return m, nil
}

// applyTheme switches styles and the markdown renderer.
func (m *model) applyTheme(t themes.Theme) error {
	md, err := newMarkdown(t.Glamour, m.mdWidth(), m.profile)
	if err != nil {
		return err
	}
	m.theme = t
	m.md = md
	fs, bs := textarea.DefaultStyles()
	for _, s := range []*textarea.Style{&fs, &bs} {
		s.CursorLine = lipgloss.NewStyle()
		s.Placeholder = t.Dim
		s.Prompt = t.Prompt
		s.Text = lipgloss.NewStyle()
		s.EndOfBuffer = t.Dim
	}
	m.ta.FocusedStyle, m.ta.BlurredStyle = fs, bs
	m.ta.Prompt = "› "
	opts := []progress.Option{progress.WithWidth(40)}
	if t.Progress != "" {
		opts = append(opts, progress.WithSolidFill(t.Progress))
	} else {
		opts = append(opts, progress.WithFillCharacters('█', '░'), progress.WithColorProfile(termenv.Ascii))
	}
	m.prog = progress.New(opts...)
	m.spin.Style = t.Accent
	m.invalidate()
	return nil
}

func (m *model) mdWidth() int {
	w := m.width - 2
	if w > 120 {
		w = 120
	}
	return w
}

// invalidate drops every cached rendering.
func (m *model) invalidate() {
	for i := range m.turns {
		m.turns[i].outOK = false
		if m.turns[i].stream != nil {
			m.turns[i].stream.reset()
		}
	}
	m.dirty = true
}

// Init starts reading engine events (and the spinner while loading).
func (m *model) Init() tea.Cmd {
	return tea.Batch(waitEvents(m.events), m.spin.Tick, textarea.Blink, m.scheduleDraftSave())
}

func (m *model) scheduleDraftSave() tea.Cmd {
	if m.saveQueued {
		return nil
	}
	m.saveQueued = true
	return tea.Tick(draftSaveEvery, func(time.Time) tea.Msg { return draftSaveMsg{} })
}

// Update handles one message.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		if m.md != nil && m.md.width != m.mdWidth() {
			if md, err := newMarkdown(m.theme.Glamour, m.mdWidth(), m.profile); err == nil {
				m.md = md
			}
			m.invalidate()
		}
		m.layout()
		m.refresh()
	case eventsMsg:
		for _, ev := range msg.events {
			cmds = append(cmds, m.handleEvent(ev))
		}
		if msg.closed {
			if m.fatal == nil && !m.quitting {
				m.fatal = fmt.Errorf("the engine stopped unexpectedly")
			}
			m.finish()
			return m, tea.Quit
		}
		if m.fatal != nil {
			m.finish()
			return m, tea.Quit
		}
		cmds = append(cmds, waitEvents(m.events))
	case frameMsg:
		m.frameQueued = false
		if m.dirty {
			m.refresh()
		}
	case flashOffMsg:
		if msg.seq == m.flashSeq {
			m.flash = false
			m.flashDrop = 0
		}
	case quitDisarm:
		if msg.seq == m.quitSeq && m.quitArmed {
			m.quitArmed = false
			if m.notice == quitHint {
				m.notice = ""
			}
		}
	case draftSaveMsg:
		m.saveQueued = false
		m.saveDraft(false)
		m.saveFailed(m.saver.flush())
		cmds = append(cmds, m.scheduleDraftSave())
	case spinner.TickMsg:
		if !m.ready {
			var c tea.Cmd
			m.spin, c = m.spin.Update(msg)
			cmds = append(cmds, c)
		}
	case tea.MouseMsg:
		var c tea.Cmd
		m.vp, c = m.vp.Update(msg)
		cmds = append(cmds, c)
	case signalMsg:
		m.quit()
	case loadedMsg:
		m.applyLoad(msg)
	case pasteCountedMsg:
		m.pasteCounted(msg)
	case countTickMsg:
		if len(m.counting) > 0 {
			if m.notice == m.countNotice {
				m.showCounting()
			}
			cmds = append(cmds, countTick())
		}
	case tea.KeyMsg:
		cmds = append(cmds, m.handleKey(msg))
	default:
		var c tea.Cmd
		m.ta, c = m.ta.Update(msg)
		cmds = append(cmds, c)
	}
	if m.quitting {
		return m, tea.Quit
	}
	m.fitNotice()
	cmds = append(cmds, m.scheduleFrame())
	return m, tea.Batch(cmds...)
}

func (m *model) scheduleFrame() tea.Cmd {
	if !m.dirty || m.frameQueued {
		return nil
	}
	m.frameQueued = true
	return tea.Tick(frameInterval, func(time.Time) tea.Msg { return frameMsg{} })
}

// handleEvent applies one engine event.
func (m *model) handleEvent(ev engine.Event) tea.Cmd {
	switch e := ev.(type) {
	case engine.ModelLoading:
		m.load.stage, m.load.done, m.load.total = e.Stage, e.Done, e.Total
	case engine.Ready:
		m.ready = true
		m.info = e.Info
		if e.Info.SlidingWindow > 0 && m.meter.Window == 0 {
			m.meter.Window = e.Info.SlidingWindow
		}
		m.layout()
		m.refresh()
	case engine.PrefillProgress:
		if m.gen != nil && e.ID == m.gen.id {
			m.gen.prefill = e
		}
	case engine.Token:
		if m.gen == nil || e.ID != m.gen.id {
			return nil
		}
		g := m.gen
		if !g.inDecode {
			g.inDecode = true
			g.first = e.At
		}
		g.last = e.At
		g.tokens = e.Tokens
		if dt := g.last.Sub(g.first).Seconds(); dt > 0 && g.tokens > 1 {
			m.decodeTPS = float64(g.tokens-1) / dt
		}
		st := m.turns[g.turn].stream
		st.text += e.Text
		m.dirty = true
	case engine.Trim:
		m.flash = true
		m.flashSeq++
		m.flashDrop += e.Dropped
		seq := m.flashSeq
		return tea.Tick(flashDuration, func(time.Time) tea.Msg { return flashOffMsg{seq: seq} })
	case engine.CacheState:
		m.meter = meterState{Live: e.Live, Max: e.Max, Seen: e.Seen, Trimmed: e.Trimmed, Window: e.Window}
	case engine.Stats:
		s := e
		m.stats = &s
		if s.DecodeTokPerSec > 0 {
			m.decodeTPS = s.DecodeTokPerSec
		}
	case engine.Done:
		if m.gen != nil && e.ID == m.gen.id {
			m.endGeneration(e.Text, e.Reason, nil)
		}
	case engine.Error:
		return m.handleError(e)
	case engine.SettingsChanged:
		delete(m.pendingSt, e.ID)
		m.confirmed = e.Settings
	case engine.Cleared:
		m.meter.Live, m.meter.Seen, m.meter.Trimmed = 0, 0, 0
	}
	return nil
}

func (m *model) handleError(e engine.Error) tea.Cmd {
	switch {
	case !m.ready && e.ID == 0:
		m.load.err = e.Err
		m.fatal = e.Err
	case m.gen != nil && e.ID == m.gen.id:
		m.endGeneration(e.Text, "", e.Err)
		if e.CacheReset {
			m.meter.Live, m.meter.Seen, m.meter.Trimmed = 0, 0, 0
		}
	default:
		if prev, ok := m.pendingSt[e.ID]; ok {
			delete(m.pendingSt, e.ID)
			m.settings = prev
			m.meter.Max = prev.MaxKV
			m.setError(fmt.Errorf("settings not changed: %w", e.Err))
			return nil
		}
		m.setError(e.Err)
	}
	return nil
}

// endGeneration closes the streaming answer. An answer that never produced
// text is removed together with its question, which goes back into the
// editor, so nothing is lost and the chat keeps alternating roles.
func (m *model) endGeneration(text string, reason engine.DoneReason, err error) {
	g := m.gen
	m.gen = nil
	t := &m.turns[g.turn]
	if text == "" && t.stream != nil {
		text = t.stream.text
	}
	if text == "" && (err != nil || reason == engine.DoneCancelled) {
		// Drop the empty answer and put the question back.
		// Text typed meanwhile stays, below the question: nothing is lost.
		q := m.turns[g.turn-1]
		m.turns = m.turns[:g.turn-1]
		back, blocks := q.content, []pasteBlock(nil)
		if len(q.pastes) > 0 {
			back, blocks = q.display, append(blocks, q.pastes...)
		}
		where := "in the editor"
		if draft := m.ta.Value(); draft != "" {
			back += "\n" + draft
			blocks = append(blocks, m.pastes.blocks...)
			where = "in the editor, above what you typed meanwhile"
		}
		m.ta.SetValue(back)
		m.pastes.blocks = blocks
		m.afterEdit()
		if err != nil {
			m.setError(fmt.Errorf("answer failed (your message is back %s): %w", where, err))
		} else {
			m.setNotice("stopped before the answer began; your message is back " + where)
		}
		m.dirty = true
		m.autosave()
		m.refresh()
		return
	}
	t.content = text
	t.stream = nil
	t.outOK = false
	switch {
	case err != nil:
		t.partial = true
		t.note = "failed"
		m.setError(fmt.Errorf("answer failed: %w", err))
	case reason == engine.DoneCancelled && m.quitting:
		t.partial = true
		t.note = noteInterrupted // the chat is ending, the user did not stop it
	case reason == engine.DoneCancelled:
		t.partial = true
		t.note = "stopped"
		m.setNotice("stopped; the partial answer is kept")
	case reason == engine.DoneMaxTokens:
		t.partial = true
		t.note = "max tokens"
		m.setNotice(fmt.Sprintf("answer cut at /max %d tokens", m.settings.MaxTokens))
	case reason == engine.DoneLoop:
		t.partial = true
		t.note = "repeating"
		m.setNotice("stopped: the answer started repeating itself")
	}
	m.autosave()
	m.refresh()
}

const quitHint = "press Ctrl+C again to quit"

// noteInterrupted marks an answer saved while it was still streaming (the
// chat quit, got a signal, or was killed before the answer ended).
const noteInterrupted = "interrupted"

// handleKey handles a key press.
func (m *model) handleKey(k tea.KeyMsg) tea.Cmd {
	if k.Type == tea.KeyCtrlC {
		if m.quitArmed {
			m.quit()
			return nil
		}
		if m.gen != nil {
			m.cancel()
		}
		m.quitArmed = true
		m.quitSeq++
		seq := m.quitSeq
		m.notice, m.noticeErr = quitHint, false
		return tea.Tick(quitArmWindow, func(time.Time) tea.Msg { return quitDisarm{seq: seq} })
	}
	m.quitArmed = false
	if k.Paste {
		s := string(k.Runes)
		if t, ok := m.input.take(s); ok {
			if t.cut > 0 {
				defer m.setError(fmt.Errorf("paste cut: only the first %s of %s were kept", formatBytes(maxPasteBytes), formatBytes(maxPasteBytes+t.cut)))
			}
			s = t.text
		}
		return m.handlePaste(s)
	}
	switch k.String() {
	case "enter":
		m.completions = nil
		return m.submit()
	case "esc":
		m.completions = nil
		if m.gen != nil {
			m.cancel()
		} else {
			m.notice = ""
		}
		return nil
	case "pgup":
		m.vp.PageUp()
		return nil
	case "pgdown":
		m.vp.PageDown()
		return nil
	case "ctrl+e":
		m.expandPastes()
		return nil
	case "tab":
		v := m.ta.Value()
		if IsCommand(v) {
			nv, cands := Complete(v, themes.Names())
			if nv != v {
				m.ta.SetValue(nv)
			}
			m.completions = cands
			return nil
		}
	case "up":
		if m.ta.Line() == 0 && m.historyMove(-1) {
			return nil
		}
	case "down":
		if m.ta.Line() == m.ta.LineCount()-1 && m.historyMove(+1) {
			return nil
		}
	}
	var c tea.Cmd
	m.ta, c = m.ta.Update(k)
	m.afterEdit()
	return c
}

// afterEdit resizes the editor to its content and notes the draft.
func (m *model) afterEdit() {
	if m.inputHeight() != m.inputH {
		m.layout()
	}
	m.completions = nil
}

// inputHeight is the editor's height for its content: its line count,
// at least 1 and at most maxInput.
func (m *model) inputHeight() int {
	return min(max(m.ta.LineCount(), 1), m.maxInput())
}

func (m *model) maxInput() int {
	n := maxInputLines
	if lim := m.height / 3; lim < n {
		n = lim
	}
	if n < 1 {
		n = 1
	}
	return n
}

// handlePaste inserts a bracketed paste: short ones as text, long ones as one
// collapsed block whose exact text is kept aside.
func (m *model) handlePaste(s string) tea.Cmd {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	if isLongPaste(s, m.cfg.PasteMinChars, m.cfg.PasteMinLines) || !editorSafe(s) {
		if m.count == nil || len(s) < asyncCountBytes {
			label := m.pastes.add(s, m.count)
			m.ta.InsertString(label)
			m.afterEdit()
			m.saveDraft(true)
			return nil
		}
		label, seq := m.pastes.addCounting(s)
		m.ta.InsertString(label)
		m.afterEdit()
		m.saveDraft(true)
		first := len(m.counting) == 0
		m.counting[label] = countJob{bytes: len(s), start: m.now()}
		m.showCounting()
		count := m.count
		cmds := []tea.Cmd{func() tea.Msg {
			n, est := countTokens(count, s)
			return pasteCountedMsg{label: label, final: pasteLabel(n, est, len(s), seq)}
		}}
		if first {
			cmds = append(cmds, countTick())
		}
		return tea.Batch(cmds...)
	}
	m.ta.InsertString(s)
	m.afterEdit()
	m.saveDraft(true)
	return nil
}

// countJob is a paste whose tokens are being counted.
type countJob struct {
	bytes int
	start time.Time
}

// Messages of the token count of a large paste.
type (
	pasteCountedMsg struct{ label, final string }
	countTickMsg    struct{}
)

const countTickEvery = 100 * time.Millisecond

func countTick() tea.Cmd {
	return tea.Tick(countTickEvery, func(time.Time) tea.Msg { return countTickMsg{} })
}

// showCounting puts the count's progress on the notice line: the size
// being tokenized and the time so far.
func (m *model) showCounting() {
	total, since := 0, m.now()
	for _, j := range m.counting {
		total += j.bytes
		if j.start.Before(since) {
			since = j.start
		}
	}
	frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
	el := m.now().Sub(since)
	m.countFrame++
	m.setNotice(fmt.Sprintf("%s counting the tokens of the %s paste… %.1f s (Enter sends it meanwhile)",
		frames[m.countFrame%len(frames)], formatBytes(int64(total)), el.Seconds()))
	m.countNotice = m.notice
}

// pasteCounted swaps a counted paste's provisional label for the final one
// wherever it is: the editor, the sent message, the history.
func (m *model) pasteCounted(msg pasteCountedMsg) {
	delete(m.counting, msg.label)
	m.relabel(msg.label, msg.final)
	if len(m.counting) == 0 && m.notice == m.countNotice {
		m.setNotice(fmt.Sprintf("paste counted: %s", strings.Trim(msg.final, "[]")))
	}
	m.saveDraft(false)
}

// relabel renames a paste block in the editor (keeping the cursor), in
// sent turns and in the history.
func (m *model) relabel(old, label string) {
	if m.pastes.relabel(old, label) {
		m.replaceInEditor(old, label)
	}
	for i := range m.turns {
		t := &m.turns[i]
		if t.kind == turnUser && strings.Contains(t.display, old) {
			t.display = strings.Replace(t.display, old, label, 1)
			t.pastes = relabelBlocks(t.pastes, old, label)
			t.outOK = false
			m.dirty = true
		}
	}
	for i := range m.history {
		if e := &m.history[i]; strings.Contains(e.Text, old) {
			e.Text = strings.Replace(e.Text, old, label, 1)
			e.Pastes = relabelBlocks(e.Pastes, old, label)
		}
	}
}

// relabelBlocks returns a copy of blocks with old renamed (the slices of
// a turn and its history entry may share an array).
func relabelBlocks(blocks []pasteBlock, old, label string) []pasteBlock {
	out := append([]pasteBlock(nil), blocks...)
	for i := range out {
		if out[i].Label == old {
			out[i].Label = label
		}
	}
	return out
}

// replaceInEditor replaces the first old in the editor by s and puts the
// cursor back where it was (shifted when the change is before it).
func (m *model) replaceInEditor(old, s string) {
	v := m.ta.Value()
	i := strings.Index(v, old)
	if i < 0 {
		return
	}
	row := m.ta.Line()
	li := m.ta.LineInfo()
	col := li.StartColumn + li.ColumnOffset
	labelRow := strings.Count(v[:i], "\n")
	if labelRow == row {
		lineStart := strings.LastIndex(v[:i], "\n") + 1
		if at := utf8.RuneCountInString(v[lineStart:i]); at < col {
			col += utf8.RuneCountInString(s) - utf8.RuneCountInString(old)
		}
	}
	m.ta.SetValue(v[:i] + s + v[i+len(old):])
	for n := 0; m.ta.Line() > row && n < 1<<16; n++ {
		m.ta.CursorUp()
	}
	m.ta.SetCursor(col)
}

// editorSafe reports whether the editor keeps s exactly: it turns tabs
// into spaces and drops other control characters and U+FFFD, so a paste
// holding any of those is collapsed (kept aside whole) however short.
func editorSafe(s string) bool {
	for _, r := range s {
		if r == '\t' || r == utf8.RuneError || (r != '\n' && unicode.IsControl(r)) {
			return false
		}
	}
	return true
}

// expandPastes replaces the collapsed blocks in the editor by their text.
func (m *model) expandPastes() {
	v := m.ta.Value()
	if len(m.pastes.present(v)) == 0 {
		m.setNotice("no collapsed paste to expand")
		return
	}
	m.ta.SetValue(m.pastes.expand(v))
	m.pastes.reset()
	m.afterEdit()
}

// historyMove recalls the previous (-1) or next (+1) input.
func (m *model) historyMove(d int) bool {
	n := m.histIdx + d
	if n < 0 || n > len(m.history) || len(m.history) == 0 {
		return false
	}
	if m.histIdx == len(m.history) {
		v := m.ta.Value()
		m.histDraft = historyEntry{Text: v, Pastes: m.pastes.present(v)}
	}
	m.histIdx = n
	e := m.histDraft
	if n < len(m.history) {
		e = m.history[n]
	}
	m.ta.SetValue(e.Text)
	m.pastes.blocks = append([]pasteBlock(nil), e.Pastes...)
	m.afterEdit()
	return true
}

// submit sends the editor's content: a command or a message.
func (m *model) submit() tea.Cmd {
	text := m.ta.Value()
	present := m.pastes.present(text)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if IsCommand(text) && len(present) == 0 {
		c, err := ParseCommand(text)
		if err != nil {
			m.setError(err)
			return nil
		}
		m.pushHistory(historyEntry{Text: strings.TrimSpace(text)})
		m.ta.Reset()
		cmd, err := m.runCommand(c)
		if err != nil {
			m.ta.SetValue(text) // the command stays in the editor to be fixed
			m.setError(err)
		}
		m.afterEdit()
		return cmd
	}
	if !m.ready {
		m.setError(fmt.Errorf("the model is still loading; your message stays here until it is ready"))
		return nil
	}
	if m.gen != nil {
		m.setError(fmt.Errorf("still answering: press Esc to stop it, then send"))
		return nil
	}
	full := m.pastes.expand(text)
	if t := strings.TrimSpace(full); strings.HasPrefix(t, "//") {
		full = strings.Replace(full, "//", "/", 1)
		text = strings.Replace(text, "//", "/", 1)
	}
	m.pushHistory(historyEntry{Text: text, Pastes: present})
	m.ta.Reset()
	m.pastes.reset()
	m.afterEdit()
	m.notice = ""
	m.turns = append(m.turns, turn{kind: turnUser, content: full, display: text, pastes: present})
	m.autosave()
	id := m.eng.Submit(engine.Generate{Conversation: m.conversation()})
	m.turns = append(m.turns, turn{kind: turnAssistant, stream: &stream{}})
	m.gen = &generation{id: id, turn: len(m.turns) - 1}
	m.refresh()
	m.vp.GotoBottom()
	return nil
}

// conversation is the chat so far as engine messages (user and assistant
// turns only; the system prompt travels in Settings.System).
func (m *model) conversation() []engine.Message {
	var msgs []engine.Message
	for _, t := range m.turns {
		switch t.kind {
		case turnUser:
			msgs = append(msgs, engine.Message{Role: engine.RoleUser, Content: t.content})
		case turnAssistant:
			if t.stream == nil {
				msgs = append(msgs, engine.Message{Role: engine.RoleAssistant, Content: t.content})
			}
		}
	}
	return msgs
}

func (m *model) pushHistory(e historyEntry) {
	if n := len(m.history); n == 0 || m.history[n-1].Text != e.Text {
		m.history = append(m.history, e)
		if lim := m.cfg.HistoryLimit; lim > 0 && len(m.history) > lim {
			m.history = m.history[len(m.history)-lim:]
		}
	}
	m.histIdx = len(m.history)
	m.histDraft = historyEntry{}
	if m.histPath != "" {
		if err := saveHistory(m.histPath, historyForDisk(m.history), m.cfg.HistoryLimit); err != nil {
			m.setError(err)
		}
	}
}

// historyForDisk leaves out entries whose pastes are very large, so the
// history file stays small; they remain in memory for this session.
func historyForDisk(h []historyEntry) []historyEntry {
	const maxPasteBytes = 256 << 10
	out := make([]historyEntry, 0, len(h))
	for _, e := range h {
		n := 0
		for _, p := range e.Pastes {
			n += len(p.Content)
		}
		if n <= maxPasteBytes {
			out = append(out, e)
		}
	}
	return out
}

// cancel asks the engine to stop the running answer.
func (m *model) cancel() {
	if m.gen == nil || m.gen.stopping {
		return
	}
	m.gen.stopping = true
	m.eng.Submit(engine.Cancel{ID: m.gen.id})
	m.setNotice("stopping…")
}

// quit ends the program after stopping the engine's work and saving.
func (m *model) quit() {
	if m.gen != nil {
		m.eng.Submit(engine.Cancel{ID: m.gen.id})
	}
	m.finish()
	m.quitting = true
}

// finish saves the conversation as it is now: the draft, and an answer
// still streaming as a partial answer marked "interrupted".
func (m *model) finish() {
	m.record(false)
	_ = m.saver.flush() // Run flushes again and reports errors
}

// snapshot is the conversation as it would be saved now.
func (m *model) snapshot() conversationFile {
	c := conversationFile{
		Model:   m.displayModel(),
		Created: m.created,
		Updated: m.now(),
		System:  m.settings.System,
	}
	for _, t := range m.turns {
		switch t.kind {
		case turnUser:
			sm := savedMessage{Role: engine.RoleUser, Content: t.content}
			if t.display != t.content {
				sm.Display = t.display
			}
			c.Messages = append(c.Messages, sm)
		case turnAssistant:
			sm := savedMessage{Role: engine.RoleAssistant, Content: t.content, Partial: t.partial, Note: savedNote(t.note)}
			if t.stream != nil {
				if t.stream.text == "" {
					continue // nothing streamed yet: the question stays unanswered
				}
				sm.Content, sm.Partial, sm.Note = t.stream.text, true, noteInterrupted
			}
			c.Messages = append(c.Messages, sm)
		}
	}
	c.Draft = m.ta.Value()
	c.DraftPastes = m.pastes.present(c.Draft)
	return c
}

// loadedNote is the label note of a loaded answer: "partial", with the
// reason it ended when the file gives one ("partial · interrupted").
func loadedNote(sm savedMessage) string {
	if !sm.Partial {
		return ""
	}
	if n := savedNote(sm.Note); n != "" {
		return "partial · " + n
	}
	return "partial"
}

// savedNote is the reason a partial answer ended, without the "partial"
// that loadedNote adds for display.
func savedNote(note string) string {
	note = strings.TrimPrefix(note, "partial")
	return strings.TrimPrefix(note, " · ")
}

// autosave writes the conversation now.
func (m *model) autosave() {
	m.record(true)
}

// record hands the saver a fresh snapshot; write forces a write now.
func (m *model) record(write bool) {
	m.lastDraft = m.ta.Value()
	m.lastStreamed = m.streamedLen()
	m.saveFailed(m.saver.set(m.snapshot(), write))
}

// saveFailed shows an autosave error, once for as long as it repeats.
func (m *model) saveFailed(err error) {
	if err == nil {
		m.saveErr = ""
		return
	}
	if err.Error() == m.saveErr {
		return
	}
	m.saveErr = err.Error()
	m.setError(fmt.Errorf("autosave: %w", err))
}

// saveDraft records the conversation when the draft or the streaming
// answer changed since the last snapshot; write forces a write now (after a
// paste).
func (m *model) saveDraft(write bool) {
	if !write && m.ta.Value() == m.lastDraft && m.streamedLen() == m.lastStreamed {
		return
	}
	m.record(write)
}

// streamedLen is the length of the answer streaming now (0 if none).
func (m *model) streamedLen() int {
	if m.gen == nil || m.turns[m.gen.turn].stream == nil {
		return 0
	}
	return len(m.turns[m.gen.turn].stream.text)
}

func (m *model) setNotice(s string) {
	m.notice, m.noticeErr = sanitize(s), false
}

func (m *model) setError(err error) {
	m.notice, m.noticeErr = oneLine(err.Error()), true
	m.noticeCause = ""
	var errno syscall.Errno
	if c := causeOf(err); c != err && errors.As(c, &errno) {
		if cause := oneLine(c.Error()); cause != "" && strings.HasSuffix(m.notice, cause) {
			m.noticeCause = cause
		}
	}
}

// oneLine makes text safe for the one-line notice area.
func oneLine(s string) string { return sanitize(strings.ReplaceAll(s, "\n", " ")) }

func (m *model) displayModel() string {
	if m.info.Name != "" {
		return m.info.Name
	}
	return m.modelName
}
