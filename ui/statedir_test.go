package ui

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

// TestSameSecondChatsGetTheirOwnFiles: conversations started in the same
// second (two processes; here many savers at once) never share a file.
func TestSameSecondChatsGetTheirOwnFiles(t *testing.T) {
	dir := t.TempDir()
	const n = 16
	savers := make([]*autosaver, n)
	var wg sync.WaitGroup
	for i := range savers {
		savers[i] = &autosaver{}
		savers[i].start(dir, t0)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := conversationFile{Messages: []savedMessage{{Role: "user", Content: fmt.Sprint("chat ", i)}}}
			if err := savers[i].set(c, true); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, a := range savers {
		p := a.currentPath()
		if seen[p] {
			t.Fatalf("two chats share %s", p)
		}
		seen[p] = true
		if c := readConv(t, p); c.Messages[0].Content != fmt.Sprint("chat ", i) {
			t.Errorf("%s holds %q, want chat %d", p, c.Messages[0].Content, i)
		}
	}
}

// TestStateDirIsAFile: a state dir that is a regular file does not hang
// the chat: it says so once and saves to a temporary folder instead.
func TestStateDirIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mlxchat")
	if err := os.WriteFile(file, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var m *model
	var fe *fakeEngine
	go func() {
		defer close(done)
		m, fe = newTestModel(t, func(c *modelConfig) { c.stateDir = file })
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("newModel hangs on a state dir that is a file")
	}
	ready(m)
	if s := screen(m); !strings.Contains(s, "not a directory") || !strings.Contains(s, "saves to") {
		t.Errorf("no warning about the state dir:\n%s", s)
	}
	if !strings.HasPrefix(m.files.convDir, os.TempDir()) {
		t.Fatalf("conversations go to %q, want a temporary folder", m.files.convDir)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(m.files.convDir)) })
	_, id := send(t, m, fe, "still works")
	events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "yes"})
	if c := readConv(t, m.files.saver.currentPath()); len(c.Messages) != 2 {
		t.Errorf("fallback autosave holds %+v", c.Messages)
	}
}

// TestAutosaveFailureMovesOnce: a write that fails mid-session (full disk,
// read-only folder) moves the conversation to a temporary folder once,
// with a warning that starts with the cause; a failure that repeats is not
// shown again and again.
func TestAutosaveFailureMovesOnce(t *testing.T) {
	for _, cause := range []error{syscall.ENOSPC, syscall.EROFS} {
		t.Run(cause.Error(), func(t *testing.T) {
			m, fe := newTestModel(t)
			ready(m)
			home := m.files.convDir
			m.files.saver.save = func(path string, c conversationFile) error {
				if strings.HasPrefix(path, home) {
					return fmt.Errorf("writing %s: %w", path, &os.PathError{Op: "write", Path: path + ".tmp", Err: cause})
				}
				return saveConversation(path, c)
			}
			update(m, tea.WindowSizeMsg{Width: 60, Height: 20})
			_, id := send(t, m, fe, "hello")
			s := screen(m)
			notice := noticeOf(s)
			if !strings.HasPrefix(notice, "✗ "+cause.Error()) {
				t.Errorf("notice %q does not start with the cause %q", notice, cause)
			}
			moved := m.files.saver.currentPath()
			t.Cleanup(func() { os.RemoveAll(filepath.Dir(moved)) })
			if strings.HasPrefix(moved, home) || !strings.HasPrefix(moved, os.TempDir()) {
				t.Fatalf("conversation not moved to a temporary folder: %s", moved)
			}
			m.setNotice("")
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "hi"})
			if c := readConv(t, moved); len(c.Messages) != 2 {
				t.Errorf("moved file holds %+v", c.Messages)
			}
			if n := noticeOf(screen(m)); strings.Contains(n, "✗") {
				t.Errorf("a working save still shows an error: %q", n)
			}
		})
	}
}

// noticeOf returns the notice area: from the line that starts with ✗ or •
// to the line above the status line, joined by spaces.
func noticeOf(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	for i := len(lines) - 2; i >= 0; i-- {
		if t := strings.TrimSpace(lines[i]); strings.HasPrefix(t, "✗") || strings.HasPrefix(t, "•") || strings.HasPrefix(t, "✂") {
			var parts []string
			for _, l := range lines[i : len(lines)-1] {
				parts = append(parts, strings.TrimSpace(l))
			}
			return strings.Join(parts, " ")
		}
	}
	return ""
}

func TestCauseFirst(t *testing.T) {
	full := "autosave: writing /home/someone/.local/state/mlxchat/conversations/2025-03-01T12-00-00.json: write /home/someone/.local/state/mlxchat/conversations/.2025-03-01T12-00-00.json.tmp-1-2: no space left on device"
	err := fmt.Errorf("autosave: %w", fmt.Errorf("writing x: %w", &os.PathError{Op: "write", Path: "y", Err: syscall.ENOSPC}))
	if c := causeOf(err); !errors.Is(c, syscall.ENOSPC) || c.Error() != "no space left on device" {
		t.Errorf("causeOf = %v", c)
	}
	tests := []struct {
		notice, cause, want string
	}{
		{full, "no space left on device", "no space left on device — autosave: writing /home/someone/.local/state/mlxchat/conversations/2025-03-01T12-00-00.json: write /home/"},
		{full, "", full},
		{"autosave: no space left on device, then more", "no space left on device", "autosave: no space left on device, then more"},
	}
	for _, tc := range tests {
		if got := causeFirst(tc.notice, tc.cause); !strings.HasPrefix(got, tc.want) {
			t.Errorf("causeFirst(%q, %q) = %q, want prefix %q", tc.notice, tc.cause, got, tc.want)
		}
	}
}

// deadPID returns the id of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

func TestRemoveStaleFiles(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	mk := func(name, body string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mtime, mtime)
		return p
	}
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	dead := deadPID(t)
	files := []struct {
		name, body string
		mtime      time.Time
		gone       bool
	}{
		{fmt.Sprintf(".a.json.tmp-%d-123", dead), "{", now, true},              // killed writer
		{fmt.Sprintf(".b.json.tmp-%d-123", live.Process.Pid), "{", now, false}, // a live writer
		{fmt.Sprintf(".c.json.tmp-%d-123", live.Process.Pid), "{", old, true},  // live pid but old: reused
		{fmt.Sprintf(".d.json.tmp-%d-123", os.Getpid()), "{", now, false},      // our own
		{".e.json.tmp123456", "{", old, true},                                  // older writeFileAtomic name
		{".f.json.tmp123456", "{", now, false},                                 // ... but fresh
		{"2025-03-01T12-00-00.json", "", old, true},                            // reserved, never written
		{"2025-03-01T12-00-01.json", "", now, false},                           // reserved just now
		{"2025-03-01T12-00-02.json", "{}", old, false},                         // a conversation
		{"notes.tmp-1-2", "mine", old, false},                                  // not our pattern
		{".probe-99", "x", old, true},
	}
	for _, f := range files {
		mk(f.name, f.body, f.mtime)
	}
	removeStaleFiles(dir, now)
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if gone := errors.Is(err, os.ErrNotExist); gone != f.gone {
			t.Errorf("%s: removed %v, want %v", f.name, gone, f.gone)
		}
	}
}
