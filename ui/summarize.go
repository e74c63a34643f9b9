package ui

import (
	"fmt"
	"strings"

	"mlxchat/engine"
)

// summarizeSourceText is what a /summarize works on: the document, the
// instruction the source carries (typed beside a paste), and how the user
// turn shows it.
type summarizeJob struct {
	doc         string
	instruction string
	display     string       // the source as shown (labels)
	pastes      []pasteBlock // the pastes behind display's labels
}

// summarizeFrom builds a /summarize of text (editor form, labels) whose
// pastes are blocks: the document is the pastes' text (joined by blank
// lines) and the typed text around them is the instruction; text with no
// paste is the document itself.
func summarizeFrom(text string, blocks []pasteBlock) summarizeJob {
	j := summarizeJob{display: text, pastes: blocks}
	if len(blocks) == 0 {
		j.doc = text
		return j
	}
	rest := text
	docs := make([]string, len(blocks))
	for i, b := range blocks {
		docs[i] = b.Content
		rest = strings.Replace(rest, b.Label, "", 1)
	}
	j.doc = strings.Join(docs, "\n\n")
	j.instruction = strings.Join(strings.Fields(rest), " ")
	return j
}

// lastDocument finds what a bare /summarize works on besides a held
// message: the last paste or /read file in the conversation.
func (m *model) lastDocument() (summarizeJob, bool) {
	for i := len(m.tr.turns) - 1; i >= 0; i-- {
		t := &m.tr.turns[i]
		if t.kind != turnUser || len(t.pastes) == 0 {
			continue
		}
		b := t.pastes[len(t.pastes)-1]
		return summarizeJob{doc: b.Content, display: b.Label, pastes: []pasteBlock{b}}, true
	}
	return summarizeJob{}, false
}

// runSummarize carries out /summarize [INSTRUCTION]: on the held message
// if there is one, else on the last paste or /read file; with none, it
// waits for the next paste or /read file (Esc cancels).
func (m *model) runSummarize(instruction string) error {
	if err := m.canStart("/summarize"); err != nil {
		return err
	}
	m.stopAwaiting()
	var j summarizeJob
	switch {
	case m.held != nil:
		h := m.held
		j = summarizeFrom(h.text, h.pastes)
		m.held = nil
		m.refreshPlaceholder()
	default:
		var ok bool
		if j, ok = m.lastDocument(); !ok {
			m.awaitDoc = &awaitSummarize{instruction: instruction}
			m.refreshPlaceholder()
			m.setNotice("/summarize: paste the document (or /read FILE) and it is summarized at once · Esc cancels")
			return nil
		}
	}
	if instruction != "" {
		j.instruction = instruction
	}
	m.startSummarize(j, "/summarize"+prefixed(" ", instruction))
	return nil
}

// awaitSummarize is a bare /summarize that had nothing to work on: the
// next paste or /read file is its document.
type awaitSummarize struct {
	instruction string
}

// awaitPlaceholder is the editor's hint while /summarize waits.
const awaitPlaceholder = "paste the document to summarize, or /read FILE · Esc cancels the /summarize"

// stopAwaiting ends a /summarize's wait for its document.
func (m *model) stopAwaiting() {
	m.awaitDoc = nil
	m.refreshPlaceholder()
}

// summarizeAwaited runs the waiting /summarize on the editor, which has
// just received the document (a paste or a /read block): its blocks are
// the document, text typed beside them joins the instruction.
func (m *model) summarizeAwaited() {
	a := m.awaitDoc
	m.stopAwaiting()
	text := "/summarize" + prefixed(" ", a.instruction) + " " + m.ed.value()
	if err := m.summarizeDraft(text, m.ed.present()); err != nil {
		m.setError(err)
	}
}

// summarizeDraft carries out an editor text that starts with /summarize
// and holds pastes: the pastes are the document, the rest of the text
// the instruction.
func (m *model) summarizeDraft(text string, present []pasteBlock) error {
	if err := m.canStart("/summarize"); err != nil {
		return err
	}
	t := strings.TrimSpace(text)
	body := strings.TrimSpace(t[len("/summarize"):])
	j := summarizeFrom(body, present)
	m.pushHistory(historyEntry{Text: text, Pastes: present})
	m.ed.clear()
	m.afterEdit()
	m.startSummarize(j, "/summarize")
	return nil
}

