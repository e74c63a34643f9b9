package ui

import (
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

// holdPaste pastes doc under a 64-token cap and lets the fit check hold it.
func holdPaste(t *testing.T, m *model, fe *fakeEngine, doc string) {
	t.Helper()
	paste(m, doc)
	press(m, tea.KeyEnter)
	_, id := lastOf[engine.FitCheck](t, fe)
	events(m, notFit(id))
	if m.held == nil {
		t.Fatal("the paste is not held")
	}
}

func piece(i, n int, text string) engine.SummaryPiece {
	return engine.SummaryPiece{Phase: engine.PhaseMap, Piece: i, Pieces: n, SourceStart: (i - 1) * 1000, SourceEnd: i * 1000, Text: text}
}

func command(m *model, line string) {
	typeText(m, line)
	press(m, tea.KeyEnter)
}

// TestSummarizeHeldPaste: /summarize on the held paste shows its progress,
// the final answer with the piece summaries folded (Ctrl+O unfolds them),
// saves them, and later turns send the summaries instead of the document.
func TestSummarizeHeldPaste(t *testing.T) {
	doc := strings.Repeat("a paragraph of the long report.\n\n", 100)
	m, fe := newTestModel(t, withMaxKV(64))
	update(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	ready(m)
	holdPaste(t, m, fe, doc)
	command(m, "/summarize")
	r, id := lastOf[engine.Summarize](t, fe)
	if r.Document != doc || r.Instruction != "" || len(r.Conversation) != 0 {
		t.Fatalf("Summarize %q… instruction %q, %d messages", r.Document[:20], r.Instruction, len(r.Conversation))
	}
	if m.held != nil || m.phase != phaseSummarize {
		t.Fatalf("held %v, phase %v", m.held != nil, m.phase)
	}
	events(m, engine.SummarizeProgress{Header: hdr(id, 0), Phase: engine.PhaseMap, Piece: 1, Pieces: 3})
	if s := screen(m); !strings.Contains(s, "summarize 1/3") || !strings.Contains(s, "/summarize") {
		t.Fatalf("no summarize progress or user turn:\n%s", s)
	}
	events(m, engine.PieceSummary{Header: hdr(id, 0), Piece: piece(1, 3, "First part: the plan.")},
		engine.SummarizeProgress{Header: hdr(id, 0), Phase: engine.PhaseMap, Piece: 2, Pieces: 3},
		engine.PieceSummary{Header: hdr(id, 0), Piece: piece(2, 3, "Second part: the costs.")},
		engine.PieceSummary{Header: hdr(id, 0), Piece: piece(3, 3, "Third part: the risks.")},
		engine.SummarizeProgress{Header: hdr(id, 0), Phase: engine.PhaseReduce, Piece: 1, Pieces: 1, Round: 1})
	update(m, frameMsg{})
	if s := screen(m); !strings.Contains(s, "summarize · combining 1/1") || !strings.Contains(s, "▸ 3 piece summaries") {
		t.Fatalf("reduce progress or the folded pieces missing:\n%s", s)
	}
	final := "The report plans, costs and risks."
	pieces := []engine.SummaryPiece{piece(1, 3, "First part: the plan."), piece(2, 3, "Second part: the costs."), piece(3, 3, "Third part: the risks.")}
	events(m, engine.Token{Header: hdr(id, time.Second), Text: final, Tokens: 8},
		engine.Done{Header: hdr(id, time.Second), Reason: engine.DoneStop, Text: final, Tokens: 8, Pieces: pieces})
	s := screen(m)
	if !strings.Contains(s, final) || !strings.Contains(s, "▸ 3 piece summaries (Ctrl+O shows them)") || strings.Contains(s, "Second part") {
		t.Fatalf("answer with folded pieces not shown:\n%s", s)
	}
	if !strings.Contains(s, "summarized in 3 pieces") || m.phase != phaseIdle {
		t.Errorf("no notice or still busy:\n%s", s)
	}
	press(m, tea.KeyCtrlO)
	update(m, frameMsg{})
	if s := screen(m); !strings.Contains(s, "Second part: the costs.") || !strings.Contains(s, "Part 2 of 3") || !strings.Contains(s, "▾ 3 piece summaries") {
		t.Fatalf("Ctrl+O did not unfold:\n%s", s)
	}
	c := readConv(t, m.files.saver.currentPath())
	if len(c.Messages) != 2 || c.Messages[0].Summarize == nil || c.Messages[1].Summary == nil || len(c.Messages[1].Summary.Pieces) != 3 ||
		!strings.HasSuffix(c.Messages[0].Content, doc) || c.Messages[1].Content != final {
		t.Fatalf("saved %+v", c.Messages)
	}
	g, _ := send(t, m, fe, "and the costs?")
	if len(g.Conversation) != 3 {
		t.Fatalf("next conversation has %d messages", len(g.Conversation))
	}
	u := g.Conversation[0].Content
	if strings.Contains(u, "a paragraph of the long report") || !strings.Contains(u, "Part 2 of 3:\nSecond part: the costs.") ||
		!strings.HasPrefix(u, engine.DefaultSummarizeInstruction) {
		t.Errorf("later turn sends %q, want the instruction and the piece summaries", u)
	}
	// A load restores the fold and what later turns send.
	m2, fe2 := newTestModel(t)
	ready(m2)
	typeText(m2, "/load "+m.files.saver.currentPath())
	enter(m2)
	if s := screen(m2); !strings.Contains(s, "▸ 3 piece summaries") {
		t.Errorf("loaded summary not folded:\n%s", s)
	}
	g2, _ := send(t, m2, fe2, "more")
	if g2.Conversation[0].Content != u {
		t.Errorf("loaded conversation sends %q", g2.Conversation[0].Content)
	}
}

// TestSummarizeStopKeepsPieces: Esc during the pieces keeps the finished
// piece summaries as the answer.
func TestSummarizeStopKeepsPieces(t *testing.T) {
	m, fe := newTestModel(t, withMaxKV(64))
	update(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	ready(m)
	holdPaste(t, m, fe, strings.Repeat("text ", 1000))
	command(m, "/summarize List the decisions.")
	r, id := lastOf[engine.Summarize](t, fe)
	if r.Instruction != "List the decisions." {
		t.Fatalf("instruction %q", r.Instruction)
	}
	events(m, engine.PieceSummary{Header: hdr(id, 0), Piece: piece(1, 5, "One.")},
		engine.PieceSummary{Header: hdr(id, 0), Piece: piece(2, 5, "Two.")})
	press(m, tea.KeyEsc)
	if c, _ := lastOf[engine.Cancel](t, fe); c.ID != id {
		t.Fatal("Esc did not cancel the Summarize")
	}
	events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled, Pieces: []engine.SummaryPiece{piece(1, 5, "One."), piece(2, 5, "Two.")}})
	s := screen(m)
	if !strings.Contains(s, "stopped after 2 of 5 pieces") || !strings.Contains(s, "One.") || !strings.Contains(s, "Two.") || strings.Contains(s, "▸") {
		t.Fatalf("stopped summary:\n%s", s)
	}
	conv := m.conversation()
	if len(conv) != 2 || !strings.Contains(conv[0].Content, "Part 1 of 5:\nOne.") || !strings.HasPrefix(conv[0].Content, "List the decisions.") {
		t.Errorf("conversation after the stop: %#v", conv)
	}
}

// TestSummarizeSources: a bare /summarize works on the last paste sent; a
// line "/summarize INSTRUCTION [paste]" on that paste; with nothing to
// summarize it says so; stopped before anything, it comes back to the
// editor and Enter runs it again.
func TestSummarizeSources(t *testing.T) {
	doc := strings.Repeat("x", 2000)
	t.Run("last paste", func(t *testing.T) {
		m, fe := newTestModel(t)
		ready(m)
		typeText(m, "read this ")
		paste(m, doc)
		press(m, tea.KeyEnter)
		_, id := lastOf[engine.Generate](t, fe)
		events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "ok"})
		command(m, "/summarize")
		if r, _ := lastOf[engine.Summarize](t, fe); r.Document != doc {
			t.Errorf("document %d bytes, want the last paste", len(r.Document))
		}
	})
	t.Run("typed before a paste", func(t *testing.T) {
		m, fe := newTestModel(t)
		ready(m)
		typeText(m, "/summarize Who pays? ")
		paste(m, doc)
		press(m, tea.KeyEnter)
		r, id := lastOf[engine.Summarize](t, fe)
		if r.Document != doc || r.Instruction != "Who pays?" || m.ed.value() != "" {
			t.Fatalf("Summarize %d bytes, instruction %q, editor %q", len(r.Document), r.Instruction, m.ed.value())
		}
		press(m, tea.KeyEsc)
		events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled})
		if v := m.ed.value(); !strings.HasPrefix(v, "/summarize") || !strings.Contains(v, "[pasted") {
			t.Fatalf("stopped /summarize not back in the editor: %q", v)
		}
		press(m, tea.KeyEnter)
		if n := countOf[engine.Summarize](fe); n != 2 {
			t.Errorf("Enter on the restored /summarize: %d Summarize requests, want 2", n)
		}
		if r, _ := lastOf[engine.Summarize](t, fe); r.Document != doc {
			t.Error("the restored /summarize lost its document")
		}
	})
	t.Run("glued to the paste", func(t *testing.T) {
		m, fe := newTestModel(t)
		ready(m)
		typeText(m, "/summarize")
		paste(m, doc)
		press(m, tea.KeyEnter)
		if r, _ := lastOf[engine.Summarize](t, fe); r.Document != doc || countOf[engine.Generate](fe) != 0 {
			t.Errorf("\"/summarize[pasted…]\" was not summarized (%d Generate)", countOf[engine.Generate](fe))
		}
	})
}

