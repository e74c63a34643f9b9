package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
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
	tr.add(turn{kind: turnUser, content: "q2 " + strings.Repeat("x", 2000), display: "q2 [pasted: 500 tokens, 2 KiB]"})
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
	label := "[pasted: 9 tokens, 1 KiB]"
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
	old, label := "[pasted: 1.0 MiB, counting tokens…]", "[pasted: 4,242 tokens, 1.0 MiB]"
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

// layoutOf is a Layout placing messages of the given token lengths one
// after the other from position 0, with live the positions from liveFrom
// on (and the sink, the first 4).
func layoutOf(lens []int, liveFrom int, cutAt map[int]int) engine.Layout {
	var l engine.Layout
	pos := 0
	for i, n := range lens {
		s := engine.Span{Start: pos, End: pos + n}
		live := max(0, s.End-max(s.Start, liveFrom))
		l.Messages = append(l.Messages, engine.MessageSpan{Index: i, Tokens: s, Live: live, Trimmed: n - live, CutAt: cutAt[i]})
		pos += n
	}
	l.Seen = pos
	l.Spans = []engine.Span{{Start: 0, End: 4}, {Start: liveFrom, End: pos}}
	return l
}

// TestTranscriptTrimBoundary: a message wholly outside the live window is
// dimmed and marked trimmed; the cut one shows a marker line where the
// model's view begins (in its text, or after a paste's label when the cut
// lies inside the paste); /stats lists both; an emptied cache forgets it.
func TestTranscriptTrimBoundary(t *testing.T) {
	tr := newTestTranscript(t, 100, 40)
	label := "[pasted: 3,005 tokens, 3 KiB]"
	doc := strings.Repeat("d", 3000)
	tr.add(turn{kind: turnUser, content: "first question", display: "first question"})
	tr.add(turn{kind: turnAssistant, content: "first answer"})
	tr.add(turn{kind: turnUser, content: "read " + doc + " now", display: "read " + label + " now", pastes: []pasteBlock{{Label: label, Content: doc}}})
	tr.add(turn{kind: turnAssistant, content: "line one\n\nline two\n\nline three"})
	_, turnOf := tr.conversation()
	tr.applyLayout(layoutOf([]int{3, 3, 3005, 12}, 2950, map[int]int{2: 2900}), turnOf, -1)
	s := flat(trScreen(tr))
	for _, want := range []string{
		"you · trimmed", "tiny · trimmed", "you · cut",
		"✂ the model sees only the last 61 of this message's 3,005 tokens; the start is outside the live window",
		"#1", "#4",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	if strings.Index(s, label) > strings.Index(s, "✂ the model sees") {
		t.Errorf("the marker comes before the paste it cuts:\n%s", s)
	}
	// A cut in plain text: the marker sits at the byte CutAt.
	tr.applyLayout(engine.Layout{Messages: []engine.MessageSpan{{Index: 3, Tokens: engine.Span{Start: 3011, End: 3023}, Live: 6, Trimmed: 6, CutAt: len("line one\n\n")}}}, turnOf, -1)
	s = flat(trScreen(tr))
	one, mark, two := strings.Index(s, "line one"), strings.Index(s, "✂ above: 6 of its 12 tokens are outside the live window; the model sees from here"), strings.Index(s, "line two")
	if one < 0 || mark < 0 || two < 0 || !(one < mark && mark < two) {
		t.Errorf("marker not between the trimmed and the live text (%d %d %d):\n%s", one, mark, two, s)
	}
	lines := tr.windowLines()
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "window #1 you, #2 tiny: outside the live window") ||
		!strings.Contains(lines[1], "#3 you: cut, 2,944 of its 3,005 tokens trimmed; the model sees the last 61") ||
		!strings.Contains(lines[2], "#4 tiny: cut, 6 of its 12 tokens trimmed") {
		t.Errorf("window lines %q", lines)
	}
	tr.clearSpans()
	if s := trScreen(tr); strings.Contains(s, "trimmed") || strings.Contains(s, "✂") {
		t.Errorf("an emptied cache still marks messages:\n%s", s)
	}
}

// TestDisplayOffset maps content offsets to the display with pastes.
func TestDisplayOffset(t *testing.T) {
	tt := &turn{content: "ab PASTED-TEXT cd", display: "ab [p] cd", pastes: []pasteBlock{{Label: "[p]", Content: "PASTED-TEXT"}}}
	for _, tc := range []struct {
		at, want int
		in       bool
	}{{0, 0, false}, {2, 2, false}, {3, 3, true}, {10, 3, true}, {14, 6, false}, {16, 8, false}} {
		if got, in := displayOffset(tt, tc.at); got != tc.want || in != tc.in {
			t.Errorf("displayOffset(%d) = %d, %v; want %d, %v", tc.at, got, in, tc.want, tc.in)
		}
	}
}

// TestWrapLong: lines wider than the width are broken and continued at
// the line's own indent, escape sequences kept; others are left alone.
func TestWrapLong(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  short\n  lines", "  short\n  lines"},
		{"  abcdefghij", "  abcdefgh\n  ij"},
		{"    abcdefghijklmnop", "    abcdef\n    ghijkl\n    mnop"},
		{"\x1b[1m  abcdefghij\x1b[0m", "\x1b[1m  abcdefgh\n  ij\x1b[0m"},
	}
	for _, tc := range tests {
		got := wrapLong(tc.in, 10)
		if stripANSI(got) != stripANSI(tc.want) {
			t.Errorf("wrapLong(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, l := range strings.Split(got, "\n") {
			if w := ansi.StringWidth(l); w > 10 {
				t.Errorf("wrapLong(%q): line %q is %d wide", tc.in, l, w)
			}
		}
	}
}
