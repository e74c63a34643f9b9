package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

func readyThinking(m *model, withSwitch bool) {
	events(m, engine.Ready{Info: engine.ModelInfo{Name: "qwen3-tiny", ModelType: "qwen3", Reasoning: true, ThinkingSwitch: withSwitch}})
}

// TestThinkingFolded: reasoning streams as a dimmed fold above the
// answer, one line while folded; Ctrl+O shows it; the finished answer
// keeps it folded, the next Generate sends it back as Message.Reasoning,
// and the autosave keeps it.
func TestThinkingFolded(t *testing.T) {
	m, fe := newTestModel(t)
	readyThinking(m, true)
	_, id := send(t, m, fe, "hi")
	events(m,
		engine.Token{Header: hdr(id, time.Second), Text: "The user greets me.", Tokens: 6, Reasoning: true},
		engine.Token{Header: hdr(id, 2*time.Second), Text: " I should greet back.", Tokens: 10, Reasoning: true},
	)
	update(m, frameMsg{})
	s := screen(m)
	if !strings.Contains(s, "▸ thinking… · 8 words (Ctrl+O shows it)") || strings.Contains(s, "greets me") {
		t.Fatalf("streaming reasoning not folded to one line:\n%s", s)
	}
	press(m, tea.KeyCtrlO)
	update(m, frameMsg{})
	if s := screen(m); !strings.Contains(s, "The user greets me. I should greet back.") || !strings.Contains(s, "▾ thinking…") {
		t.Fatalf("Ctrl+O does not show the reasoning:\n%s", s)
	}
	press(m, tea.KeyCtrlO)
	events(m, engine.Token{Header: hdr(id, 3*time.Second), Text: "Hello!", Tokens: 12})
	update(m, frameMsg{})
	if s := screen(m); !strings.Contains(s, "▸ thought · 8 words") || !strings.Contains(s, "Hello!") {
		t.Fatalf("answer under the folded reasoning missing:\n%s", s)
	}
	events(m, engine.Done{Header: hdr(id, 3*time.Second), Reason: engine.DoneStop, Text: "Hello!", Reasoning: "The user greets me. I should greet back.", Tokens: 13})
	s = screen(m)
	if !strings.Contains(s, "▸ thought · 8 words (Ctrl+O shows them)") || strings.Contains(s, "greets me") || !strings.Contains(s, "Hello!") {
		t.Fatalf("finished answer: reasoning not folded above the answer:\n%s", s)
	}
	press(m, tea.KeyCtrlO)
	if s := screen(m); !strings.Contains(s, "greets me") {
		t.Fatalf("Ctrl+O does not unfold the finished reasoning:\n%s", s)
	}
	g, _ := send(t, m, fe, "more")
	if len(g.Conversation) != 3 || g.Conversation[1] != (engine.Message{Role: "assistant", Content: "Hello!", Reasoning: "The user greets me. I should greet back."}) {
		t.Fatalf("next Generate conversation = %#v", g.Conversation)
	}
	c := readConv(t, m.files.saver.currentPath())
	if len(c.Messages) < 2 || c.Messages[1].Reasoning != "The user greets me. I should greet back." || c.Messages[1].Content != "Hello!" {
		t.Fatalf("autosave messages %#v", c.Messages)
	}
	// Loading the file brings the reasoning back, folded.
	m2, _ := newTestModel(t)
	readyThinking(m2, true)
	dst := filepath.Join(t.TempDir(), "c.json")
	data, err := os.ReadFile(m.files.saver.currentPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	typeText(m2, "/load "+dst)
	enter(m2)
	if s := screen(m2); !strings.Contains(s, "▸ thought · 8 words") {
		t.Fatalf("loaded conversation lost the reasoning:\n%s", s)
	}
}

// TestThinkCommand: /think off|on sends NoThinking where the template has
// the switch and refuses where it has none.
func TestThinkCommand(t *testing.T) {
	m, fe := newTestModel(t)
	readyThinking(m, true)
	typeText(m, "/think off")
	enter(m)
	u, _ := lastOf[engine.UpdateSettings](t, fe)
	if !u.Settings.NoThinking || !m.set.cur.NoThinking || !strings.Contains(screen(m), "thinking off") {
		t.Fatalf("/think off: settings %+v\n%s", u.Settings, screen(m))
	}
	typeText(m, "/model")
	enter(m)
	if !strings.Contains(screen(m), "/think off") {
		t.Fatalf("/model does not show /think off:\n%s", screen(m))
	}
	typeText(m, "/think on")
	enter(m)
	if u, _ := lastOf[engine.UpdateSettings](t, fe); u.Settings.NoThinking {
		t.Fatal("/think on left NoThinking set")
	}
	for _, bad := range []string{"/think", "/think maybe"} {
		if _, err := ParseCommand(bad); err == nil || !strings.Contains(err.Error(), "expected on or off") {
			t.Errorf("%s: error %v", bad, err)
		}
	}
	if got, _ := m.pal.tab("/think o"); got != "/think o" {
		t.Errorf("completion of /think o = %q, want the common prefix", got)
	}
	if got, _ := m.pal.tab("/think of"); got != "/think off" {
		t.Errorf("completion of /think of = %q", got)
	}

	m2, fe2 := newTestModel(t)
	readyThinking(m2, false)
	n := len(fe2.requests())
	typeText(m2, "/think off")
	enter(m2)
	if !strings.Contains(screen(m2), "has no thinking switch") || len(fe2.requests()) != n || m2.set.cur.NoThinking {
		t.Fatalf("/think off without a switch was not refused:\n%s", screen(m2))
	}
}

// TestThinkingStopped: Esc while the model is still thinking, before any
// answer text, keeps the turn with its reasoning folded and dimmed like
// finished reasoning and marked stopped (the question does not go back to
// the editor); the autosave keeps it (also while it streams), loading the
// file brings it back, and the next Generate sends it as
// Message.Reasoning of an answer without text.
func TestThinkingStopped(t *testing.T) {
	m, fe := newTestModel(t)
	readyThinking(m, true)
	_, id := send(t, m, fe, "hi")
	events(m,
		engine.Token{Header: hdr(id, time.Second), Text: "The user greets me.", Tokens: 6, Reasoning: true},
		engine.Token{Header: hdr(id, 2*time.Second), Text: " I should", Tokens: 8, Reasoning: true},
	)
	m.autosave()
	c := readConv(t, m.files.saver.currentPath())
	if len(c.Messages) != 2 || c.Messages[1].Reasoning != "The user greets me. I should" || !c.Messages[1].Partial || c.Messages[1].Note != noteInterrupted {
		t.Fatalf("autosave while thinking lost the reasoning: %#v", c.Messages)
	}
	press(m, tea.KeyEsc)
	if cl, _ := lastOf[engine.Cancel](t, fe); cl.ID != id {
		t.Fatalf("Cancel id %d, want %d", cl.ID, id)
	}
	events(m, engine.Done{Header: hdr(id, 3*time.Second), Reason: engine.DoneCancelled, Reasoning: "The user greets me. I should", Tokens: 8})
	s := screen(m)
	if !strings.Contains(s, "▸ stopped while thinking · 6 words (Ctrl+O shows them)") || strings.Contains(s, "greets me") ||
		!strings.Contains(s, "· stopped") || !strings.Contains(s, "stopped while thinking; the reasoning so far is kept") {
		t.Fatalf("stopped reasoning not kept folded and marked:\n%s", s)
	}
	if m.ed.value() != "" {
		t.Fatalf("the question went back to the editor (%q) although the turn is kept", m.ed.value())
	}
	press(m, tea.KeyCtrlO)
	if s := screen(m); !strings.Contains(s, "The user greets me. I should") || !strings.Contains(s, "▾ stopped while thinking") {
		t.Fatalf("Ctrl+O does not show the stopped reasoning:\n%s", s)
	}
	press(m, tea.KeyCtrlO)
	c = readConv(t, m.files.saver.currentPath())
	if len(c.Messages) != 2 || c.Messages[1].Reasoning != "The user greets me. I should" || c.Messages[1].Content != "" || !c.Messages[1].Partial || c.Messages[1].Note != "stopped" {
		t.Fatalf("autosave messages %#v", c.Messages)
	}
	// Loading the file brings the stopped reasoning back, folded.
	m2, _ := newTestModel(t)
	readyThinking(m2, true)
	dst := filepath.Join(t.TempDir(), "c.json")
	data, err := os.ReadFile(m.files.saver.currentPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	typeText(m2, "/load "+dst)
	enter(m2)
	if s := screen(m2); !strings.Contains(s, "▸ stopped while thinking · 6 words") || !strings.Contains(s, "qwen3-tiny · stopped") {
		t.Fatalf("loaded conversation lost the stopped reasoning:\n%s", s)
	}
	g, _ := send(t, m, fe, "go on")
	if len(g.Conversation) != 3 || g.Conversation[1] != (engine.Message{Role: "assistant", Reasoning: "The user greets me. I should"}) {
		t.Fatalf("next Generate conversation = %#v", g.Conversation)
	}
}

// TestThinkingCutAtMax: an answer the token limit cut while the model was
// still thinking is labelled as cut at the limit, not as stopped (which
// says the user pressed Esc), in the chat and, in the same words, once
// loaded.
func TestThinkingCutAtMax(t *testing.T) {
	m, fe := newTestModel(t)
	readyThinking(m, true)
	command(m, "/max 30")
	_, id := send(t, m, fe, "hi")
	events(m,
		engine.Token{Header: hdr(id, time.Second), Text: "The user greets me. I should", Tokens: 30, Reasoning: true},
		engine.Done{Header: hdr(id, 2*time.Second), Reason: engine.DoneMaxTokens, Reasoning: "The user greets me. I should", Tokens: 30})
	s := screen(m)
	if !strings.Contains(s, "▸ cut at /max 30 tokens while thinking · 6 words") || strings.Contains(s, "stopped while thinking") ||
		!strings.Contains(flat(s), "cut at /max 30 tokens while still thinking") {
		t.Fatalf("cut reasoning labelled as:\n%s", s)
	}
	m2, _ := newTestModel(t)
	readyThinking(m2, true)
	typeText(m2, "/load "+m.files.saver.currentPath())
	enter(m2)
	if s := screen(m2); !strings.Contains(s, "▸ cut at /max 30 tokens while thinking · 6 words") || !strings.Contains(s, "qwen3-tiny · max tokens") {
		t.Fatalf("loaded cut reasoning labelled as:\n%s", s)
	}
}
