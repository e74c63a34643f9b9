package ui

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/progress"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"mlxchat/engine"
	"mlxchat/themes"
)

// Timing of the screen.
const (
	frameInterval  = time.Second / 30 // streaming re-render rate
	quitArmWindow  = 2 * time.Second
	draftSaveEvery = 3 * time.Second
	maxEventBatch  = 512 // events handled per Update
)

// phase is where the chat is; exactly one at a time. It decides what
// keys do, what the status line shows and which events matter.
type phase int

const (
	// phaseLoading: the engine loads the model; the editor takes input,
	// a message waits there until Ready.
	phaseLoading phase = iota
	// phaseIdle: ready, nothing running.
	phaseIdle
	// phasePrefill: a Generate prefills its prompt.
	phasePrefill
	// phaseDecode: its answer streams.
	phaseDecode
	// phaseSummarize: a Summarize runs (its pieces, then the answer).
	phaseSummarize
	// phaseStopping: Cancel was sent; the request's end is awaited.
	phaseStopping
	// phaseQuit: the chat ends (a quit, a signal, the engine gone or a
	// load error in fatal); the screen is cleared and Run returns.
	phaseQuit
)

// busy reports whether a request is running.
func (p phase) busy() bool {
	return p == phasePrefill || p == phaseDecode || p == phaseSummarize || p == phaseStopping
}