// canStart says why a request cannot start now (nil when it can).
func (m *model) canStart(cmd string) error {
	switch {
	case m.phase == phaseLoading:
		return fmt.Errorf("%s: the model is still loading", cmd)
	case m.phase.busy():
		return fmt.Errorf("%s: an answer is running, press Esc first", cmd)
	case m.fit.id != 0:
		return fmt.Errorf("%s: still checking that the message fits; press Esc to drop the check", cmd)
	}
	return nil
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// startSummarize sends a Summarize of the job: the document is answered
// in pieces within the cap, and the transcript gets a user turn for it
// and the answer, under which the piece summaries are folded.
func (m *model) startSummarize(j summarizeJob, head string) {
	m.st.clearNotice()
	display := head + "\n" + j.display
	m.tr.add(turn{kind: turnUser, content: summarizeContent(j.instruction, j.doc), display: display, pastes: j.pastes,
		summarize: &summarizeSource{instruction: j.instruction}})
	m.autosave()
	id := m.sess.eng.Submit(engine.Summarize{Document: j.doc, Instruction: j.instruction})
	at := m.tr.add(turn{kind: turnAssistant, stream: &stream{}})
	m.req = &request{id: id, turn: at, summarize: true}
	m.phase = phaseSummarize
	m.st.newRequest()
	m.st.sentBytes = len(j.doc)
	m.tr.refresh()
	m.tr.gotoBottom()
}

// piecesNote is the note of a /summarize answer ended in its pieces:
// "stopped after 3 of 9 pieces" (Esc) or "interrupted after 3 of 9
// pieces" (a quit or a signal, whichever way the end reached the chat).
func piecesNote(word string, done, total int) string {
	return fmt.Sprintf("%s after %d of %d pieces", word, done, total)
}

// summarized ends a Summarize: the answer with its piece summaries; a
// stop keeps what was done (the pieces finished, and the answer's text so
// far).
func (m *model) summarized(d engine.Done) {
	r := m.req
	m.tr.clearSpans() // the cache now holds the pieces' prompts, not the chat
	t := &m.tr.turns[r.turn]
	if len(d.Pieces) > 0 || d.Reason != engine.DoneCancelled {
		t.pieces = d.Pieces
	}
	text := d.Text
	if text == "" && t.stream != nil {
		text = t.stream.text
	}
	if text == "" && d.Reason == engine.DoneCancelled && len(t.pieces) > 0 {
		// Stopped before the pieces were combined: their summaries are the
		// answer.
		t.piecesInline = true
		n := t.pieces[0].Pieces
		quitting := m.phase == phaseQuit
		m.endRequest(piecesText(t.pieces), d.Reason, nil)
		t = &m.tr.turns[r.turn]
		word := "stopped" // Esc
		if quitting {
			// A quit or a signal: the same words as the exit save gives
			// pieces still streaming (snapshot).
			word = noteInterrupted
		}
		t.note = piecesNote(word, len(t.pieces), n)
		m.tr.changed(r.turn)
		m.tr.refresh()
		m.setNotice(fmt.Sprintf("stopped; the summaries of the %d pieces done are kept", len(t.pieces)))
		m.autosave()
		return
	}
	m.endRequest(text, d.Reason, nil)
	if d.Reason == engine.DoneMaxTokens {
		m.setNotice("summary " + summaryCut(d.Tokens, m.set.cur.MaxTokens))
	}
	if len(d.Pieces) > 0 && d.Reason != engine.DoneCancelled {
		cut := ""
		if d.Reason == engine.DoneMaxTokens {
			cut = " (the answer was " + summaryCut(d.Tokens, m.set.cur.MaxTokens) + ")"
		}
		m.setNotice(fmt.Sprintf("summarized in %d pieces%s; Ctrl+O shows their summaries", len(d.Pieces), cut))
	}
}

// summaryCut says where a summary's answer of tokens tokens was cut:
// at /max maxTokens when it reached it, else at the room a summary's
// answer has beside its prompt under the cap (the engine's Summarize
// keeps the prompt and the answer within the live window; /max 0 is no
// limit and never the cause).
func summaryCut(tokens, maxTokens int) string {
	if maxTokens > 0 && tokens >= maxTokens {
		return fmt.Sprintf("cut at /max %d tokens", maxTokens)
	}
	return fmt.Sprintf("cut at %d tokens, the room its answer has beside the prompt in the live window", tokens)
}
