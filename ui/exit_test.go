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
