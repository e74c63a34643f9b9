package ui

import (
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

// lastUserMessage is the content of the last message of the last Generate
// sent, and how many Generates there were.
func lastUserMessage(t *testing.T, fe *fakeEngine) (string, int) {
	t.Helper()
	g, _ := lastOf[engine.Generate](t, fe)
	return g.Conversation[len(g.Conversation)-1].Content, countOf[engine.Generate](fe)
}

// TestQueuedMessage: a message sent (Enter) while an answer runs leaves
// the editor, so that what is typed next is not glued onto it (the QA
// screen showed "queued msg/kv 4"); it is sent when the answer ends by
// itself, and comes back into the editor, not sent, when the answer is
// stopped or fails. Nothing typed is lost on any path.
func TestQueuedMessage(t *testing.T) {
	stop := func(m *model, id engine.RequestID) {
		press(m, tea.KeyEsc)
		events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled, Text: "partial"})
	}
	finish := func(m *model, id engine.RequestID) {
		events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "the answer"})
	}
	tests := []struct {
		name string
		// during runs while the first answer streams, after it has queued
		// "queued msg"; end ends the answer.
		during, end func(m *model, id engine.RequestID)
		// wantSent is the message sent when the answer ends ("" = none);
		// wantEditor what the editor then holds.
		wantSent, wantEditor string
		wantNotice           string // a part of the notice after the end
		noToken              bool   // the answer has streamed nothing
	}{
		{
			name:   "a command typed next runs as typed, the message goes when the answer ends",
			during: func(m *model, _ engine.RequestID) { command(m, "/temp 0.5") },
			end:    finish, wantSent: "queued msg",
		},
		{
			name:   "a second message joins the first",
			during: func(m *model, _ engine.RequestID) { command(m, "and more") },
			end:    finish, wantSent: "queued msg\nand more",
		},
		{
			name: "cut by the token limit, it is sent and the cut is still said",
			end: func(m *model, id engine.RequestID) {
				events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneMaxTokens, Text: "cut"})
			},
			wantSent: "queued msg", wantNotice: "answer cut at /max",
		},
		{
			name: "Esc stops the answer and puts it back",
			end:  stop, wantEditor: "queued msg", wantNotice: "your queued message is back in the editor, not sent",
		},
		{
			name: "a failed answer puts it back",
			end: func(m *model, id engine.RequestID) {
				events(m, engine.Error{Header: hdr(id, 0), Err: errors.New("boom"), Text: "some"})
			},
			wantEditor: "queued msg", wantNotice: "your queued message is back in the editor",
		},
		{
			name: "stopped before the answer began, the question comes back above it",
			end: func(m *model, id engine.RequestID) {
				press(m, tea.KeyEsc)
				events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled})
			},
			wantEditor: "first\nqueued msg", noToken: true,
			wantNotice: "your message is back in the editor, above what you typed meanwhile · your queued message is back",
		},
		{
			name: "a message sent after Esc goes once the answer has stopped",
			end: func(m *model, id engine.RequestID) {
				press(m, tea.KeyEsc)
				command(m, "after the stop")
				events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled, Text: "partial"})
			},
			wantSent: "queued msg\nafter the stop",
		},
		{
			name:   "text typed but not sent when the answer ends: the queued message waits for Enter",
			during: func(m *model, _ engine.RequestID) { typeText(m, "/te") },
			end:    finish, wantEditor: "/te", wantNotice: "the answer ended; your queued message waits: Enter sends it",
		},
		{
			name:   "a message typed but not sent when the answer ends joins the queued one at Enter",
			during: func(m *model, _ engine.RequestID) { typeText(m, "typed after") },
			end: func(m *model, id engine.RequestID) {
				finish(m, id)
				press(m, tea.KeyEnter)
			},
			wantSent: "queued msg\ntyped after",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t)
			ready(m)
			_, id := send(t, m, fe, "first")
			if !tc.noToken {
				events(m, engine.Token{Header: hdr(id, 0), Text: "stream", Tokens: 1})
			}
			command(m, "queued msg")
			if v := m.ed.value(); v != "" {
				t.Fatalf("the queued message stayed in the editor: %q", v)
			}
			if n := countOf[engine.Generate](fe); n != 1 {
				t.Fatalf("%d Generates while the answer runs", n)
			}
			if n := noticeOf(screen(m)); !strings.HasPrefix(n, "• queued: your message is sent when the answer ends") {
				t.Errorf("notice %q", n)
			}
			if s := screen(m); !strings.Contains(s, "1 msg queued") {
				t.Errorf("the status line does not say a message is queued:\n%s", s)
			}
			if tc.during != nil {
				tc.during(m, id)
			}
			tc.end(m, id)
			got, n := lastUserMessage(t, fe)
			switch {
			case tc.wantSent != "" && (n != 2 || got != tc.wantSent):
				t.Errorf("sent %d Generates, the last with %q; want %q sent", n, got, tc.wantSent)
			case tc.wantSent == "" && n != 1:
				t.Errorf("sent %q, want it back in the editor", got)
			}
			if v := m.ed.value(); v != tc.wantEditor {
				t.Errorf("editor %q, want %q", v, tc.wantEditor)
			}
			if n := m.st.notice.text + m.st.notice.hint; !strings.Contains(n, tc.wantNotice) {
				t.Errorf("notice %q lacks %q", n, tc.wantNotice)
			}
			if tc.wantSent == "" && tc.wantEditor == "/te" {
				// The command typed runs first; then Enter on the empty
				// editor sends the message that waited.
				typeText(m, "mp 0.5")
				press(m, tea.KeyEnter)
				if m.set.cur.Temperature != 0.5 || countOf[engine.Generate](fe) != 1 {
					t.Fatalf("the command typed did not run alone (temp %g)", m.set.cur.Temperature)
				}
				if s := screen(m); !strings.Contains(s, queueWaitPlaceholder) {
					t.Errorf("the editor does not say Enter sends the queued message:\n%s", s)
				}
				press(m, tea.KeyEnter)
				if got, n := lastUserMessage(t, fe); n != 2 || got != "queued msg" {
					t.Errorf("Enter sent %q (%d Generates)", got, n)
				}
			}
			if m.set.cur.Temperature == 0.5 && strings.Contains(m.ed.value(), "/temp") {
				t.Error("the command was glued")
			}
		})
	}
}

