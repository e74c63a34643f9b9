package ui

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

// run executes a command a key returned, as bubbletea does, and feeds its
// message back (one level of tea.Batch included).
func run(m *model, c tea.Cmd) {
	if c == nil {
		return
	}
	switch msg := c().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			run(m, c)
		}
	case nil:
	default:
		if _, isTick := msg.(countTickMsg); !isTick {
			run(m, update(m, msg))
		}
	}
}

// enterRun presses Enter and runs what it starts.
func enterRun(m *model) { run(m, m.handleKey(tea.KeyMsg{Type: tea.KeyEnter})) }

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadAttachesAFile: /read puts the file in the editor as one
// collapsed block with its token count; sent, the message holds the
// text, saved exactly.
func TestReadAttachesAFile(t *testing.T) {
	text := strings.Repeat("notes line\n", 300)
	p := writeFile(t, "notes.md", "\uFEFF"+strings.ReplaceAll(text, "\n", "\r\n"))
	m, fe := newTestModel(t, func(c *modelConfig) { c.count = func(s string) (int, error) { return len(strings.Fields(s)), nil } })
	ready(m)
	typeText(m, "/read "+p)
	enterRun(m)
	want := "[file notes.md: 600 tokens, 3 KiB]"
	if m.ed.value() != want {
		t.Fatalf("editor %q, want the block %q", m.ed.value(), want)
	}
	if s := screen(m); !strings.Contains(s, "attached file notes.md: 600 tokens, 3 KiB") {
		t.Errorf("no notice:\n%s", s)
	}
	press(m, tea.KeyHome)
	typeText(m, "Sum up: ")
	enterRun(m)
	g, _ := lastOf[engine.Generate](t, fe)
	if got := g.Conversation[0].Content; got != "Sum up: "+text {
		t.Errorf("sent %q…", got[:30])
	}
	if s := screen(m); !strings.Contains(s, want) || strings.Contains(s, "notes line") {
		t.Errorf("the sent turn does not show the block:\n%s", s)
	}
	if c := readConv(t, m.files.saver.currentPath()); c.Messages[0].Content != "Sum up: "+text {
		t.Error("the file's text is not saved exactly")
	}
}

// TestReadRefusesWhatIsNotText: a binary, invalid, empty, huge, missing
// file, a directory and a FIFO each get one error line naming the file,
// at once (a FIFO does not block), and the command comes back to fix.
func TestReadRefusesWhatIsNotText(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.txt")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxAttachBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want string }{
		{writeFile(t, "img.png", "\x89PNG\r\n\x1a\n\x00\x00"), "img.png is not a text file (a NUL byte at offset 8)"},
		{writeFile(t, "latin1.txt", "caf\xe9"), "latin1.txt is not a UTF-8 text file (an invalid byte at offset 3)"},
		{writeFile(t, "empty.txt", " \n"), "empty.txt is empty"},
		{huge, "huge.txt is 33554433 bytes, expected at most 33554432"},
		{filepath.Join(dir, "missing.txt"), "missing.txt: no such file or directory"},
		{dir, "is a directory, expected a regular file"},
		{fifo, "is a named pipe (FIFO), expected a regular file"},
		{"/dev/zero", "/dev/zero is a character device, expected a regular file"},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			m, _ := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: 300, Height: 30})
			ready(m)
			typeText(m, "/read "+tc.path)
			enterRun(m)
			s := noticeOf(screen(m))
			if !strings.HasPrefix(s, "✗ /read: ") || !strings.Contains(s, tc.want) {
				t.Errorf("notice %q, want an error with %q", s, tc.want)
			}
			if len(m.ed.pastes.blocks) != 0 {
				t.Errorf("the failed /read left %d blocks", len(m.ed.pastes.blocks))
			}
			wantRecalled(t, m, "/read "+tc.path)
		})
	}
}

// TestAtPath: @path words that name files are attached when the message
// is sent; @words that are not files stay text; a path-like @word that is
// missing stops the send with an error; @@ writes a literal @.
func TestAtPath(t *testing.T) {
	a := writeFile(t, "a.txt", "alpha text\n")
	b := writeFile(t, "b.txt", "beta text\n")
	m, fe := newTestModel(t)
	ready(m)
	typeText(m, "compare @"+a+" with @"+b+", @alice.")
	enterRun(m)
	g, _ := lastOf[engine.Generate](t, fe)
	if got, want := g.Conversation[0].Content, "compare alpha text\n with beta text\n, @alice."; got != want {
		t.Errorf("sent %q, want %q", got, want)
	}
	if s := screen(m); !strings.Contains(s, "[file a.txt: ~3 tokens, 11 B]") || !strings.Contains(s, "[file b.txt #2: ~3 tokens, 10 B]") {
		t.Errorf("the turn does not show both blocks:\n%s", s)
	}
	_, id := lastOf[engine.Generate](t, fe)
	events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "ok"})
	n := countOf[engine.Generate](fe)
	typeText(m, "see @./nowhere.txt")
	enterRun(m)
	if countOf[engine.Generate](fe) != n || !strings.Contains(noticeOf(screen(m)), "@./nowhere.txt: no such file") || m.ed.value() != "see @./nowhere.txt" {
		t.Errorf("missing @path: notice %q, editor %q", noticeOf(screen(m)), m.ed.value())
	}
	m.ed.ta.Reset()
	typeText(m, "mail @@./nowhere.txt")
	enterRun(m)
	if g, _ := lastOf[engine.Generate](t, fe); g.Conversation[len(g.Conversation)-1].Content != "mail @./nowhere.txt" {
		t.Errorf("@@ sent as %q", g.Conversation[len(g.Conversation)-1].Content)
	}
}

// TestAtPathBinaryStopsTheSend: a binary file named with @ is refused and
// nothing is sent.
func TestAtPathBinaryStopsTheSend(t *testing.T) {
	p := writeFile(t, "blob.bin", "\x00\x01\x02")
	m, fe := newTestModel(t)
	update(m, tea.WindowSizeMsg{Width: 200, Height: 30})
	ready(m)
	typeText(m, "what is @"+p)
	enterRun(m)
	if countOf[engine.Generate](fe) != 0 || !strings.Contains(noticeOf(screen(m)), "@"+p+": "+p+" is not a text file") {
		t.Errorf("notice %q", noticeOf(screen(m)))
	}
	if m.ed.value() != "what is @"+p {
		t.Errorf("editor %q", m.ed.value())
	}
}