// Messages the model sends itself.
type (
	// eventsMsg is a batch of engine events; closed means the channel closed.
	eventsMsg struct {
		events []engine.Event
		closed bool
	}
	frameMsg     struct{}
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

// session is what stays fixed for the whole chat.
type session struct {
	eng       Engine
	events    <-chan engine.Event
	modelName string
	modelDir  string
	count     TokenCounter
	cfg       Config
	cfgPath   string // where /theme saves the theme ("" = not saved)
	noColor   bool
	profile   termenv.Profile
	now       func() time.Time
	// input cuts pastes out of the terminal input (Run); nil in tests that
	// send pastes as KeyMsgs directly.
	input *pasteInput
}

// loadView is the model-loading screen shown until Ready.
type loadView struct {
	stage       string
	done, total int64
	err         error
	prog        progress.Model
	spin        spinner.Model
}

// settingsState is the generation settings as the user set them, as the
// engine last confirmed them, and the changes in flight (request id ->
// the settings to go back to if the engine refuses).
type settingsState struct {
	cur, confirmed engine.Settings
	pending        map[engine.RequestID]engine.Settings
}

// request is the Generate or Summarize in flight.
type request struct {
	id   engine.RequestID
	turn int // index of the assistant turn
	// turnOf maps the request's conversation indexes to turns (Layout).
	turnOf []int
	first  time.Time // time of the first token event
	tokens int
	// summarize is set for a Summarize.
	summarize bool
}

// quitArm is the first Ctrl+C of two.
type quitArm struct {
	armed bool
	seq   int
}

// model is the bubbletea model of the chat: the phase, a few components
// (transcript, editor, status, palette) and the state of the work in
// flight.
type model struct {
	sess  session
	files files
	phase phase
	fatal error // ends Run with this error
	info  engine.ModelInfo
	set   settingsState
	load  loadView
	theme themes.Theme

	tr  transcript
	ed  editor
	st  status
	pal palette

	req *request
	// fit is the fit check in flight; held the message it stopped.
	fit  fitCheck
	held *heldMessage
	// awaitDoc is a bare /summarize waiting for its document: the next
	// paste or /read file.
	awaitDoc *awaitSummarize
	// queued is what was sent while an answer ran or the model loaded, in
	// order (queue.go).
	queued  []queuedMessage
	jobs    jobs
	quitArm quitArm
	// frameQueued and saveQueued say a frame tick and a draft-save tick
	// are pending.
	frameQueued, saveQueued bool
	width, height           int
	// noticeH is the lines the notice area has in the layout.
	noticeH int
	created time.Time
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
	noHistory bool // keep the input history in memory only (openHistory)
	now       func() time.Time
}

func newModel(c modelConfig) (*model, error) {
	if c.now == nil {
		c.now = time.Now
	}
	m := &model{
		sess: session{
			eng: c.eng, events: c.eng.Events(), modelName: c.modelName, modelDir: c.modelDir,
			count: c.count, cfg: c.cfg.withDefaults(), cfgPath: c.cfgPath, noColor: c.noColor,
			profile: c.profile, now: c.now,
		},
		files:   files{saver: &autosaver{}},
		set:     settingsState{cur: c.settings, confirmed: c.settings, pending: map[engine.RequestID]engine.Settings{}},
		ed:      newEditor(c.history),
		jobs:    newJobs(),
		width:   80,
		height:  24,
		created: c.now(),
	}
	m.st.meter.Max = c.settings.MaxKV
	if c.stateDir != "" {
		d := prepareStateDir(c.stateDir)
		m.files.stateDir, m.files.convDir = d.root, d.conversations
		if d.root != "" && !c.noHistory {
			m.files.histPath = filepath.Join(d.root, "history.json")
		}
		if *m.sess.cfg.Autosave && d.conversations != "" {
			m.files.saver.start(m.files.convDir, m.created)
		}
		m.files.stateWarning = d.warning
	}
	tr, err := newTranscript(c.theme, c.profile, m.width)
	if err != nil {
		return nil, err
	}
	m.tr = tr
	m.load.spin = spinner.New(spinner.WithSpinner(spinner.Dot))
	if err := m.applyTheme(c.theme); err != nil {
		return nil, err
	}
	m.tr.label = m.shortModel()
	m.layout()
	if m.files.stateWarning != "" {
		m.st.setError(errors.New(m.files.stateWarning))
	}
	return m, nil
}

// applyTheme switches the styles of every component.
func (m *model) applyTheme(t themes.Theme) error {
	if err := m.tr.setTheme(t); err != nil {
		return err
	}
	m.theme = t
	m.st.theme = t
	m.ed.setTheme(t)
	opts := []progress.Option{progress.WithWidth(40)}
	if t.Progress != "" {
		opts = append(opts, progress.WithSolidFill(t.Progress))
	} else {
		opts = append(opts, progress.WithFillCharacters('█', '░'), progress.WithColorProfile(termenv.Ascii))
	}
	m.load.prog = progress.New(opts...)
	m.load.spin.Style = t.Accent
	return nil
}

// Init starts reading engine events (and the spinner while loading).
func (m *model) Init() tea.Cmd {
	return tea.Batch(waitEvents(m.sess.events), m.load.spin.Tick, textarea.Blink, m.scheduleDraftSave())
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
		m.layout()
		m.tr.refresh()
	case eventsMsg:
		for _, ev := range msg.events {
			cmds = append(cmds, m.handleEvent(ev))
		}
		if msg.closed {
			if m.fatal == nil && m.phase != phaseQuit {
				m.fatal = fmt.Errorf("the engine stopped unexpectedly")
			}
			m.finish()
			m.phase = phaseQuit
			return m, tea.Quit
		}
		if m.fatal != nil {
			m.finish()
			m.phase = phaseQuit
			return m, tea.Quit
		}
		cmds = append(cmds, waitEvents(m.sess.events))
	case frameMsg:
		m.frameQueued = false
		if m.tr.dirty {
			m.tr.refresh()
		}
	case flashOffMsg:
		m.st.flashOff(msg)
	case quitDisarm:
		if msg.seq == m.quitArm.seq && m.quitArm.armed {
			m.quitArm.armed = false
			if m.st.notice.text == quitHint {
				m.st.clearNotice()
			}
			m.st.notice.hint = strings.Replace(m.st.notice.hint, " · "+quitHint, "", 1)
		}
	case draftSaveMsg:
		m.saveQueued = false
		m.saveDraft(false)
		m.saveFailed(m.files.saver.flush())
		cmds = append(cmds, m.scheduleDraftSave())
	case spinner.TickMsg:
		if m.phase == phaseLoading {
			var c tea.Cmd
			m.load.spin, c = m.load.spin.Update(msg)
			cmds = append(cmds, c)
		}
	case tea.MouseMsg:
		cmds = append(cmds, m.tr.scroll(msg))
	case signalMsg:
		m.quit()
	case loadedMsg:
		m.applyLoad(msg)
	case attachedMsg:
		cmds = append(cmds, m.attached(msg))
	case pasteCountedMsg:
		m.pasteCounted(msg)
	case countTickMsg:
		cmds = append(cmds, m.countTick())
	case tea.KeyMsg:
		cmds = append(cmds, m.handleKey(msg))
	default:
		cmds = append(cmds, m.ed.update(msg))
	}
	if m.phase == phaseQuit {
		return m, tea.Quit
	}
	m.refreshPlaceholder()
	m.fitNotice()
	cmds = append(cmds, m.scheduleFrame())
	return m, tea.Batch(cmds...)
}

