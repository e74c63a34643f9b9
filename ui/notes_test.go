package ui

import (
	"strings"
	"testing"

	"mlxchat/engine"
)

// TestModelNotesShown: the model's load-time notes (engine.ModelInfo.Notes)
// show as one dimmed "note:" line each (wrapped under its text) under the welcome once the model
// is ready, stay in the transcript after the chat starts, and are never
// sent to the model nor saved as messages.
func TestModelNotesShown(t *testing.T) {
	m, fe := newTestModel(t)
	notes := []string{
		"config.json: rope_parameters.sliding_attention asks for yarn scaling; sliding layers use the unscaled table",
		"second remark",
	}
	events(m, engine.Ready{Info: engine.ModelInfo{Name: "olmo3-tiny", ModelType: "olmo3", Notes: notes}})
	s := screen(m)
	lines := strings.Split(s, "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, "is ready. Type a message") {
			at = i
		}
	}
	if at < 0 || !strings.Contains(s, "  note: "+notes[1]) {
		t.Fatalf("welcome or notes missing:\n%s", s)
	}
	first := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "  note: config.json: rope_parameters") {
			first = i
		}
	}
	if first <= at || !strings.HasPrefix(lines[first+1], "        unscaled table") || !strings.HasPrefix(lines[first+2], "  note: second remark") {
		t.Fatalf("notes not one line each below the welcome:\n%s", s)
	}
	var kinds []turnKind
	for _, tr := range m.tr.turns {
		kinds = append(kinds, tr.kind)
	}
	if len(kinds) != 1 || kinds[0] != turnNote {
		t.Fatalf("turns %v, want one note turn", kinds)
	}
	g, _ := send(t, m, fe, "hi")
	if len(g.Conversation) != 1 || g.Conversation[0].Content != "hi" {
		t.Fatalf("the notes reached the model: %#v", g.Conversation)
	}
	if s := screen(m); !strings.Contains(s, "note: second remark") || strings.Contains(s, "is ready. Type a message") {
		t.Fatalf("after the first message the notes must stay, the welcome go:\n%s", s)
	}
	m.autosave()
	if c := readConv(t, m.files.saver.currentPath()); len(c.Messages) != 1 || c.Messages[0].Content != "hi" {
		t.Fatalf("saved messages %#v", c.Messages)
	}

	// A model without notes shows only the welcome.
	m2, _ := newTestModel(t)
	ready(m2)
	if s := screen(m2); strings.Contains(s, "note:") || !strings.Contains(s, "is ready") || len(m2.tr.turns) != 0 {
		t.Fatalf("a model without notes:\n%s", s)
	}
}
