package ui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// This file is the queue of what was sent while the chat could not send
// it: Enter on a message while an answer runs (or while the model loads)
// does what a terminal does for ollama and mlx_lm.chat, which read the
// next line only once the answer is done: the message leaves the editor,
// so that a command typed next runs as typed instead of being glued onto
// it, and it is sent when the answer ends by itself (or the model is
// ready). A second message joins the first. A "/summarize ..." line
// holding pastes is queued the same way but joins nothing: it waits as
// its own entry and starts in its turn, and the entries go in the order
// they were sent, each when the answer before it ends by itself. Esc
// stops the answer and puts everything queued back into the editor
// instead of sending it, and so does an answer that fails or is stopped
// otherwise; a quit saves it with the draft. When the answer ends while
// the editor holds text, the queue waits: Enter sends its first entry
// (a message typed joins the queue first, so a queued message goes with
// it) and Esc puts it back.

// queuedMessage is one entry of the queue: a message, or a /summarize
// line with its pastes.
type queuedMessage struct {
	text   string       // as in the editor (paste labels)
	pastes []pasteBlock // the pastes behind its labels
	// afterStop marks an entry sent after Esc, while the answer was
	// stopping: the queue is then sent once the answer has stopped.
	afterStop bool
	// summarize marks a "/summarize ..." line holding pastes: it starts a
	// summary when its turn comes, and nothing joins it.
	summarize bool
}

// queuedNotice starts the notice of a message just queued.
const queuedNotice = "queued: "

// The editor's hints while a message is queued: while an answer runs,
// while it stops, while the model loads, and once the chat is idle and the
// queued message waits for Enter. queuedPlaceholder words them otherwise
// when what is queued is not one message.
const (
	queuePlaceholder     = "your message is queued: it is sent when the answer ends · Esc stops the answer and puts it back"
	queueStopPlaceholder = "your message is queued: it is sent once the answer has stopped"
	queueBackPlaceholder = "your queued message comes back into the editor once the answer has stopped"
	queueLoadPlaceholder = "your message is queued: it is sent when the model is ready · Esc puts it back"
	queueWaitPlaceholder = "Enter sends your queued message · Esc puts it back in the editor"
)

// queue takes the editor's text out of the editor into the queue: a
// message joins a message queued last, a /summarize line (and a message
// after one) waits as an entry of its own. The notice says so.
func (m *model) queue() {
	text, blocks := m.ed.value(), m.ed.present()
	e := queuedMessage{text: text, pastes: blocks, afterStop: m.phase == phaseStopping,
		summarize: len(blocks) > 0 && IsCommand(text) && isSummarizeLine(text)}
	n := len(m.queued)
	joined := n > 0 && !e.summarize && !m.queued[n-1].summarize
	if joined {
		last := &m.queued[n-1]
		last.text += "\n" + text
		last.pastes = append(append([]pasteBlock(nil), last.pastes...), blocks...)
		last.afterStop = last.afterStop || e.afterStop
	} else {
		m.queued = append(m.queued, e)
	}
	m.ed.clear()
	m.afterEdit()
	m.setNotice(m.queueNotice(e, joined, n))
	m.refreshPlaceholder()
	m.saveDraft(true)
}

// queueNotice is the notice of e just queued: joined to the message
// queued last, or queued behind the before entries already waiting.
func (m *model) queueNotice(e queuedMessage, joined bool, before int) string {
	when, esc := "when the answer ends", " (Esc stops the answer and puts it back in the editor)"
	switch m.phase {
	case phaseLoading:
		when, esc = "when the model is ready", " (Esc puts it back in the editor)"
	case phaseStopping:
		when, esc = "once the answer has stopped", ""
	}
	what, verb := "your message", "is sent"
	if e.summarize {
		what, verb = "your /summarize", "starts"
	}
	switch {
	case joined:
		return queuedNotice + "your message joins the one already queued; both are sent " + when + esc
	case before > 0:
		return queuedNotice + what + " " + verb + " after what is already queued, in order, " + when + esc
	}
	return queuedNotice + what + " " + verb + " " + when + esc
}

// unqueue puts everything queued back into the editor, in order, above
// what was typed meanwhile; it reports whether there was anything.
func (m *model) unqueue() bool {
	if len(m.queued) == 0 {
		return false
	}
	var text []string
	var blocks []pasteBlock
	for _, q := range m.queued {
		text = append(text, q.text)
		blocks = append(blocks, q.pastes...)
	}
	m.queued = nil
	if cur := m.ed.value(); cur != "" {
		text = append(text, cur)
		blocks = append(blocks, m.ed.present()...)
	}
	m.ed.set(strings.Join(text, "\n"), blocks)
	m.afterEdit()
	m.refreshPlaceholder()
	return true
}

