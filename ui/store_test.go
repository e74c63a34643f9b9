package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f := false
	tests := []struct {
		name     string
		path     string
		explicit bool
		want     Config
		wantErr  string
	}{
		{"missing default", filepath.Join(dir, "absent.json"), false, Config{}, ""},
		{"missing explicit", filepath.Join(dir, "absent.json"), true, Config{}, "reading config"},
		{"full", write("full.json", `{"theme":"light","autosave":false,"history_limit":9,"paste_min_chars":50,"paste_min_lines":3}`), true,
			Config{Theme: "light", Autosave: &f, HistoryLimit: 9, PasteMinChars: 50, PasteMinLines: 3}, ""},
		{"unknown field", write("typo.json", `{"them":"light"}`), true, Config{}, `unknown field "them"`},
		{"not json", write("bad.json", `theme = "light"`), true, Config{}, "expected JSON"},
		{"negative", write("neg.json", `{"history_limit":-1}`), true, Config{}, "must be >= 0"},
	}
	for _, tc := range tests {
		got, err := LoadConfig(tc.path, tc.explicit)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got.Theme != tc.want.Theme || got.HistoryLimit != tc.want.HistoryLimit || got.PasteMinChars != tc.want.PasteMinChars ||
			got.PasteMinLines != tc.want.PasteMinLines || (got.Autosave == nil) != (tc.want.Autosave == nil) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	d := Config{}.withDefaults()
	if !*d.Autosave || d.HistoryLimit != 500 || d.PasteMinChars != 1000 || d.PasteMinLines != 8 {
		t.Errorf("defaults: %+v", d)
	}
}

func TestAutosaveOffWritesNothing(t *testing.T) {
	m, fe := newTestModel(t, func(c *modelConfig) {
		off := false
		c.cfg.Autosave = &off
	})
	ready(m)
	send(t, m, fe, "secret")
	m.finish()
	if files, _ := filepath.Glob(filepath.Join(m.stateDir, "conversations", "*")); len(files) != 0 {
		t.Errorf("autosave off still wrote %v", files)
	}
	typeText(m, "/save")
	press(m, tea.KeyEnter)
	if !strings.Contains(screen(m), "/save: autosave is off, expected a FILE name") {
		t.Errorf("/save without autosave:\n%s", screen(m))
	}
}

func TestConversationFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "c.json")
	c := conversationFile{Model: "m", Created: t0, Updated: t0.Add(time.Minute), System: "sys",
		Messages: []savedMessage{{Role: "user", Content: "full", Display: "short"}, {Role: "assistant", Content: "ans", Partial: true}},
		Draft:    "d", DraftPastes: []pasteBlock{{Label: "[pasted: 1 token, 1 B]", Content: "x"}}}
	if err := saveConversation(p, c); err != nil {
		t.Fatal(err)
	}
	got, err := loadConversation(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || got.System != "sys" || len(got.Messages) != 2 || got.Messages[0].Display != "short" ||
		!got.Messages[1].Partial || got.DraftPastes[0].Content != "x" || !got.Updated.Equal(c.Updated) {
		t.Errorf("round trip: %+v", got)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "sub", ".*tmp*")); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	bad := []struct{ body, want string }{
		{`{`, "not a conversation file"},
		{`{"version": 9, "messages": []}`, "version 9, expected at most 1"},
		{`{"version": 1, "messages": [{"role": "tool", "content": "x"}]}`, `message 1 has role "tool"`},
	}
	for _, b := range bad {
		q := filepath.Join(dir, "bad.json")
		os.WriteFile(q, []byte(b.body), 0o600)
		if _, err := loadConversation(q); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("load %s: err %v, want %q", b.body, err, b.want)
		}
	}
	if _, err := loadConversation(filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file error does not name it: %v", err)
	}
}

func TestResolveConversationPath(t *testing.T) {
	tests := []struct{ name, want string }{
		{"notes", "/state/notes.json"},
		{"notes.json", "/state/notes.json"},
		{"./notes", "./notes.json"},
		{"/tmp/x.txt", "/tmp/x.txt"},
		{"sub/y", "sub/y.json"},
	}
	for _, tc := range tests {
		if got := resolveConversationPath("/state", tc.name); got != tc.want {
			t.Errorf("resolve(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNewConversationPathUnique(t *testing.T) {
	dir := t.TempDir()
	a := newConversationPath(dir, t0)
	if err := os.WriteFile(a, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newConversationPath(dir, t0)
	if a == b || filepath.Base(b) != "2025-03-01T12-00-00-2.json" {
		t.Errorf("second path %s (first %s)", b, a)
	}
}

func TestHistoryFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.json")
	var entries []historyEntry
	for i := 0; i < 10; i++ {
		entries = append(entries, historyEntry{Text: strings.Repeat("x", i+1)})
	}
	if err := saveHistory(p, entries, 3); err != nil {
		t.Fatal(err)
	}
	got, err := loadHistory(p)
	if err != nil || len(got) != 3 || got[2].Text != entries[9].Text {
		t.Errorf("history: %v %+v", err, got)
	}
	if h, err := loadHistory(p + ".missing"); err != nil || h != nil {
		t.Errorf("missing history: %v %v", h, err)
	}
	big := []historyEntry{{Text: "a"}, {Text: "b", Pastes: []pasteBlock{{Content: strings.Repeat("y", 300<<10)}}}}
	if d := historyForDisk(big); len(d) != 1 || d[0].Text != "a" {
		t.Errorf("huge paste kept on disk: %d entries", len(d))
	}
}
