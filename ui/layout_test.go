package ui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

// TestLayoutMarksTheTranscript: the Layout events of a Generate mark its
// messages and its answer; /stats lists them; Cleared forgets them.
func TestLayoutMarksTheTranscript(t *testing.T) {
	m, fe := newTestModel(t, withMaxKV(64))
	update(m, tea.WindowSizeMsg{Width: 140, Height: 50})
	ready(m)
	_, id := send(t, m, fe, "first")
	events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "one"})
	g, id := send(t, m, fe, "second question")
	if len(g.Conversation) != 3 {
		t.Fatalf("%d messages", len(g.Conversation))
	}
	// After the prefill: the first exchange is gone, the question cut.
	events(m, engine.Layout{Header: hdr(id, 0), Messages: []engine.MessageSpan{
		{Index: 0, Tokens: engine.Span{Start: 4, End: 5}, Trimmed: 1},
		{Index: 1, Tokens: engine.Span{Start: 9, End: 10}, Trimmed: 1},
		{Index: 2, Tokens: engine.Span{Start: 14, End: 16}, Live: 1, Trimmed: 1, CutAt: len("second ")},
	}})
	update(m, frameMsg{})
	s := flat(screen(m))
	for _, want := range []string{"you · trimmed", "tiny-model · trimmed", "you · cut", "✂ above: 1 of its 2 tokens is outside the live window"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen(m))
		}
	}
	// After the answer, which itself was cut while it grew.
	events(m, engine.Token{Header: hdr(id, time.Second), Text: "a long answer", Tokens: 3},
		engine.Layout{Header: hdr(id, time.Second), Messages: []engine.MessageSpan{
			{Index: 2, Tokens: engine.Span{Start: 14, End: 16}, Trimmed: 2},
			{Index: 3, Tokens: engine.Span{Start: 19, End: 22}, Live: 2, Trimmed: 1, CutAt: len("a ")},
		}},
		engine.Done{Header: hdr(id, time.Second), Reason: engine.DoneStop, Text: "a long answer"})
	command(m, "/stats")
	s = flat(screen(m))
	for _, want := range []string{"window #1 you, #2 tiny-model, #3 you: outside the live window (dimmed)", "#4 tiny-model: cut, 1 of its 3 tokens trimmed; the model sees the last 2"} {
		if !strings.Contains(s, want) {
			t.Errorf("/stats lacks %q:\n%s", want, screen(m))
		}
	}
	command(m, "/clear")
	_, id = send(t, m, fe, "fresh")
	events(m, engine.Cleared{Header: hdr(id, 0)})
	if s := screen(m); strings.Contains(s, "· trimmed") || strings.Contains(s, "· cut") {
		t.Errorf("marks survive /clear:\n%s", s)
	}
}

// TestTrimBoundaryEndToEnd: on the real engine under a 48-token cap,
// after a few turns the first messages are dimmed as trimmed, and /stats
// lists them.
func TestTrimBoundaryEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the tiny model")
	}
	s := engine.DefaultSettings()
	s.MaxKV, s.MaxTokens, s.NoLoopDetect = 48, 8, true
	cs := startChat(t, t.TempDir(), s)
	for i, q := range []string{"fox story", "a dog", "the river"} {
		cs.typeLine(q)
		// The answer's label gets its message number when it ends (the
		// "answer cut" notice is drawn again on every frame, so counting it
		// can run ahead of the answers).
		done := regexp.MustCompile(fmt.Sprintf(`tiny · max tokens( · [a-z]+)* #%d\b`, 2*(i+1)))
		deadline := time.Now().Add(60 * time.Second)
		for !done.MatchString(flat(cs.out.String())) {
			if time.Now().After(deadline) {
				t.Fatalf("answer %d did not end:\n%s", i+1, tail(cs.out.String(), 2000))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cs.typeLine("/stats")
	cs.waitScreen("the stats", "outside the live window (dimmed)")
	if out := flat(cs.out.String()); !strings.Contains(out, "window #1 you") || !strings.Contains(out, "you · trimmed") {
		t.Errorf("no trimmed messages:\n%s", tail(out, 3000))
	}
	cs.quit()
}