// queueBackHint follows the notice of an answer that was stopped or
// failed while a message was queued.
const queueBackHint = " · your queued message is back in the editor, not sent (Enter sends it)"

// requestEnded runs end, which closes the request in flight (endRequest
// or summarized), with the queue handled around it: an answer that ended
// by itself (byItself) sends the first entry, else the queue goes back
// into the editor first, so that a question coming back lands above it,
// unless something was sent after the Esc. A chat that is quitting keeps
// the queue: it is saved with the draft.
func (m *model) requestEnded(byItself bool, end func()) tea.Cmd {
	defer m.keepQuitHint()
	queued := len(m.queued) > 0
	back := queued && !byItself && !m.queuedAfterStop() && m.phase != phaseQuit
	if back {
		m.unqueue()
	}
	end()
	switch {
	case back:
		m.st.notice.hint = queueBackHint
		return nil
	case !queued || m.phase != phaseIdle:
		return nil
	}
	return m.sendQueued()
}

// queuedAfterStop says something was queued after Esc, while the answer
// was stopping: the queue is then sent, not put back.
func (m *model) queuedAfterStop() bool {
	for _, q := range m.queued {
		if q.afterStop {
			return true
		}
	}
	return false
}

// sendQueued sends the first entry of the queue once the chat is idle: at
// once when the editor is empty, else it waits for Enter (the notice says
// so). The rest waits for the answer to that one.
func (m *model) sendQueued() tea.Cmd {
	if len(m.queued) == 0 || m.phase != phaseIdle {
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
	q := m.queued[0]
	m.queued = append([]queuedMessage(nil), m.queued[1:]...)
	m.refreshPlaceholder()
	m.ed.set(q.text, append([]pasteBlock(nil), q.pastes...))
	m.afterEdit()
	prev := m.st.notice
	cmd := m.submitNow()
	if m.st.notice.text == "" && prev.text != "" && !strings.HasPrefix(prev.text, queuedNotice) {
		m.st.notice = prev // the answer's notice ("answer cut at /max 40 tokens") stays
	}
	return cmd
}

// refreshPlaceholder sets the editor's hint from what waits outside it: a
// /summarize waiting for its document, the held message, the queue.
func (m *model) refreshPlaceholder() {
	p := defaultPlaceholder
	switch {
	case m.awaitDoc != nil:
		p = awaitPlaceholder
	case m.held != nil:
		p = heldPlaceholder(m.held.fit)
	case len(m.queued) > 0:
		p = m.queuedPlaceholder()
	}
	m.ed.ta.Placeholder = p
	m.st.queued = m.queuedLabel()
}

// queuedLabel is the status line's word for the queue: "1 msg queued",
// "/summarize queued", "2 queued" ("" when empty).
func (m *model) queuedLabel() string {
	switch {
	case len(m.queued) == 0:
		return ""
	case len(m.queued) > 1:
		return fmt.Sprintf("%d queued", len(m.queued))
	case m.queued[0].summarize:
		return "/summarize queued"
	}
	return "1 msg queued"
}

// queuedPlaceholder is the editor's hint for the queue in the phase the
// chat is in; a queue that is not one message (a /summarize, or several
// entries) is worded as what goes in order.
func (m *model) queuedPlaceholder() string {
	one := len(m.queued) == 1 && !m.queued[0].summarize
	pick := func(message, entries string) string {
		if one {
			return message
		}
		return entries
	}
	switch {
	case m.phase == phaseLoading:
		return pick(queueLoadPlaceholder, "queued: it goes in order when the model is ready · Esc puts it all back")
	case m.phase == phaseStopping && m.queuedAfterStop():
		return pick(queueStopPlaceholder, "queued: it goes in order once the answer has stopped")
	case m.phase == phaseStopping:
		return pick(queueBackPlaceholder, "what you queued comes back into the editor once the answer has stopped")
	case m.phase.busy():
		return pick(queuePlaceholder, "queued: it goes in order, each when the answer before it ends · Esc stops the answer and puts it all back")
	}
	return pick(queueWaitPlaceholder, "Enter sends the first entry of what you queued · Esc puts it all back in the editor")
}
