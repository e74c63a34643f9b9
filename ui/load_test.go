package ui

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

// TestLoadRefusesNonRegularFiles: /load of a device, a FIFO with no
// writer, a directory or a huge file answers at once with one line naming
// the file and what was expected, and the chat is unchanged.
func TestLoadRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(maxConversationBytes + 1) // sparse: no disk used
	f.Close()
	sub := filepath.Join(dir, "sub.json")
	os.Mkdir(sub, 0o700)
	tests := []struct{ path, want string }{
		{"/dev/zero", "/dev/zero is a character device, expected a regular file"},
		{fifo, fifo + " is a named pipe (FIFO), expected a regular file"},
		{huge, huge + " is 268435457 bytes, expected at most 268435456"}, // one byte over: in bytes, not "256.0 MiB, expected at most 256.0 MiB"
		{sub, sub + " is a directory, expected a conversation file"},
		{dir, dir + " is a directory, expected a conversation file"},
		{filepath.Join(dir, "none"), `no file "` + filepath.Join(dir, "none") + `"`},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			m, fe := newTestModel(t)
			ready(m)
			_, id := send(t, m, fe, "keep me")
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "kept"})
			typeText(m, "/load "+tc.path)
			start := time.Now()
			cmd := m.handleKey(tea.KeyMsg{Type: tea.KeyEnter})
			if cmd == nil {
				t.Fatal("/load returned no read command")
			}
			done := make(chan tea.Msg, 1)
			go func() { done <- cmd() }()
			select {
			case msg := <-done:
				update(m, msg)
			case <-time.After(5 * time.Second):
				t.Fatalf("reading %s blocks", tc.path)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("refusing %s took %v", tc.path, d)
			}
			if s := noticeOf(screen(m)); !strings.Contains(s, "✗ /load: "+tc.want) {
				t.Errorf("notice %q, want %q", s, tc.want)
			}
			if conv := m.conversation(); len(conv) != 2 || conv[1].Content != "kept" {
				t.Errorf("conversation changed: %+v", conv)
			}
			wantRecalled(t, m, "/load "+tc.path)
		})
	}
}

// TestLoadDoesNotBlockTheUI: the read happens in the command, never in
// Update, so keys typed while a file is read are handled.
func TestLoadDoesNotBlockTheUI(t *testing.T) {
	m, _ := newTestModel(t)
	ready(m)
	typeText(m, "/load /dev/zero")
	press(m, tea.KeyEnter) // Update returns without running the read
	if m.jobs.loading == "" || !strings.Contains(screen(m), "reading /dev/zero…") {
		t.Fatalf("no read in progress:\n%s", screen(m))
	}
	typeText(m, "typed meanwhile")
	if m.ed.value() != "typed meanwhile" {
		t.Errorf("editor %q while a load runs", m.ed.value())
	}
}

func TestRepairConversation(t *testing.T) {
	u := func(s string) savedMessage { return savedMessage{Role: "user", Content: s} }
	a := func(s string) savedMessage { return savedMessage{Role: "assistant", Content: s} }
	tests := []struct {
		name       string
		in         []savedMessage
		want       []savedMessage
		repairs    []string
		unanswered string
	}{
		{"fine", []savedMessage{u("q"), a("r")}, []savedMessage{u("q"), a("r")}, nil, ""},
		{"ends with a question", []savedMessage{u("q"), a("r"), u("next")}, []savedMessage{u("q"), a("r")},
			[]string{"the last message had no answer and is back in the editor"}, "next"},
		{"two questions in a row", []savedMessage{u("q1"), u("q2"), a("r")}, []savedMessage{u("q1\n\nq2"), a("r")},
			[]string{"merged 1 user message into the user message before it"}, ""},
		{"crash: question, question, question", []savedMessage{u("q1"), a("r"), u("q2"), u("q3")}, []savedMessage{u("q1"), a("r")},
			[]string{"merged 1 user message into the user message before it", "the last message had no answer and is back in the editor"}, "q2\n\nq3"},
		{"two answers in a row", []savedMessage{u("q"), a("r1"), {Role: "assistant", Content: "r2", Partial: true, Note: "stopped"}},
			[]savedMessage{u("q"), {Role: "assistant", Content: "r1\n\nr2", Partial: true, Note: "stopped"}},
			[]string{"merged 1 assistant message into the assistant message before it"}, ""},
		{"answer first", []savedMessage{a("hello"), u("q"), a("r")},
			[]savedMessage{{Role: "assistant", Content: "hello", orphan: true}, u("q"), a("r")},
			[]string{"1 answer without a question kept for display only"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fixed, repairs, un := repairConversation(conversationFile{Messages: tc.in})
			if !reflect.DeepEqual(fixed.Messages, tc.want) {
				t.Errorf("messages %+v, want %+v", fixed.Messages, tc.want)
			}
			if !reflect.DeepEqual(repairs, tc.repairs) {
				t.Errorf("repairs %q, want %q", repairs, tc.repairs)
			}
			got := ""
			if un != nil {
				got = un.Content
			}
			if got != tc.unanswered {
				t.Errorf("unanswered %q, want %q", got, tc.unanswered)
			}
			// What is sent always alternates, starting with a question.
			for i, sm := range fixed.Messages {
				if sm.orphan {
					continue
				}
				if want := []string{"user", "assistant"}[(i-orphansBefore(fixed.Messages, i))%2]; sm.Role != want {
					t.Errorf("message %d role %s, want %s", i, sm.Role, want)
				}
			}
		})
	}
}