// TestSummarizeWaitsForDocument: a bare /summarize with nothing to work
// on says it waits, and the next paste (short or long) or /read file is
// summarized at once, with the instruction given; Esc or a message sent
// instead drops the wait.
func TestSummarizeWaitsForDocument(t *testing.T) {
	long := strings.Repeat("a paragraph of the long report.\n\n", 100)
	file := writeFile(t, "report.md", long)
	tests := []struct {
		name, line string
		give       func(m *model)
		doc, instr string
	}{
		{"long paste", "/summarize", func(m *model) { paste(m, long) }, long, ""},
		{"short paste", "/summarize", func(m *model) { paste(m, "one short note") }, "one short note", ""},
		{"with an instruction", "/summarize Who pays?", func(m *model) { paste(m, long) }, long, "Who pays?"},
		{"/read file", "/summarize", func(m *model) { typeText(m, "/read "+file); enterRun(m) }, long, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: 200, Height: 30})
			ready(m)
			command(m, tc.line)
			s := screen(m)
			if countOf[engine.Summarize](fe) != 0 || !strings.Contains(s, "• /summarize: paste the document (or /read FILE)") ||
				!strings.Contains(s, awaitPlaceholder) || m.ed.value() != "" {
				t.Fatalf("bare /summarize does not say it waits:\n%s", s)
			}
			tc.give(m)
			r, _ := lastOf[engine.Summarize](t, fe)
			if r.Document != tc.doc || r.Instruction != tc.instr || countOf[engine.Generate](fe) != 0 {
				t.Fatalf("Summarize of %d bytes, instruction %q, want %d bytes and %q", len(r.Document), r.Instruction, len(tc.doc), tc.instr)
			}
			if m.phase != phaseSummarize || m.ed.value() != "" || strings.Contains(screen(m), awaitPlaceholder) {
				t.Errorf("phase %v, editor %q after the document came:\n%s", m.phase, m.ed.value(), screen(m))
			}
		})
	}
	t.Run("Esc cancels", func(t *testing.T) {
		m, fe := newTestModel(t)
		ready(m)
		command(m, "/summarize")
		press(m, tea.KeyEsc)
		if !strings.Contains(screen(m), "/summarize cancelled") {
			t.Errorf("no cancel notice:\n%s", screen(m))
		}
		paste(m, long)
		if countOf[engine.Summarize](fe) != 0 || !strings.HasPrefix(m.ed.value(), "[pasted: ") {
			t.Errorf("after Esc the paste was summarized or lost: editor %q", m.ed.value())
		}
	})
	t.Run("a message instead", func(t *testing.T) {
		m, fe := newTestModel(t)
		ready(m)
		command(m, "/summarize")
		send(t, m, fe, "never mind, hello")
		if strings.Contains(screen(m), awaitPlaceholder) || m.awaitDoc != nil {
			t.Error("the wait outlived a message sent instead")
		}
	})
}