// TestQueuedMessageSaved: a queued message is saved with the draft, so a
// quit or a signal during the answer keeps it, with its pastes, and /load
// puts it back into the editor.
func TestQueuedMessageSaved(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	_, id := send(t, m, fe, "first")
	events(m, engine.Token{Header: hdr(id, 0), Text: "stream", Tokens: 1})
	typeText(m, "look: ")
	doc := strings.Repeat("a line of the pasted log\n", 50)
	paste(m, doc)
	press(m, tea.KeyEnter)
	typeText(m, "typed after")
	update(m, signalMsg{})
	c := readConv(t, m.files.saver.currentPath())
	if !strings.HasPrefix(c.Draft, "look: [pasted: ") || !strings.HasSuffix(c.Draft, "\ntyped after") || len(c.DraftPastes) != 1 || c.DraftPastes[0].Content != doc {
		t.Fatalf("saved draft %q with %d pastes, want the queued message and the text typed after it", c.Draft, len(c.DraftPastes))
	}
	m2, _ := newTestModel(t)
	ready(m2)
	typeText(m2, "/load "+m.files.saver.currentPath())
	enter(m2)
	if got := m2.ed.full(); got != "look: "+doc+"\ntyped after" {
		t.Errorf("/load put %q into the editor", got)
	}
}

// TestQueuedWhileLoading: a message sent while the model loads is queued
// and sent once it is ready; Esc puts it back instead.
func TestQueuedWhileLoading(t *testing.T) {
	for _, esc := range []bool{false, true} {
		m, fe := newTestModel(t)
		events(m, engine.ModelLoading{Stage: "mapping weights"})
		command(m, "early")
		if m.ed.value() != "" || len(fe.requests()) != 0 {
			t.Fatalf("editor %q, requests %v", m.ed.value(), fe.requests())
		}
		if n := noticeOf(screen(m)); !strings.HasPrefix(n, "• queued: your message is sent when the model is ready") {
			t.Errorf("notice %q", n)
		}
		command(m, "/temp 0.3") // runs as typed
		if m.set.cur.Temperature != 0.3 {
			t.Errorf("the command typed after the queued message did not run")
		}
		if esc {
			press(m, tea.KeyEsc)
		}
		ready(m)
		n := countOf[engine.Generate](fe)
		switch {
		case esc && (n != 0 || m.ed.value() != "early"):
			t.Errorf("after Esc: %d Generates, editor %q", n, m.ed.value())
		case !esc && n != 1:
			t.Errorf("the queued message was not sent when the model was ready")
		case !esc:
			if got, _ := lastUserMessage(t, fe); got != "early" {
				t.Errorf("sent %q", got)
			}
		}
	}
}