func orphansBefore(msgs []savedMessage, i int) int {
	n := 0
	for _, sm := range msgs[:i] {
		if sm.orphan {
			n++
		}
	}
	return n
}

// TestLoadRepairPutsUnansweredBack: a file that ends with a question loads
// with the question back in the editor (above the file's draft), a long
// one collapsed again, and the notice says what was repaired.
func TestLoadRepairPutsUnansweredBack(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	doc := strings.Repeat("a long document line\n", 80)
	path := filepath.Join(t.TempDir(), "crash.json")
	if err := saveConversation(path, conversationFile{Messages: []savedMessage{
		{Role: "user", Content: "q1"}, {Role: "assistant", Content: "r1"},
		{Role: "user", Content: "summarize:\n" + doc}, {Role: "user", Content: "please"},
	}, Draft: "draft text"}); err != nil {
		t.Fatal(err)
	}
	typeText(m, "/load "+path)
	enter(m)
	if s := noticeOf(screen(m)); !strings.Contains(s, "repaired: merged 1 user message") || !strings.Contains(s, "back in the editor") {
		t.Errorf("notice %q does not say what was repaired", s)
	}
	v := m.ed.value()
	if !strings.HasPrefix(v, "[pasted") || !strings.HasSuffix(v, "\ndraft text") {
		t.Errorf("editor %q, want the collapsed question, then the draft", v)
	}
	press(m, tea.KeyEnter)
	g, _ := lastOf[engine.Generate](t, fe)
	want := []engine.Message{{Role: "user", Content: "q1"}, {Role: "assistant", Content: "r1"},
		{Role: "user", Content: "summarize:\n" + doc + "\n\nplease\ndraft text"}}
	if !reflect.DeepEqual(g.Conversation, want) {
		t.Errorf("sent %+v", g.Conversation)
	}
}

// answerLabels is the label line of message #2 and the title line of its
// fold (reasoning or pieces; "" when none), as the screen shows them.
func answerLabels(t *testing.T, m *model) (label, fold string) {
	t.Helper()
	for _, l := range strings.Split(screen(m), "\n") {
		l = strings.TrimRight(l, " ")
		switch {
		case strings.HasSuffix(l, "#2"):
			label = l
		case strings.Contains(l, "▸ "):
			fold = strings.TrimSpace(l)
		}
	}
	if label == "" {
		t.Fatalf("no label line for #2:\n%s", screen(m))
	}
	return label, fold
}

