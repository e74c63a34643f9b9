package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adrg/xdg"
)

// TestChatOpensTUI drives the real TUI on the tiny model through a pipe:
// it types a message, waits for the answer, then quits with Ctrl+C twice.
func TestChatOpensTUI(t *testing.T) {
	dir := tinyModel(t)
	t.Cleanup(xdg.Reload) // runs after the variables below are restored
	t.Setenv("NO_COLOR", "1")
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // autosaves go here, not to the user's dir
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	xdg.Reload()
	pr, pw := io.Pipe()
	var out lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), []string{dir, "--max-tokens", "5", "--no-loop-detect"},
			IO{Stdin: pr, Stdout: &out, Stderr: &out, ForceTUI: true})
	}()
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(out.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("screen never showed %q:\n%s", what, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("tiny is ready")
	io.WriteString(pw, "hello there\r")
	waitFor("answer cut at") // the answer ends at --max-tokens
	io.WriteString(pw, "\x03")
	time.Sleep(50 * time.Millisecond)
	io.WriteString(pw, "\x03")
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out.String())
		}
		if !strings.Contains(out.String(), "conversation saved to ") {
			t.Fatalf("no line saying where the conversation was saved:\n%s", out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the chat did not quit on Ctrl+C twice")
	}
	pw.Close()
}

// lockedBuffer is a bytes.Buffer safe for the TUI's writer and the test's
// reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
