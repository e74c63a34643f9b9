package ui

import (
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

// jobs is the work the UI has handed off its goroutine: pastes whose
// tokens are being counted, and a /load being read.
type jobs struct {
	// counting holds the pastes whose tokens are being counted, by label.
	counting    map[string]countJob
	countNotice string // the progress notice last shown
	countFrame  int
	// loading is the /load argument being read ("" = none).
	loading string
	// reading names the files /read or a message's @paths are reading
	// ("" = none).
	reading string
}

func newJobs() jobs { return jobs{counting: map[string]countJob{}} }

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

// submit sends the editor's content: a command or a message. Enter on
// an empty editor sends the held message anyway. A message (or a
// /summarize line holding pastes) sent while the chat cannot send it, or
// while something queued waits, joins the queue (queue.go); a command
// runs at once.
func (m *model) submit() tea.Cmd {
	text := m.ed.value()
	if strings.TrimSpace(text) == "" {
		switch {
		case m.phase != phaseIdle || m.fit.id != 0:
		case m.held != nil:
			m.releaseHeld()
			m.send()
		case len(m.queued) > 0:
			return m.sendQueued()
		}
		return nil
	}
	if !IsCommand(text) || len(m.ed.present()) > 0 && isSummarizeLine(text) {
		switch {
		case m.phase == phaseLoading || m.phase.busy():
			// Sent when the answer ends; the editor is free for what comes
			// next.
			m.queue()
			return nil
		case len(m.queued) > 0 && m.phase == phaseIdle && m.fit.id == 0 && m.jobs.reading == "":
			// What was queued goes first: this joins the queue, whose first
			// entry is sent now.
			m.queue()
			return m.sendQueued()
		}
	}
	return m.submitNow()
}

// submitNow carries out the editor's text, a command or a message, at
// once (submit has queued what must wait).
func (m *model) submitNow() tea.Cmd {
	text := m.ed.value()
	present := m.ed.present()
	if IsCommand(text) && len(present) > 0 && isSummarizeLine(text) {
		if err := m.summarizeDraft(text, present); err != nil {
			m.setError(err)
		}
		return nil
	}
	if IsCommand(text) && len(present) > 0 {
		return m.commandWithPastes(text, present)
	}
	if IsCommand(text) && len(present) == 0 {
		// A command leaves the editor, failed or not, so that what is typed
		// next is not glued onto it; ↑ brings it back from the history.
		m.pushHistory(historyEntry{Text: strings.TrimSpace(text)})
		m.ed.ta.Reset()
		m.afterEdit()
		c, err := ParseCommand(text)
		if err != nil {
			m.commandFailed(err)
			return nil
		}
		cmd, err := m.runCommand(c)
		if err != nil {
			m.commandFailed(err)
		}
		m.afterEdit()
		return cmd
	}
	switch {
	case m.fit.id != 0:
		m.setNotice("still checking that the message fits the live window…")
		return nil
	case m.jobs.reading != "":
		m.setNotice("still reading " + m.jobs.reading + "…")
		return nil
	}
	m.stopAwaiting() // a message instead of the document: the /summarize is dropped
	if cmd, ok, err := m.startAtPaths(text); err != nil {
		m.setError(err)
		return nil
	} else if ok {
		return cmd
	}
	if m.held != nil {
		// A new message joins the held one, which is checked again with it.
		m.releaseHeld()
	}
	if m.mayNotFit(m.ed.full()) {
		m.startFitCheck(m.ed.full())
		return nil
	}
	m.send()
	return nil
}

// commandWithPastes runs a command line that holds collapsed pastes (a
// /summarize line aside): /system takes the line with its pastes
// expanded, a long system prompt pasted after it; no other command takes
// pasted text, so the line stays in the editor, pastes and all, with one
// error line; it is never sent to the model as a message.
func (m *model) commandWithPastes(text string, present []pasteBlock) tea.Cmd {
	c, err := ParseCommand(text) // with the labels: an error quotes them, not the pasted text
	if err == nil && c.Name == CmdSystem {
		c, err = ParseCommand(m.ed.full())
	}
	switch {
	case err != nil:
		m.setError(fmt.Errorf("%w; the line and its paste stay in the editor", err))
		return nil
	case c.Name != CmdSystem:
		m.setError(fmt.Errorf("/%s: takes no pasted text (only /system and /summarize do); the line stays in the editor (start it with // to send it as a message)", c.Name))
		return nil
	}
	m.pushHistory(historyEntry{Text: strings.TrimSpace(text), Pastes: present})
	m.ed.clear()
	m.afterEdit()
	cmd, err := m.runCommand(c)
	if err != nil {
		m.commandFailed(err)
	}
	return cmd
}

// commandFailed shows the error of a command that failed: the command
// has left the editor (it is the last history entry) and the notice says
// that ↑ brings it back to be fixed.
func (m *model) commandFailed(err error) {
	m.setError(err)
	m.st.notice.hint = recallHint
}

// recallHint follows a failed command's error on the notice line.
const recallHint = " (↑ brings the command back)"

// isSummarizeLine reports whether an editor text is /summarize with more
// after it (a paste, say).
func isSummarizeLine(text string) bool {
	t := strings.TrimSpace(text)
	name, _, _ := strings.Cut(strings.TrimPrefix(t, "/"), " ")
	name, _, _ = strings.Cut(name, "\n")
	name, _, _ = strings.Cut(name, "[") // "/summarize[pasted: …]": a paste right after the name
	return strings.EqualFold(name, string(CmdSummarize))
}

// send sends the editor's message: it becomes a user turn and a Generate
// asks for the answer.
func (m *model) send() {
	text, present, full := m.ed.value(), m.ed.present(), m.ed.full()
	if t := strings.TrimSpace(full); strings.HasPrefix(t, "//") {
		full = strings.Replace(full, "//", "/", 1)
		text = strings.Replace(text, "//", "/", 1)
	}
	if strings.Contains(text, "@@") {
		text, full = unescapeAt(text), unescapeAt(full)
	}
	m.pushHistory(historyEntry{Text: text, Pastes: present})
	m.ed.clear()
	m.afterEdit()
	m.st.clearNotice()
	m.tr.add(turn{kind: turnUser, content: full, display: text, pastes: present})
	m.autosave()
	m.startGenerate()
}

// startGenerate asks for the answer to the conversation so far.
func (m *model) startGenerate() {
	conv, turnOf := m.tr.conversation()
	id := m.sess.eng.Submit(engine.Generate{Conversation: conv})
	at := m.tr.add(turn{kind: turnAssistant, stream: &stream{}})
	m.req = &request{id: id, turn: at, turnOf: turnOf}
	m.phase = phasePrefill
	m.st.newRequest()
	for _, msg := range conv {
		m.st.sentBytes += len(msg.Content)
	}
	m.tr.refresh()
	m.tr.gotoBottom()
}

// streamed appends a Token event's text to the answer.
func (m *model) streamed(e engine.Token) {
	r := m.req
	if r.first.IsZero() {
		r.first = e.At
	}
	if m.phase == phasePrefill {
		m.phase = phaseDecode
	}
	r.tokens = e.Tokens
	if dt := e.At.Sub(r.first).Seconds(); dt > 0 && r.tokens > 1 {
		m.st.decodeTPS = float64(r.tokens-1) / dt
	}
	if e.Reasoning {
		m.tr.turns[r.turn].reasoning += e.Text
	} else {
		m.tr.turns[r.turn].stream.text += e.Text
	}
	m.tr.dirty = true
}

// endRequest closes the answer of the request in flight (its Done or
// Error). An answer that never produced text nor reasoning is removed
// together with its question, which goes back into the editor, so nothing
// is lost and the chat keeps alternating roles; one stopped while the
// model was still thinking keeps its reasoning (an answer without text).
func (m *model) endRequest(text string, reason engine.DoneReason, err error) {
	r := m.req
	m.req = nil
	quitting := m.phase == phaseQuit
	if !quitting {
		m.phase = phaseIdle
	}
	m.st.started()
	t := &m.tr.turns[r.turn]
	if text == "" && t.stream != nil {
		text = t.stream.text
	}
	thought := strings.TrimSpace(t.reasoning) != ""
	if text == "" && !thought && (err != nil || reason == engine.DoneCancelled) {
		m.restoreQuestion(r.turn, err)
		return
	}
	t.content = text
	t.stream = nil
	m.tr.changed(r.turn)
	switch {
	case err != nil:
		t.partial, t.note = true, "failed"
		m.setError(fmt.Errorf("answer failed: %w", err))
	case reason == engine.DoneCancelled && quitting:
		t.partial, t.note = true, noteInterrupted // the chat is ending, the user did not stop it
	case reason == engine.DoneCancelled && text == "":
		// Stopped while thinking: the reasoning so far stays, folded.
		t.partial, t.note = true, "stopped"
		m.setNotice("stopped while thinking; the reasoning so far is kept")
	case reason == engine.DoneCancelled:
		t.partial, t.note = true, "stopped"
		m.setNotice("stopped; the partial answer is kept")
	case reason == engine.DoneMaxTokens && text == "":
		t.partial, t.note, t.maxTokens = true, "max tokens", m.set.cur.MaxTokens
		m.setNotice(fmt.Sprintf("cut at /max %d tokens while still thinking, before any answer; the reasoning is kept (/max off or a larger /max lets it finish)", m.set.cur.MaxTokens))
	case reason == engine.DoneMaxTokens:
		t.partial, t.note, t.maxTokens = true, "max tokens", m.set.cur.MaxTokens
		m.setNotice(fmt.Sprintf("answer cut at /max %d tokens", m.set.cur.MaxTokens))
	case reason == engine.DoneLoop:
		t.partial, t.note = true, "repeating"
		m.setNotice("stopped: the answer started repeating itself")
	}
	m.autosave()
	m.tr.refresh()
}

// restoreQuestion drops the empty answer at turn i and puts its question
// back into the editor, above anything typed meanwhile.
func (m *model) restoreQuestion(i int, err error) {
	q := m.tr.turns[i-1]
	m.tr.turns = m.tr.turns[:i-1]
	m.tr.dirty = true
	back, blocks := q.content, []pasteBlock(nil)
	if len(q.pastes) > 0 {
		back, blocks = q.display, append(blocks, q.pastes...)
	}
	where := "in the editor"
	if draft := m.ed.value(); draft != "" {
		back += "\n" + draft
		blocks = append(blocks, m.ed.pastes.blocks...)
		where = "in the editor, above what you typed meanwhile"
	}
	m.ed.set(back, blocks)
	m.afterEdit()
	if err != nil {
		m.setError(fmt.Errorf("answer failed (your message is back %s): %w", where, err))
	} else {
		m.setNotice("stopped before the answer began; your message is back " + where)
	}
	m.autosave()
	m.tr.refresh()
}

// handlePaste inserts a bracketed paste: short ones as text, long ones as one
// collapsed block whose exact text is kept aside.
func (m *model) handlePaste(s string) tea.Cmd {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	if !isLongPaste(s, m.sess.cfg.PasteMinChars, m.sess.cfg.PasteMinLines) && editorSafe(s) && m.awaitDoc == nil {
		m.ed.insert(s)
		m.afterEdit()
		m.saveDraft(true)
		return nil
	}
	if m.sess.count == nil || len(s) < asyncCountBytes {
		m.ed.insert(m.ed.pastes.add(s, m.sess.count))
		m.afterEdit()
		m.saveDraft(true)
		m.pastedDocument()
		return nil
	}
	label, seq := m.ed.pastes.addCounting(s)
	m.ed.insert(label)
	m.afterEdit()
	m.saveDraft(true)
	cmd := m.countAsync(label, seq, s)
	m.pastedDocument()
	return cmd
}

// pastedDocument runs a waiting /summarize on the paste just collapsed
// into the editor.
func (m *model) pastedDocument() {
	if m.awaitDoc != nil && m.canStart("/summarize") == nil {
		m.summarizeAwaited()
	}
}

// countAsync counts the tokens of a large paste off the UI goroutine;
// the notice line shows the progress until pasteCounted swaps its label.
func (m *model) countAsync(label string, seq int, s string) tea.Cmd {
	first := len(m.jobs.counting) == 0
	m.jobs.counting[label] = countJob{bytes: len(s), start: m.sess.now()}
	m.showCounting()
	count := m.sess.count
	cmds := []tea.Cmd{func() tea.Msg {
		n, est := countTokens(count, s)
		return pasteCountedMsg{label: label, final: pasteLabel(n, est, len(s), seq)}
	}}
	if first {
		cmds = append(cmds, countTick())
	}
	return tea.Batch(cmds...)
}

// countTick refreshes the counting progress while a count runs.
func (m *model) countTick() tea.Cmd {
	if len(m.jobs.counting) == 0 {
		return nil
	}
	if m.st.notice.text == m.jobs.countNotice {
		m.showCounting()
	}
	return countTick()
}

// showCounting puts the count's progress on the notice line: the size
// being tokenized and the time so far.
func (m *model) showCounting() {
	total, since := 0, m.sess.now()
	for _, j := range m.jobs.counting {
		total += j.bytes
		if j.start.Before(since) {
			since = j.start
		}
	}
	frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
	el := m.sess.now().Sub(since)
	m.jobs.countFrame++
	m.setNotice(fmt.Sprintf("%s counting the tokens of the %s paste… %.1f s (Enter sends it meanwhile)",
		frames[m.jobs.countFrame%len(frames)], formatBytes(int64(total)), el.Seconds()))
	m.jobs.countNotice = m.st.notice.text
}

// pasteCounted swaps a counted paste's provisional label for the final one
// wherever it is: the editor, the sent message, the history.
func (m *model) pasteCounted(msg pasteCountedMsg) {
	delete(m.jobs.counting, msg.label)
	m.ed.relabel(msg.label, msg.final)
	m.tr.relabel(msg.label, msg.final)
	if len(m.jobs.counting) == 0 && m.st.notice.text == m.jobs.countNotice {
		m.setNotice("paste counted: " + labelFacts(msg.final))
	}
	m.saveDraft(false)
}