// TestLabelsSurviveReload: however an answer ended, its label (and the
// title of its reasoning fold) after /load is the one the chat showed
// live: an answer cut by the token limit is "max tokens", not "partial ·
// max tokens" as QA found, since the cut is no interruption.
func TestLabelsSurviveReload(t *testing.T) {
	doc := strings.Repeat("a paragraph of the report.\n\n", 80)
	tests := []struct {
		name string
		run  func(t *testing.T, m *model, fe *fakeEngine)
		want string // the live label's note
	}{
		{"max tokens", func(t *testing.T, m *model, fe *fakeEngine) {
			command(m, "/max 40")
			_, id := send(t, m, fe, "hi")
			events(m, engine.Token{Header: hdr(id, 0), Text: "a long", Tokens: 40},
				engine.Done{Header: hdr(id, 0), Reason: engine.DoneMaxTokens, Text: "a long", Tokens: 40})
		}, "max tokens"},
		{"max tokens while thinking", func(t *testing.T, m *model, fe *fakeEngine) {
			command(m, "/max 30")
			_, id := send(t, m, fe, "hi")
			events(m, engine.Token{Header: hdr(id, 0), Text: "The user greets me. I should", Tokens: 30, Reasoning: true},
				engine.Done{Header: hdr(id, 0), Reason: engine.DoneMaxTokens, Reasoning: "The user greets me. I should", Tokens: 30})
		}, "max tokens"},
		{"stopped", func(t *testing.T, m *model, fe *fakeEngine) {
			_, id := send(t, m, fe, "hi")
			events(m, engine.Token{Header: hdr(id, 0), Text: "half", Tokens: 1})
			press(m, tea.KeyEsc)
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled, Text: "half"})
		}, "stopped"},
		{"repeating", func(t *testing.T, m *model, fe *fakeEngine) {
			_, id := send(t, m, fe, "hi")
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneLoop, Text: "la la la"})
		}, "repeating"},
		{"failed", func(t *testing.T, m *model, fe *fakeEngine) {
			_, id := send(t, m, fe, "hi")
			events(m, engine.Token{Header: hdr(id, 0), Text: "some", Tokens: 1},
				engine.Error{Header: hdr(id, 0), Err: errors.New("boom"), Text: "some"})
		}, "failed"},
		{"summarize stopped in its pieces", func(t *testing.T, m *model, fe *fakeEngine) {
			typeText(m, "/summarize ")
			paste(m, doc)
			press(m, tea.KeyEnter)
			_, id := lastOf[engine.Summarize](t, fe)
			press(m, tea.KeyEsc)
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled, Pieces: []engine.SummaryPiece{piece(1, 5, "One."), piece(2, 5, "Two.")}})
		}, "stopped after 2 of 5 pieces"},
		{"summarize cut at the token limit", func(t *testing.T, m *model, fe *fakeEngine) {
			command(m, "/max 20")
			typeText(m, "/summarize ")
			paste(m, doc)
			press(m, tea.KeyEnter)
			_, id := lastOf[engine.Summarize](t, fe)
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneMaxTokens, Text: "In short",
				Pieces: []engine.SummaryPiece{piece(1, 2, "One."), piece(2, 2, "Two.")}})
		}, "max tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: 120, Height: 40})
			readyThinking(m, true)
			tc.run(t, m, fe)
			label, fold := answerLabels(t, m)
			if !strings.Contains(label, "qwen3-tiny · "+tc.want+" ") {
				t.Fatalf("live label %q, want the note %q", label, tc.want)
			}
			m2, _ := newTestModel(t)
			update(m2, tea.WindowSizeMsg{Width: 120, Height: 40})
			readyThinking(m2, true)
			typeText(m2, "/load "+m.files.saver.currentPath())
			enter(m2)
			label2, fold2 := answerLabels(t, m2)
			if label2 != label {
				t.Errorf("label after /load\n %q\nwant the live one\n %q", label2, label)
			}
			if fold2 != fold {
				t.Errorf("fold title after /load %q, want the live one %q", fold2, fold)
			}
		})
	}
}

// TestFindConversation: a bare /load NAME opens the conversation that
// /save NAME wrote and the exit line named, in the conversations folder,
// even when the current directory holds a file of that name (QA: /load
// looked in the current directory first); a name found only in the
// current directory, and a path, are still taken as given.
func TestFindConversation(t *testing.T) {
	conv := t.TempDir()
	cwd := t.TempDir()
	t.Chdir(cwd)
	for _, f := range []string{filepath.Join(conv, "both.json"), filepath.Join(cwd, "both.json"), filepath.Join(cwd, "here.json"), filepath.Join(conv, "saved.json")} {
		if err := os.WriteFile(f, []byte(`{"messages":[]}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	abs := filepath.Join(cwd, "here.json")
	for _, tc := range []struct{ name, want, wantErr string }{
		{"both", filepath.Join(conv, "both.json"), ""},
		{"both.json", filepath.Join(conv, "both.json"), ""},
		{"saved", filepath.Join(conv, "saved.json"), ""},
		{"here", "here.json", ""},
		{"./both.json", "./both.json", ""},
		{abs, abs, ""},
		{"missing", "", `no file "missing" here or in ` + conv},
	} {
		got, err := findConversation(conv, tc.name)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("findConversation(%q): %q, %v; want error %q", tc.name, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("findConversation(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
