package ui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// This file is the queue of the message sent while the chat could not
// send it: Enter on a message while an answer runs (or while the model
// loads) does what a terminal does for ollama and mlx_lm.chat, which read
// the next line only once the answer is done: the message leaves the
// editor, so that a command typed next runs as typed instead of being
// glued onto it, and it is sent when the answer ends by itself (or the
// model is ready). A second message joins the first. Esc stops the answer
// and puts the queued message back into the editor instead of sending it,
// and so does an answer that fails or is stopped otherwise; a quit saves
// it with the draft. When the answer ends while the editor holds text, the
// queued message waits: Enter sends it (with the text typed, when that is
// a message) and Esc puts it back.

// queuedMessage is a message sent while the chat could not send it.
type queuedMessage struct {
	text   string       // as in the editor (paste labels)
	pastes []pasteBlock // the pastes behind its labels
	// afterStop marks a message sent after Esc, while the answer was
	// stopping: it is sent once the answer has stopped.
	afterStop bool
}

// queuedNotice starts the notice of a message just queued.
const queuedNotice = "queued: "

// The editor's hints while a message is queued: while an answer runs,
// while it stops, while the model loads, and once the chat is idle and the
// queued message waits for Enter.
const (
	queuePlaceholder     = "your message is queued: it is sent when the answer ends · Esc stops the answer and puts it back"
	queueStopPlaceholder = "your message is queued: it is sent once the answer has stopped"
	queueBackPlaceholder = "your queued message comes back into the editor once the answer has stopped"
	queueLoadPlaceholder = "your message is queued: it is sent when the model is ready · Esc puts it back"
	queueWaitPlaceholder = "Enter sends your queued message · Esc puts it back in the editor"
)

// queue takes the editor's message out of the editor into the queue,
// after a message already queued, and says so on the notice line.
func (m *model) queue() {
	text, blocks := m.ed.value(), m.ed.present()
	joined := m.queued != nil
	if joined {
		text = m.queued.text + "\n" + text
		blocks = append(append([]pasteBlock(nil), m.queued.pastes...), blocks...)
	}
	m.queued = &queuedMessage{text: text, pastes: blocks, afterStop: m.phase == phaseStopping}
	m.ed.clear()
	m.afterEdit()
	when, esc := "when the answer ends", " (Esc stops the answer and puts it back in the editor)"
	switch m.phase {
	case phaseLoading:
		when, esc = "when the model is ready", " (Esc puts it back in the editor)"
	case phaseStopping:
		when, esc = "once the answer has stopped", ""
	}
	what := queuedNotice + "your message is sent " + when
	if joined {
		what = queuedNotice + "your message joins the one already queued; both are sent " + when
	}
	m.setNotice(what + esc)
	m.refreshPlaceholder()
	m.saveDraft(true)
}

// unqueue puts the queued message back into the editor, above what was
// typed meanwhile; it reports whether there was one.
func (m *model) unqueue() bool {
	q := m.queued
	if q == nil {
		return false
	}
	m.queued = nil
	text, blocks := q.text, append([]pasteBlock(nil), q.pastes...)
	if cur := m.ed.value(); cur != "" {
		text += "\n" + cur
		blocks = append(blocks, m.ed.present()...)
	}
	m.ed.set(text, blocks)
	m.afterEdit()
	m.refreshPlaceholder()
	return true
}

// queueBackHint follows the notice of an answer that was stopped or
// failed while a message was queued.
const queueBackHint = " · your queued message is back in the editor, not sent (Enter sends it)"

// requestEnded runs end, which closes the request in flight (endRequest
// or summarized), with the queued message handled around it: an answer
// that ended by itself (byItself) sends it, else it goes back into the
// editor first, so that a question coming back lands above it. A chat
// that is quitting keeps it queued: it is saved with the draft.
func (m *model) requestEnded(byItself bool, end func()) tea.Cmd {
	q := m.queued
	back := q != nil && !byItself && !q.afterStop && m.phase != phaseQuit
	if back {
		m.unqueue()
	}
	end()
	switch {
	case back:
		m.st.notice.hint = queueBackHint
		return nil
	case q == nil || m.phase != phaseIdle:
		return nil
	}
	return m.sendQueued()
}

// sendQueued sends the queued message once the chat is idle: at once when
// the editor is empty, else it waits for Enter (the notice says so).
func (m *model) sendQueued() tea.Cmd {
	if m.queued == nil || m.phase != phaseIdle {
		return nil
	}
	if strings.TrimSpace(m.ed.value()) != "" {
		m.refreshPlaceholder()
		switch prev := m.st.notice; {
		case prev.err:
		case prev.text == "" || strings.HasPrefix(prev.text, queuedNotice):
			m.setNotice("the answer ended; your queued message waits: Enter sends it")
		default:
			m.setNotice(prev.text + " · your queued message waits: Enter sends it")
		}
		return nil
	}
	q := m.queued
	m.queued = nil
	m.refreshPlaceholder()
	m.ed.set(q.text, append([]pasteBlock(nil), q.pastes...))
	m.afterEdit()
	prev := m.st.notice
	cmd := m.submit()
	if m.st.notice.text == "" && prev.text != "" && !strings.HasPrefix(prev.text, queuedNotice) {
		m.st.notice = prev // the answer's notice ("answer cut at /max 40 tokens") stays
	}
	return cmd
}

// takeQueued joins the queued message, if any, above the editor's text
// before a send at idle, so that both go as one message.
func (m *model) takeQueued() {
	if m.queued != nil && !m.phase.busy() && m.phase != phaseLoading {
		m.unqueue()
	}
}

// refreshPlaceholder sets the editor's hint from what waits outside it: a
// /summarize waiting for its document, the held message, the queued one.
func (m *model) refreshPlaceholder() {
	p := defaultPlaceholder
	switch {
	case m.awaitDoc != nil:
		p = awaitPlaceholder
	case m.held != nil:
		p = heldPlaceholder(m.held.fit)
	case m.queued != nil:
		p = m.queuedPlaceholder()
	}
	m.ed.ta.Placeholder = p
	m.st.queued = m.queued != nil
}

// queuedPlaceholder is the editor's hint for the queued message in the
// phase the chat is in.
func (m *model) queuedPlaceholder() string {
	switch {
	case m.phase == phaseLoading:
		return queueLoadPlaceholder
	case m.phase == phaseStopping && m.queued.afterStop:
		return queueStopPlaceholder
	case m.phase == phaseStopping:
		return queueBackPlaceholder
	case m.phase.busy():
		return queuePlaceholder
	}
	return queueWaitPlaceholder
}
