package ui

import (
	"strings"
	"testing"

	"github.com/muesli/termenv"

	"mlxchat/engine"
	"mlxchat/themes"
)

func newTestTranscript(t *testing.T, width, height int) *transcript {
	t.Helper()
	th, err := themes.Get("dark", false)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := newTranscript(th, termenv.Ascii, width)
	if err != nil {
		t.Fatal(err)
	}
	tr.label = "tiny"
	tr.resize(width, width, height)
	return &tr
}

func trScreen(tr *transcript) string {
	tr.refresh()
	return stripANSI(tr.vp.View())
}

// TestTranscriptConversation: only user turns and finished answers are
// sent, in order, with the index of their turn.
func TestTranscriptConversation(t *testing.T) {
	tr := newTestTranscript(t, 60, 20)
	tr.add(turn{kind: turnUser, content: "q1", display: "q1"})
	tr.add(turn{kind: turnAssistant, content: "a1"})
	tr.addInfo("/help output")
	tr.add(turn{kind: turnError, content: "boom"})
	tr.add(turn{kind: turnUser, content: "q2 " + strings.Repeat("x", 2000), display: "q2 [pasted: 500 tokens, 2 KB]"})
	tr.add(turn{kind: turnAssistant, stream: &stream{text: "streaming"}})
	conv, at := tr.conversation()
	want := []engine.Message{
		{Role: engine.RoleUser, Content: "q1"},
		{Role: engine.RoleAssistant, Content: "a1"},
		{Role: engine.RoleUser, Content: "q2 " + strings.Repeat("x", 2000)},
	}
	if len(conv) != len(want) {
		t.Fatalf("conversation %d messages, want %d: %#v", len(conv), len(want), conv)
	}
	for i := range want {
		if conv[i] != want[i] {
			t.Errorf("message %d = %#v, want %#v", i, conv[i], want[i])
		}
	}
	if got := []int{0, 1, 4}; len(at) != 3 || at[0] != got[0] || at[1] != got[1] || at[2] != got[2] {
		t.Errorf("turn indexes %v, want %v", at, got)
	}
}

// TestTranscriptRenderCache: a finished turn is rendered once and reused;
// a resize or a theme change renders it again; a streaming answer is
// rendered on every refresh.
func TestTranscriptRenderCache(t *testing.T) {
	tr := newTestTranscript(t, 60, 20)
	i := tr.add(turn{kind: turnAssistant, content: "**bold** answer"})
	s := trScreen(tr)
	if !strings.Contains(s, "tiny") || !strings.Contains(s, "bold answer") || strings.Contains(s, "**") {
		t.Fatalf("answer not rendered as markdown:\n%s", s)
	}
	// A cached rendering is used as is: poison it and see it shown.
	tr.turns[i].out = "CACHED"
	if s := trScreen(tr); !strings.Contains(s, "CACHED") {
		t.Fatalf("finished turn rendered again instead of from its cache:\n%s", s)
	}
	tr.resize(50, 50, 20)
	if s := trScreen(tr); strings.Contains(s, "CACHED") {
		t.Fatalf("resize kept the old rendering:\n%s", s)
	}
	th, _ := themes.Get("light", false)
	tr.turns[i].out = "CACHED"
	if err := tr.setTheme(th); err != nil {
		t.Fatal(err)
	}
	if s := trScreen(tr); strings.Contains(s, "CACHED") {
		t.Fatalf("theme change kept the old rendering:\n%s", s)
	}
	j := tr.add(turn{kind: turnAssistant, stream: &stream{}})
	if s := trScreen(tr); !strings.Contains(s, "…") {
		t.Errorf("empty streaming answer shows no placeholder:\n%s", s)
	}
	tr.turns[j].stream.text = "growing"
	if s := trScreen(tr); !strings.Contains(s, "growing") {
		t.Errorf("streaming answer not rendered again:\n%s", s)
	}
}

// TestTranscriptUserTurn: pastes show as their labels, control bytes as
// pictures, long text wraps inside the width.
func TestTranscriptUserTurn(t *testing.T) {
	tr := newTestTranscript(t, 40, 20)
	label := "[pasted: 9 tokens, 1 KB]"
	tr.add(turn{kind: turnUser, content: "see " + strings.Repeat("doc ", 200), display: "see " + label + " and\x1b[2J " + strings.Repeat("word ", 20),
		pastes: []pasteBlock{{Label: label, Content: strings.Repeat("doc ", 200)}}})
	s := trScreen(tr)
	if !strings.Contains(s, "you") || !strings.Contains(s, label) || strings.Contains(s, "doc doc") {
		t.Errorf("user turn not shown with its collapsed paste:\n%s", s)
	}
	if !strings.Contains(s, "␛[2J") {
		t.Errorf("control bytes not shown as pictures:\n%s", s)
	}
	for _, l := range strings.Split(s, "\n") {
		if w := textWidth(l); w > 40 {
			t.Errorf("line %q is %d cells, wider than 40", l, w)
		}
	}
}

// TestTranscriptRelabel renames a paste block in a sent turn.
func TestTranscriptRelabel(t *testing.T) {
	tr := newTestTranscript(t, 60, 20)
	old, label := "[pasted: 1.0 MB, counting tokens…]", "[pasted: 4,242 tokens, 1.0 MB]"
	tr.add(turn{kind: turnUser, content: "x", display: "see " + old, pastes: []pasteBlock{{Label: old, Content: "x"}}})
	trScreen(tr)
	tr.relabel(old, label)
	if s := trScreen(tr); !strings.Contains(s, label) || strings.Contains(s, "counting") {
		t.Errorf("relabel not shown:\n%s", s)
	}
	if tr.turns[0].pastes[0].Label != label {
		t.Errorf("paste block label %q", tr.turns[0].pastes[0].Label)
	}
}