func (m *model) scheduleFrame() tea.Cmd {
	if !m.tr.dirty || m.frameQueued {
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
		if m.phase == phaseLoading {
			m.phase = phaseIdle
		}
		m.info = e.Info
		m.dropCapAboveContext()
		m.st.meter.Max = m.liveCap(m.set.cur)
		m.tr.addNotes(e.Info.Notes)
		m.tr.label = m.shortModel()
		m.tr.welcome = m.welcome()
		if e.Info.SlidingWindow > 0 && m.st.meter.Window == 0 {
			m.st.meter.Window = e.Info.SlidingWindow
		}
		m.tr.invalidate()
		m.layout()
		m.tr.refresh()
		return m.sendQueued()
	case engine.PrefillProgress:
		if m.ours(e) {
			p := e
			m.st.prefill = &p
		}
	case engine.Token:
		if !m.ours(e) {
			return nil
		}
		m.streamed(e)
	case engine.SummarizeProgress:
		if m.ours(e) {
			p := e
			m.st.summarize = &p
		}
	case engine.PieceSummary:
		if m.ours(e) && e.Piece.Phase == engine.PhaseMap {
			m.tr.turns[m.req.turn].pieces = append(m.tr.turns[m.req.turn].pieces, e.Piece)
			m.tr.dirty = true
		}
	case engine.Layout:
		if r := m.req; r != nil && e.ID == r.id && !r.summarize {
			m.tr.applyLayout(e, r.turnOf, r.turn)
		}
	case engine.Trim:
		return m.st.trimmed()
	case engine.CacheState:
		m.st.setCache(e)
	case engine.Stats:
		s := e
		m.st.stats = &s
		if s.DecodeTokPerSec > 0 {
			m.st.decodeTPS = s.DecodeTokPerSec
		}
	case engine.Done:
		switch {
		case !m.ours(e):
		case m.req.summarize:
			return m.requestEnded(e.Reason != engine.DoneCancelled, func() { m.summarized(e) })
		default:
			return m.requestEnded(e.Reason != engine.DoneCancelled, func() { m.endRequest(e.Text, e.Reason, nil) })
		}
	case engine.Fit:
		m.fitted(e)
	case engine.Error:
		return m.handleError(e)
	case engine.SettingsChanged:
		delete(m.set.pending, e.ID)
		m.set.confirmed = e.Settings
	case engine.Cleared:
		m.st.emptied()
		m.tr.clearSpans()
	}
	return nil
}

// ours reports whether an event belongs to the request in flight.
func (m *model) ours(ev engine.Event) bool { return m.req != nil && ev.Request() == m.req.id }

func (m *model) handleError(e engine.Error) tea.Cmd {
	switch {
	case m.phase == phaseLoading && e.ID == 0:
		m.load.err = e.Err
		m.fatal = e.Err
	case m.fit.id != 0 && e.ID == m.fit.id:
		m.fitFailed()
	case m.ours(e):
		return m.requestEnded(false, func() {
			if m.req.summarize {
				m.tr.clearSpans()
			}
			m.endRequest(e.Text, "", e.Err)
			if e.CacheReset {
				m.st.emptied()
				m.tr.clearSpans()
			}
		})
	default:
		if prev, ok := m.set.pending[e.ID]; ok {
			delete(m.set.pending, e.ID)
			m.set.cur = prev
			m.st.meter.Max = m.liveCap(prev)
			m.st.setError(fmt.Errorf("settings not changed: %w", e.Err))
			return nil
		}
		m.st.setError(e.Err)
	}
	return nil
}

const quitHint = "press Ctrl+C again to quit"

// keepQuitHint puts the quit hint back after a notice that replaced it
// while a first Ctrl+C is armed: that press also stops the answer, whose
// end comes at once and has its own notice ("stopped; the partial answer
// is kept"), which hid that a second press quits.
func (m *model) keepQuitHint() {
	if m.quitArm.armed && m.phase != phaseQuit && !strings.Contains(m.st.notice.text+m.st.notice.hint, quitHint) {
		m.st.notice.hint += " · " + quitHint
	}
}

