package ui

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// TestEditorHistory walks the history and comes back to the draft with
// its pastes.
func TestEditorHistory(t *testing.T) {
	e := newEditor(nil)
	e.push(historyEntry{Text: "one"}, 0)
	e.push(historyEntry{Text: "two"}, 0)
	e.push(historyEntry{Text: "two"}, 0) // a repeat is kept once
	if len(e.history) != 2 {
		t.Fatalf("history %v", e.history)
	}
	label := "[pasted: 3 tokens, 12 B]"
	e.set("draft "+label, []pasteBlock{{Label: label, Content: "pasted text"}})
	for _, step := range []struct {
		d    int
		ok   bool
		want string
	}{{-1, true, "two"}, {-1, true, "one"}, {-1, false, "one"}, {+1, true, "two"}, {+1, true, "draft " + label}, {+1, false, "draft " + label}} {
		if ok := e.historyMove(step.d); ok != step.ok || e.value() != step.want {
			t.Fatalf("historyMove(%d) = %v with %q, want %v with %q", step.d, ok, e.value(), step.ok, step.want)
		}
	}
	if got := e.full(); got != "draft pasted text" {
		t.Errorf("draft's paste lost on the way back: %q", got)
	}
}

func TestEditorHistoryLimit(t *testing.T) {
	e := newEditor(nil)
	for _, s := range []string{"a", "b", "c", "d"} {
		e.push(historyEntry{Text: s}, 3)
	}
	if len(e.history) != 3 || e.history[0].Text != "b" || e.histIdx != 3 {
		t.Errorf("history %v, index %d", e.history, e.histIdx)
	}
}

// TestEditorPastes: labels expand to the exact text, an edited-away label
// drops its paste, Ctrl+E's expand puts the text in the editor.
func TestEditorPastes(t *testing.T) {
	e := newEditor(nil)
	l1 := e.pastes.add("first\tpaste", nil)
	e.insert("a " + l1 + " b")
	if got := e.full(); got != "a first\tpaste b" {
		t.Errorf("full = %q", got)
	}
	if n := len(e.present()); n != 1 {
		t.Errorf("%d pastes present, want 1", n)
	}
	e.ta.SetValue("a b") // the label was deleted
	if n := len(e.present()); n != 0 || e.full() != "a b" {
		t.Errorf("deleted label still sends its paste: %q", e.full())
	}
	e.clear()
	l2 := e.pastes.add("line\n", nil)
	e.insert(l2)
	if !e.expand() || e.value() != "line\n" || len(e.pastes.blocks) != 0 {
		t.Errorf("expand: %q, %d blocks", e.value(), len(e.pastes.blocks))
	}
	if e.expand() {
		t.Error("expand with no paste reported one")
	}
}

// TestEditorHeight grows with the content up to maxInputLines and a
// third of the screen.
func TestEditorHeight(t *testing.T) {
	e := newEditor(nil)
	e.resize(40, 1)
	if h := e.wantHeight(30); h != 1 {
		t.Errorf("empty editor wants %d lines", h)
	}
	for range 3 {
		e.update(tea.KeyMsg{Type: tea.KeyCtrlJ})
	}
	if h := e.wantHeight(30); h != 4 {
		t.Errorf("4-line editor wants %d lines", h)
	}
	for range 20 {
		e.update(tea.KeyMsg{Type: tea.KeyCtrlJ})
	}
	if h := e.wantHeight(30); h != maxInputLines {
		t.Errorf("long editor wants %d lines, want %d", h, maxInputLines)
	}
	if h := e.wantHeight(12); h != 4 {
		t.Errorf("on a 12-line screen the editor wants %d lines, want 4", h)
	}
	if h := e.wantHeight(1); h != 1 {
		t.Errorf("on a 1-line screen the editor wants %d lines, want 1", h)
	}
}

// TestEditorRelabel swaps a label in the editor and in the history.
func TestEditorRelabel(t *testing.T) {
	e := newEditor(nil)
	old, label := "[pasted: 1 KiB, counting tokens…]", "[pasted: 300 tokens, 1 KiB]"
	e.push(historyEntry{Text: "x " + old, Pastes: []pasteBlock{{Label: old, Content: "c"}}}, 0)
	e.pastes.blocks = []pasteBlock{{Label: old, Content: "c"}}
	e.insert("y " + old)
	e.relabel(old, label)
	if e.value() != "y "+label || e.full() != "y c" {
		t.Errorf("editor %q, full %q", e.value(), e.full())
	}
	if h := e.history[0]; h.Text != "x "+label || h.Pastes[0].Label != label {
		t.Errorf("history %+v", h)
	}
}
