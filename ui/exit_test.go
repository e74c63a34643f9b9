package ui

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

// TestQuitWhileStreamingSavesPartial: every way out of the chat while an
// answer streams keeps what streamed so far, marked partial, and a load
// shows it as partial.
func TestQuitWhileStreamingSavesPartial(t *testing.T) {
	tests := []struct {
		name string
		quit func(m *model)
	}{
		{"Ctrl+C twice", func(m *model) { press(m, tea.KeyCtrlC); press(m, tea.KeyCtrlC) }},
		{"/quit", func(m *model) {
			typeText(m, "/quit")
			press(m, tea.KeyEnter)
		}},
		{"signal", func(m *model) { update(m, signalMsg{}) }},
		{"Run's exit save (ctx end, panic)", func(m *model) { m.record(false); _ = m.files.saver.flush() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t)
			ready(m)
			_, id := send(t, m, fe, "tell me a story")
			events(m, engine.Token{Header: hdr(id, 0), Text: "Once upon a time", Tokens: 4})
			tc.quit(m)
			c := readConv(t, m.files.saver.currentPath())
			if len(c.Messages) != 2 {
				t.Fatalf("saved %d messages, want the question and the partial answer: %+v", len(c.Messages), c.Messages)
			}
			a := c.Messages[1]
			if a.Content != "Once upon a time" || !a.Partial || a.Note != noteInterrupted {
				t.Errorf("saved answer %+v, want the streamed text, partial, note %q", a, noteInterrupted)
			}
			m2, _ := newTestModel(t)
			ready(m2)
			typeText(m2, "/load "+m.files.saver.currentPath())
			enter(m2)
			if s := screen(m2); !strings.Contains(s, "Once upon a time") || !strings.Contains(s, "tiny-model · partial · interrupted") {
				t.Errorf("loaded partial answer not shown as partial:\n%s", s)
			}
		})
	}
}

// TestPeriodicSaveKeepsStreamedText: the save tick writes the answer as it
// streams, so a kill -9 loses at most the last few seconds.
func TestPeriodicSaveKeepsStreamedText(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	_, id := send(t, m, fe, "count")
	events(m, engine.Token{Header: hdr(id, 0), Text: "one two", Tokens: 2})
	update(m, draftSaveMsg{})
	if c := readConv(t, m.files.saver.currentPath()); len(c.Messages) != 2 || c.Messages[1].Content != "one two" || !c.Messages[1].Partial {
		t.Fatalf("save tick did not write the streaming answer: %+v", c.Messages)
	}
	// A finished answer is saved whole and not partial.
	events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "one two three"})
	if c := readConv(t, m.files.saver.currentPath()); c.Messages[1].Content != "one two three" || c.Messages[1].Partial || c.Messages[1].Note != "" {
		t.Fatalf("finished answer saved as %+v", c.Messages[1])
	}
}

// TestRunSignalsSavePartial sends each quitting signal to the test process
// while an answer streams: Run saves the partial answer and returns nil.
func TestRunSignalsSavePartial(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			fe := newFakeEngine()
			inR, inW := io.Pipe()
			defer inW.Close()
			out := &syncBuffer{}
			state := t.TempDir()
			errc := make(chan error, 1)
			go func() {
				errc <- Run(context.Background(), Options{
					Engine: fe, ModelName: "tiny", Settings: engine.DefaultSettings(),
					ConfigPath: writeConfig(t, `{}`), StateDir: state,
					NoColor: true, Input: inR, Output: out, Inline: true,
				})
			}()
			fe.ch <- engine.Ready{Info: engine.ModelInfo{Name: "tiny"}}
			waitFor(t, "the chat screen", func() bool { return strings.Contains(out.String(), "tiny is ready") })
			io.WriteString(inW, "story\r")
			var id engine.RequestID
			waitFor(t, "Generate", func() bool {
				for i, r := range fe.requests() {
					if _, ok := r.(engine.Generate); ok {
						id = engine.RequestID(i + 1)
						return true
					}
				}
				return false
			})
			fe.ch <- engine.Token{Header: engine.Header{ID: id, At: time.Now()}, Text: "Once upon", Tokens: 2}
			waitFor(t, "the streamed text", func() bool { return strings.Contains(out.String(), "Once upon") })
			if err := syscall.Kill(os.Getpid(), sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-errc:
				if err != nil {
					t.Fatalf("Run after %v: %v", sig, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("Run did not end on %v", sig)
			}
			files, _ := filepath.Glob(filepath.Join(state, "conversations", "*.json"))
			if len(files) != 1 {
				t.Fatalf("autosave files: %v", files)
			}
			c := readConv(t, files[0])
			if len(c.Messages) != 2 || c.Messages[1].Content != "Once upon" || !c.Messages[1].Partial {
				t.Errorf("after %v the file holds %+v, want the partial answer", sig, c.Messages)
			}
		})
	}
}