// TestQueuedSummarize: a "/summarize" line holding a paste, sent (Enter)
// while an answer streams, is queued as a message is, not left in the
// editor (where what was typed next was glued onto it): it starts when
// the answer ends by itself, in order with the messages queued around
// it, comes back into the editor with its paste on Esc, and is saved with
// the draft by a quit. Nothing typed or pasted is lost on any path.
func TestQueuedSummarize(t *testing.T) {
	doc := strings.Repeat("A line of the long pasted report.\n", 60)
	finish := func(m *model, id engine.RequestID) {
		events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "the answer"})
	}
	tests := []struct {
		name   string
		before string // a message queued before the /summarize ("" = none)
		after  string // a message queued after it ("" = none)
		end    func(t *testing.T, m *model, fe *fakeEngine, id engine.RequestID)
	}{
		{
			name: "it starts when the answer ends; a command typed meanwhile runs alone",
			end: func(t *testing.T, m *model, fe *fakeEngine, id engine.RequestID) {
				command(m, "/temp 0.5")
				if m.set.cur.Temperature != 0.5 || m.ed.value() != "" {
					t.Fatalf("the command typed after the /summarize did not run alone: temp %g, editor %q", m.set.cur.Temperature, m.ed.value())
				}
				finish(m, id)
				s, _ := lastOf[engine.Summarize](t, fe)
				if s.Document != doc || s.Instruction != "in three bullets" {
					t.Fatalf("Summarize of %d bytes with instruction %q", len(s.Document), s.Instruction)
				}
			},
		},
		{
			name:  "a message queued after it goes once the summary ends",
			after: "and then this",
			end: func(t *testing.T, m *model, fe *fakeEngine, id engine.RequestID) {
				if s := screen(m); !strings.Contains(s, "2 queued") {
					t.Errorf("the status line does not say two entries are queued:\n%s", s)
				}
				finish(m, id)
				_, sid := lastOf[engine.Summarize](t, fe)
				if n := countOf[engine.Generate](fe); n != 1 {
					t.Fatalf("the message went before the /summarize ended (%d Generates)", n)
				}
				events(m, engine.Done{Header: hdr(sid, 0), Reason: engine.DoneStop, Text: "the summary"})
				if got, n := lastUserMessage(t, fe); n != 2 || got != "and then this" {
					t.Fatalf("after the summary: %d Generates, the last %q", n, got)
				}
			},
		},
		{
			name:   "a message queued before it goes first, then the /summarize",
			before: "first queued",
			end: func(t *testing.T, m *model, fe *fakeEngine, id engine.RequestID) {
				finish(m, id)
				got, n := lastUserMessage(t, fe)
				if n != 2 || got != "first queued" || countOf[engine.Summarize](fe) != 0 {
					t.Fatalf("%d Generates (the last %q), %d Summarizes: want the queued message alone first", n, got, countOf[engine.Summarize](fe))
				}
				_, gid := lastOf[engine.Generate](t, fe)
				finish(m, gid)
				if s, _ := lastOf[engine.Summarize](t, fe); s.Document != doc {
					t.Fatalf("Summarize of %q", s.Document)
				}
			},
		},
		{
			name:  "Esc stops the answer and puts everything back, in order",
			after: "and then this",
			end: func(t *testing.T, m *model, fe *fakeEngine, id engine.RequestID) {
				press(m, tea.KeyEsc)
				events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled, Text: "partial"})
				if got, want := m.ed.full(), "/summarize in three bullets "+doc+"\nand then this"; got != want {
					t.Fatalf("editor %q, want %q", got, want)
				}
				if countOf[engine.Summarize](fe) != 0 || countOf[engine.Generate](fe) != 1 {
					t.Fatalf("requests after Esc: %v", fe.requests())
				}
			},
		},
		{
			name: "a quit saves it with its paste",
			end: func(t *testing.T, m *model, fe *fakeEngine, id engine.RequestID) {
				typeText(m, "typed after")
				update(m, signalMsg{})
				c := readConv(t, m.files.saver.currentPath())
				if !strings.HasPrefix(c.Draft, "/summarize in three bullets [pasted: ") || !strings.HasSuffix(c.Draft, "\ntyped after") ||
					len(c.DraftPastes) != 1 || c.DraftPastes[0].Content != doc {
					t.Fatalf("saved draft %q with %d pastes", c.Draft, len(c.DraftPastes))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t)
			ready(m)
			_, id := send(t, m, fe, "first")
			events(m, engine.Token{Header: hdr(id, 0), Text: "stream", Tokens: 1})
			if tc.before != "" {
				command(m, tc.before)
			}
			typeText(m, "/summarize in three bullets ")
			paste(m, doc)
			press(m, tea.KeyEnter)
			if v := m.ed.value(); v != "" {
				t.Fatalf("the /summarize stayed in the editor: %q", v)
			}
			if n := noticeOf(screen(m)); !strings.Contains(n, "queued: your /summarize starts ") {
				t.Errorf("notice %q", n)
			}
			if tc.before == "" && !strings.Contains(screen(m), "/summarize queued") {
				t.Errorf("the status line does not say the /summarize is queued:\n%s", screen(m))
			}
			if tc.after != "" {
				command(m, tc.after)
			}
			if len(fe.requests()) != 1 {
				t.Fatalf("requests while the answer runs: %v", fe.requests())
			}
			tc.end(t, m, fe, id)
		})
	}
}