// noteInterrupted marks an answer saved while it was still streaming (the
// chat quit, got a signal, or was killed before the answer ended).
const noteInterrupted = "interrupted"

// handleKey handles a key press.
func (m *model) handleKey(k tea.KeyMsg) tea.Cmd {
	if k.Type == tea.KeyCtrlC {
		if m.quitArm.armed {
			m.quit()
			return nil
		}
		if m.phase.busy() {
			m.cancel()
		}
		m.quitArm.armed = true
		m.quitArm.seq++
		seq := m.quitArm.seq
		m.st.setNotice(quitHint)
		return tea.Tick(quitArmWindow, func(time.Time) tea.Msg { return quitDisarm{seq: seq} })
	}
	m.quitArm.armed = false
	if k.Paste {
		s := string(k.Runes)
		if t, ok := m.sess.input.take(s); ok {
			if t.cut > 0 {
				defer m.st.setError(fmt.Errorf("paste cut: only the first %s of %s were kept", formatBytes(maxPasteBytes), formatBytes(maxPasteBytes+t.cut)))
			}
			s = t.text
		}
		m.pal.reset()
		return m.handlePaste(s)
	}
	switch k.String() {
	case "enter":
		m.pal.reset()
		return m.submit()
	case "esc":
		m.pal.reset()
		switch {
		case m.phase.busy():
			m.cancel()
		case m.fit.id != 0 && !m.fit.held:
			m.fit = fitCheck{}
			m.setNotice("fit check dropped; the message stays in the editor")
		case m.held != nil:
			m.releaseHeld()
			m.setNotice("the held message is back in the editor")
		case m.unqueue():
			m.setNotice("the queued message is back in the editor, not sent")
		case m.awaitDoc != nil:
			m.stopAwaiting()
			m.setNotice("/summarize cancelled")
		default:
			m.st.clearNotice()
		}
		return nil
	case "pgup":
		m.tr.pageUp()
		return nil
	case "pgdown":
		m.tr.pageDown()
		return nil
	case "ctrl+o":
		m.toggleFolds()
		return nil
	case "ctrl+e":
		if !m.ed.expand() {
			m.st.setNotice("no collapsed paste to expand")
		}
		m.afterEdit()
		return nil
	case "tab":
		if v := m.ed.value(); IsCommand(v) {
			if nv, changed := m.pal.tab(v); changed {
				m.ed.ta.SetValue(nv)
			}
			return nil
		}
	case "up":
		if m.ed.onFirstLine() && m.ed.historyMove(-1) {
			m.afterEdit()
			return nil
		}
	case "down":
		if m.ed.onLastLine() && m.ed.historyMove(+1) {
			m.afterEdit()
			return nil
		}
	}
	c := m.ed.update(k)
	m.afterEdit()
	return c
}

// afterEdit resizes the editor to its content and hides the candidates.
func (m *model) afterEdit() {
	if m.ed.wantHeight(m.height) != m.ed.height {
		m.layout()
	}
	m.pal.reset()
}

// cancel asks the engine to stop the running request.
func (m *model) cancel() {
	if m.req == nil || m.phase == phaseStopping {
		return
	}
	m.phase = phaseStopping
	m.sess.eng.Submit(engine.Cancel{ID: m.req.id})
	m.st.setNotice("stopping…")
}

// quit ends the program after stopping the engine's work and saving.
func (m *model) quit() {
	if m.req != nil {
		m.sess.eng.Submit(engine.Cancel{ID: m.req.id})
	}
	m.finish()
	m.phase = phaseQuit
}

// finish saves the conversation as it is now: the draft, and an answer
// still streaming as a partial answer marked "interrupted".
func (m *model) finish() {
	m.record(false)
	_ = m.files.saver.flush() // Run flushes again and reports errors
}

func (m *model) setNotice(s string) { m.st.setNotice(s) }
func (m *model) setError(err error) { m.st.setError(err) }

func (m *model) displayModel() string {
	if m.info.Name != "" {
		return m.info.Name
	}
	return m.sess.modelName
}

// conversation is the chat as the next Generate would send it.
func (m *model) conversation() []engine.Message {
	conv, _ := m.tr.conversation()
	return conv
}