// summarizeTwoOfFive starts a /summarize of a pasted report on a ready
// chat and delivers the summaries of pieces 1 and 2 of 5 ("One.", "Two.");
// it returns the chat, the request's id and the pieces done.
func summarizeTwoOfFive(t *testing.T) (*model, engine.RequestID, []engine.SummaryPiece) {
	t.Helper()
	m, fe := newTestModel(t)
	ready(m)
	typeText(m, "/summarize ")
	paste(m, strings.Repeat("a paragraph of the report.\n\n", 80))
	press(m, tea.KeyEnter)
	_, id := lastOf[engine.Summarize](t, fe)
	done := []engine.SummaryPiece{piece(1, 5, "One."), piece(2, 5, "Two.")}
	events(m, engine.PieceSummary{Header: hdr(id, 0), Piece: done[0]}, engine.PieceSummary{Header: hdr(id, 0), Piece: done[1]})
	return m, id, done
}

// TestQuitDuringSummarizeKeepsPieces: every way out of the chat during a
// /summarize keeps the piece summaries finished so far as a partial answer
// (as Esc does), marked interrupted; the periodic save writes each piece
// as it comes, so a kill -9 keeps them too; a load shows them and sends
// them on.
func TestQuitDuringSummarizeKeepsPieces(t *testing.T) {
	tests := []struct {
		name string
		quit func(m *model)
	}{
		{"signal", func(m *model) { update(m, signalMsg{}) }},
		{"Ctrl+C twice", func(m *model) { press(m, tea.KeyCtrlC); press(m, tea.KeyCtrlC) }},
		{"Run's exit save (ctx end, panic)", func(m *model) { m.record(false); _ = m.files.saver.flush() }},
		{"save tick (a kill -9 after it)", func(m *model) { update(m, draftSaveMsg{}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, id, _ := summarizeTwoOfFive(t)
			events(m, engine.SummarizeProgress{Header: hdr(id, 0), Phase: engine.PhaseMap, Piece: 3, Pieces: 5})
			tc.quit(m)
			c := readConv(t, m.files.saver.currentPath())
			if len(c.Messages) != 2 {
				t.Fatalf("saved %d messages, want the /summarize and the pieces done: %+v", len(c.Messages), c.Messages)
			}
			a := c.Messages[1]
			if !a.Partial || a.Note != "interrupted after 2 of 5 pieces" || !strings.Contains(a.Content, "One.") || !strings.Contains(a.Content, "Two.") ||
				a.Summary == nil || len(a.Summary.Pieces) != 2 || !a.Summary.Inline {
				t.Fatalf("saved answer %+v, want the 2 pieces inline, partial, interrupted", a)
			}
			m2, fe2 := newTestModel(t)
			ready(m2)
			typeText(m2, "/load "+m.files.saver.currentPath())
			enter(m2)
			if s := screen(m2); !strings.Contains(s, "Two.") || !strings.Contains(s, "partial · interrupted after 2 of 5 pieces") {
				t.Errorf("loaded pieces not shown as partial:\n%s", s)
			}
			g, _ := send(t, m2, fe2, "and then?")
			if len(g.Conversation) != 3 || !strings.Contains(g.Conversation[0].Content, "Part 2 of 5:\nTwo.") {
				t.Errorf("after the load the pieces are not sent on: %+v", g.Conversation)
			}
		})
	}
	// Interrupted while combining, the final answer's text so far is the
	// answer and the pieces stay folded under it.
	m, fe := newTestModel(t)
	ready(m)
	typeText(m, "/summarize ")
	paste(m, strings.Repeat("a paragraph of the report.\n\n", 80))
	press(m, tea.KeyEnter)
	_, id := lastOf[engine.Summarize](t, fe)
	events(m, engine.PieceSummary{Header: hdr(id, 0), Piece: piece(1, 2, "One.")},
		engine.PieceSummary{Header: hdr(id, 0), Piece: piece(2, 2, "Two.")},
		engine.SummarizeProgress{Header: hdr(id, 0), Phase: engine.PhaseReduce, Piece: 1, Pieces: 1, Round: 1},
		engine.Token{Header: hdr(id, 0), Text: "In short", Tokens: 2})
	update(m, signalMsg{})
	c := readConv(t, m.files.saver.currentPath())
	if a := c.Messages[1]; a.Content != "In short" || !a.Partial || a.Note != noteInterrupted || a.Summary == nil || len(a.Summary.Pieces) != 2 || a.Summary.Inline {
		t.Errorf("interrupted while combining, saved %+v", a)
	}
}

// TestRunSignalsDuringSummarizeKeepPieces sends SIGTERM and SIGHUP to the
// test process while Run summarizes a paste in pieces on the real engine:
// the file keeps the pieces finished so far as a partial answer.
func TestRunSignalsDuringSummarizeKeepPieces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the tiny model")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			s := engine.DefaultSettings()
			s.MaxKV, s.MaxTokens, s.NoLoopDetect = 256, 6, true
			cs := startChat(t, t.TempDir(), s)
			io.WriteString(cs.in, "/summarize ")
			io.WriteString(cs.in, pasteStart+longDocument(60<<10)+pasteEnd)
			cs.waitScreen("the collapsed paste", "[pasted: ")
			cs.typeLine("")
			cs.waitScreen("the third piece", "summarize 3/")
			if err := syscall.Kill(os.Getpid(), sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-cs.errc:
				if err != nil {
					t.Fatalf("Run after %v: %v", sig, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("Run did not end on %v", sig)
			}
			c := readConv(t, savedConversation(t, cs.state))
			if len(c.Messages) != 2 {
				t.Fatalf("after %v the file holds %d messages, want the /summarize and its pieces", sig, len(c.Messages))
			}
			a := c.Messages[1]
			if !a.Partial || !strings.HasPrefix(a.Note, "interrupted after ") || a.Summary == nil || len(a.Summary.Pieces) < 2 ||
				!strings.Contains(a.Content, "**Part 2 of ") {
				t.Errorf("after %v the answer is saved as %+v, want the pieces done, partial, interrupted", sig, a)
			}
		})
	}
}