// TestSummarizeEndToEnd: on the real engine a paste that does not fit a
// 256-token cap is held, then /summarize answers it in pieces; the answer
// shows them folded.
func TestSummarizeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the tiny model")
	}
	s := engine.DefaultSettings()
	s.MaxKV, s.MaxTokens, s.NoLoopDetect = 256, 6, true
	cs := startChat(t, t.TempDir(), s)
	if _, err := io.WriteString(cs.in, pasteStart+longDocument(1500)+pasteEnd); err != nil {
		t.Fatal(err)
	}
	cs.waitScreen("the collapsed paste", "[pasted: ")
	cs.typeLine("")
	cs.waitScreen("the fit notice", "Enter sends anyway")
	cs.typeLine("/summarize")
	cs.waitScreen("the summary", "• summarized in ")
	out := flat(cs.out.String())
	m := regexp.MustCompile(`summarized in ([0-9]+) pieces`).FindStringSubmatch(out)
	if m == nil || atoi(m[1]) < 2 {
		t.Fatalf("no multi-piece summary:\n%s", tail(out, 2000))
	}
	if !strings.Contains(out, "summarize 1/"+m[1]) {
		t.Errorf("no summarize progress for %s pieces", m[1])
	}
	cs.waitScreen("the folded pieces", "▸ "+m[1]+" piece summaries (Ctrl+O shows them)")
	cs.quit()
	c := readConv(t, savedConversation(t, cs.state))
	if len(c.Messages) != 2 || c.Messages[1].Summary == nil || len(c.Messages[1].Summary.Pieces) != atoi(m[1]) {
		t.Errorf("saved %+v", c.Messages)
	}
}

