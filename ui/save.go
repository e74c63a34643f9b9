package ui

import (
	"fmt"
	"strings"

	"mlxchat/engine"
)

// files is where the session keeps what it writes, and the state of the
// autosave.
type files struct {
	saver    *autosaver
	stateDir string // where history.json goes ("" = nowhere)
	convDir  string // where conversations go ("" = nowhere)
	histPath string
	// stateWarning says why the state dir given was not used (shown once).
	stateWarning string
	// saveErr is the last save error shown, so a save that keeps failing
	// the same way is reported once, not on every tick.
	saveErr string
	// lastDraft and lastStreamed are the draft and the size of the
	// streaming answer (streamedLen) at the last snapshot, so the periodic
	// save writes only when they changed.
	lastDraft    string
	lastStreamed int
}

// snapshot is the conversation as it would be saved now.
func (m *model) snapshot() conversationFile {
	c := conversationFile{
		Model:   m.displayModel(),
		Created: m.created,
		Updated: m.sess.now(),
		System:  m.set.cur.System,
	}
	for _, t := range m.tr.turns {
		switch t.kind {
		case turnUser:
			sm := savedMessage{Role: engine.RoleUser, Content: t.content, Pinned: t.pinned}
			if t.display != t.content {
				sm.Display = t.display
			}
			if t.summarize != nil {
				sm.Summarize = &savedSummarize{Instruction: t.summarize.instruction}
			}
			c.Messages = append(c.Messages, sm)
		case turnAssistant:
			sm := savedMessage{Role: engine.RoleAssistant, Content: t.content, Partial: t.partial, Note: savedNote(t.note), Reasoning: t.reasoning, Pinned: t.pinned,
				MaxTokens: t.maxTokens}
			inline := t.piecesInline
			if t.stream != nil {
				switch {
				case t.stream.text == "" && strings.TrimSpace(t.reasoning) == "" && len(t.pieces) > 0:
					// A /summarize interrupted before its final answer began:
					// the pieces done are the answer, as when Esc stops it.
					sm.Content, sm.Partial, inline = piecesText(t.pieces), true, true
					sm.Note = piecesNote(noteInterrupted, len(t.pieces), t.pieces[0].Pieces)
				case t.stream.text == "" && strings.TrimSpace(t.reasoning) == "":
					continue // nothing streamed yet: the question stays unanswered
				default:
					sm.Content, sm.Partial, sm.Note = t.stream.text, true, noteInterrupted
				}
			}
			if len(t.pieces) > 0 {
				sm.Summary = &savedSummary{Pieces: savePieces(t.pieces), Inline: inline}
			}
			c.Messages = append(c.Messages, sm)
		}
	}
	c.Draft, c.DraftPastes = m.draft()
	return c
}

// draft is what a save keeps of the unsent input: the held message, the
// queue (in order) and the editor's text, and their pastes.
func (m *model) draft() (string, []pasteBlock) {
	v := m.ed.value()
	blocks := m.ed.pastes.present(v)
	above := func(text string, pastes []pasteBlock) {
		if v != "" {
			v = "\n" + v
		}
		v = text + v
		blocks = append(append([]pasteBlock(nil), pastes...), blocks...)
	}
	for i := len(m.queued) - 1; i >= 0; i-- {
		above(m.queued[i].text, m.queued[i].pastes)
	}
	if h := m.held; h != nil {
		above(h.text, h.pastes)
	}
	return v, blocks
}

// loadedNote is the label note of a loaded answer: the one the chat
// showed live ("max tokens", "stopped", "stopped after 3 of 9 pieces"),
// so that a reload changes no label. An answer saved while it still
// streamed had no live label: it is "partial · interrupted" ("partial ·
// interrupted after 3 of 9 pieces"), and one saved with no reason
// "partial".
func loadedNote(sm savedMessage) string {
	if !sm.Partial {
		return ""
	}
	switch n := savedNote(sm.Note); {
	case n == "":
		return "partial"
	case strings.HasPrefix(n, noteInterrupted):
		return "partial · " + n
	default:
		return n
	}
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
	m.files.lastDraft = m.ed.value()
	m.files.lastStreamed = m.streamedLen()
	m.saveFailed(m.files.saver.set(m.snapshot(), write))
}

// saveFailed shows an autosave error, once for as long as it repeats.
func (m *model) saveFailed(err error) {
	if err == nil {
		m.files.saveErr = ""
		return
	}
	if err.Error() == m.files.saveErr {
		return
	}
	m.files.saveErr = err.Error()
	m.setError(fmt.Errorf("autosave: %w", err))
}

// saveDraft records the conversation when the draft or the streaming
// answer changed since the last snapshot; write forces a write now (after a
// paste).
func (m *model) saveDraft(write bool) {
	if !write && m.ed.value() == m.files.lastDraft && m.streamedLen() == m.files.lastStreamed {
		return
	}
	m.record(write)
}

// streamedLen measures the answer streaming now (0 if none): its text,
// its reasoning and its finished piece summaries, which only grow, so a
// change in the sum means there is more to save.
func (m *model) streamedLen() int {
	if m.req == nil || m.tr.turns[m.req.turn].stream == nil {
		return 0
	}
	t := &m.tr.turns[m.req.turn]
	return len(t.stream.text) + len(t.reasoning) + len(t.pieces)
}

// pushHistory adds a sent input to the history and writes it.
func (m *model) pushHistory(h historyEntry) {
	m.ed.push(h, m.sess.cfg.HistoryLimit)
	if m.files.histPath != "" {
		if err := saveHistory(m.files.histPath, historyForDisk(m.ed.history), m.sess.cfg.HistoryLimit); err != nil {
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

// savePieces converts piece summaries for the conversation file.
func savePieces(ps []engine.SummaryPiece) []savedPiece {
	out := make([]savedPiece, len(ps))
	for i, p := range ps {
		out[i] = savedPiece{Piece: p.Piece, Pieces: p.Pieces, Start: p.SourceStart, End: p.SourceEnd, Text: p.Text}
	}
	return out
}

// loadPieces converts saved piece summaries back.
func loadPieces(ps []savedPiece) []engine.SummaryPiece {
	if len(ps) == 0 {
		return nil
	}
	out := make([]engine.SummaryPiece, len(ps))
	for i, p := range ps {
		out[i] = engine.SummaryPiece{Phase: engine.PhaseMap, Piece: p.Piece, Pieces: p.Pieces, SourceStart: p.Start, SourceEnd: p.End, Text: p.Text}
	}
	return out
}