// TestSignalNoteWhenTheStopArrives: a signal (or a quit) during an answer
// or a /summarize labels what is saved "interrupted" even when the
// engine's answer to the Cancel, Done with the pieces done, comes before
// the chat has ended (QA: SIGHUP saved "stopped after 2 of 5 pieces",
// SIGTERM "interrupted after ..."); Esc says "stopped".
func TestSignalNoteWhenTheStopArrives(t *testing.T) {
	ways := []struct {
		name string
		stop func(m *model)
		want string // the note's first word
	}{
		{"signal", func(m *model) { update(m, signalMsg{}) }, noteInterrupted},
		{"Ctrl+C twice", func(m *model) { press(m, tea.KeyCtrlC); press(m, tea.KeyCtrlC) }, noteInterrupted},
		{"/quit", func(m *model) { command(m, "/quit") }, noteInterrupted},
		{"Esc", func(m *model) { press(m, tea.KeyEsc) }, "stopped"},
	}
	for _, w := range ways {
		t.Run("summarize/"+w.name, func(t *testing.T) {
			m, id, done := summarizeTwoOfFive(t)
			w.stop(m)
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled, Pieces: done})
			m.record(false) // Run's exit save
			_ = m.files.saver.flush()
			a := readConv(t, m.files.saver.currentPath()).Messages[1]
			if want := w.want + " after 2 of 5 pieces"; a.Note != want || !a.Partial {
				t.Errorf("saved note %q (partial %v), want %q", a.Note, a.Partial, want)
			}
		})
		t.Run("answer/"+w.name, func(t *testing.T) {
			m, fe := newTestModel(t)
			ready(m)
			_, id := send(t, m, fe, "tell me a story")
			events(m, engine.Token{Header: hdr(id, 0), Text: "Once upon", Tokens: 2})
			w.stop(m)
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled, Text: "Once upon"})
			m.record(false)
			_ = m.files.saver.flush()
			if a := readConv(t, m.files.saver.currentPath()).Messages[1]; a.Note != w.want || !a.Partial {
				t.Errorf("saved note %q (partial %v), want %q", a.Note, a.Partial, w.want)
			}
		})
	}
}