// savedConversation is the one conversation file in state.
func savedConversation(t *testing.T, state string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(state, "conversations", "*.json"))
	if len(files) != 1 {
		t.Fatalf("conversation files %v, want one", files)
	}
	return files[0]
}

// TestUnfoldedPiecesKeepTheirIndent: a word longer than the line (a URL,
// a hash) in the piece summaries (and the answer) wraps inside the
// block's indent, not to column 0.
func TestUnfoldedPiecesKeepTheirIndent(t *testing.T) {
	m, fe := newTestModel(t)
	update(m, tea.WindowSizeMsg{Width: 60, Height: 60})
	ready(m)
	typeText(m, "/summarize ")
	paste(m, strings.Repeat("a paragraph of the report.\n\n", 80))
	press(m, tea.KeyEnter)
	_, id := lastOf[engine.Summarize](t, fe)
	long := "https://example.com/" + strings.Repeat("segment", 20)
	ps := []engine.SummaryPiece{piece(1, 2, "See "+long+" for it."), piece(2, 2, "Two.")}
	events(m, engine.PieceSummary{Header: hdr(id, 0), Piece: ps[0]}, engine.PieceSummary{Header: hdr(id, 0), Piece: ps[1]},
		engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "In short " + long + " says it.", Pieces: ps})
	press(m, tea.KeyCtrlO)
	update(m, frameMsg{})
	s := screen(m)
	start := strings.Index(s, "tiny-model")
	end := strings.Index(s, "────")
	if start < 0 || end < start {
		t.Fatalf("no answer block:\n%s", s)
	}
	block := s[start:end]
	for _, l := range strings.Split(block, "\n")[1:] {
		if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "  ") {
			t.Errorf("line at column 0 inside the answer: %q\n%s", l, block)
		}
	}
	joined := strings.Join(strings.Fields(block), "")
	if strings.Count(joined, long) != 2 {
		t.Errorf("the long word is not all there twice (answer and piece):\n%s", block)
	}
}

// TestSummarizeStatusSpeed: the status line during a /summarize shows no
// decode speed of the answer before it (QA saw "decode 925.5 tok/s" beside
// "summarize 3/12"); the speed of its final answer shows once it streams,
// and the request's own figure when it ends.
func TestSummarizeStatusSpeed(t *testing.T) {
	m, fe := newTestModel(t)
	update(m, tea.WindowSizeMsg{Width: 200, Height: 30})
	ready(m)
	_, id := send(t, m, fe, "hello")
	events(m, engine.Stats{Header: hdr(id, 0), DecodeTokPerSec: 925.5},
		engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "hi"})
	if s := statusLine(m); !strings.Contains(s, "decode 925.5 tok/s") {
		t.Fatalf("status after the answer: %q", s)
	}
	typeText(m, "/summarize ")
	paste(m, strings.Repeat("a paragraph of the report.\n\n", 80))
	press(m, tea.KeyEnter)
	_, id = lastOf[engine.Summarize](t, fe)
	for _, ev := range []engine.Event{
		engine.SummarizeProgress{Header: hdr(id, 0), Phase: engine.PhaseMap, Piece: 3, Pieces: 12},
		engine.PrefillProgress{Header: hdr(id, 0), Chunk: 1, Chunks: 1, TokPerSec: 500},
		engine.PieceSummary{Header: hdr(id, 0), Piece: piece(3, 12, "Three.")},
	} {
		events(m, ev)
		if s := statusLine(m); !strings.Contains(s, "summarize 3/12") || strings.Contains(s, "decode") {
			t.Fatalf("status during the pieces after %T: %q", ev, s)
		}
	}
	events(m, engine.SummarizeProgress{Header: hdr(id, 0), Phase: engine.PhaseReduce, Piece: 1, Pieces: 1, Round: 1},
		engine.Token{Header: hdr(id, 0), Text: "In", Tokens: 1},
		engine.Token{Header: hdr(id, 2*time.Second), Text: " short", Tokens: 5})
	if s := statusLine(m); !strings.Contains(s, "decode 2.0 tok/s") {
		t.Errorf("status while the final answer streams: %q", s)
	}
	events(m, engine.Stats{Header: hdr(id, 0), DecodeTokPerSec: 88.8},
		engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "In short"})
	if s := statusLine(m); !strings.Contains(s, "decode 88.8 tok/s") {
		t.Errorf("status after the summary: %q", s)
	}
}

// statusLine is the last line of the screen.
func statusLine(m *model) string {
	lines := strings.Split(screen(m), "\n")
	return lines[len(lines)-1]
}

// TestSummaryCutNotice: a summary whose answer ended at its token limit
// says which limit: /max when it was reached, else the room a summary's
// answer has under the cap. With /max off the notice said "the answer was
// cut at /max 0 tokens" (QA, /summarize of a 15 KiB paste on the tiny
// model).
func TestSummaryCutNotice(t *testing.T) {
	pieces := []engine.SummaryPiece{piece(1, 2, "one"), piece(2, 2, "two")}
	tests := []struct {
		name      string
		max       string // a /max command before ("" = none)
		tokens    int
		pieces    []engine.SummaryPiece
		want, not string
	}{
		{"no /max, in pieces", "", 256, pieces, "summarized in 2 pieces (the answer was cut at 256 tokens, the room its answer has beside the prompt in the live window)", "/max"},
		{"no /max, one piece", "", 256, nil, "summary cut at 256 tokens, the room its answer has beside the prompt in the live window", "/max"},
		{"/max reached", "/max 40", 40, pieces, "summarized in 2 pieces (the answer was cut at /max 40 tokens)", "room"},
		{"/max above the room", "/max 900", 256, pieces, "(the answer was cut at 256 tokens, the room", "/max 900"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t, withMaxKV(64))
			update(m, tea.WindowSizeMsg{Width: 200, Height: 40})
			ready(m)
			if tc.max != "" {
				command(m, tc.max)
			}
			holdPaste(t, m, fe, strings.Repeat("a paragraph of the long report.\n\n", 100))
			command(m, "/summarize")
			_, id := lastOf[engine.Summarize](t, fe)
			events(m, engine.Token{Header: hdr(id, time.Second), Text: "the summary", Tokens: tc.tokens},
				engine.Done{Header: hdr(id, time.Second), Reason: engine.DoneMaxTokens, Text: "the summary", Tokens: tc.tokens, Pieces: tc.pieces})
			n := m.st.notice.text
			if !strings.Contains(n, tc.want) || strings.Contains(n, tc.not) {
				t.Errorf("notice %q, want %q and not %q", n, tc.want, tc.not)
			}
		})
	}
}
