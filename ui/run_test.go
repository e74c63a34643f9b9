package ui

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"mlxchat/engine"
)

// syncBuffer is a bytes.Buffer safe for the renderer goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunChatAndQuit(t *testing.T) {
	fe := newFakeEngine()
	inR, inW := io.Pipe()
	out := &syncBuffer{}
	state := t.TempDir()
	errc := make(chan error, 1)
	report := &syncBuffer{}
	go func() {
		errc <- Run(context.Background(), Options{
			Engine: fe, ModelName: "tiny", Settings: engine.DefaultSettings(),
			ConfigPath: writeConfig(t, `{"theme": "light"}`), StateDir: state,
			NoColor: true, Input: inR, Output: out, Inline: true, Report: report,
		})
	}()
	fe.ch <- engine.ModelLoading{Stage: "loading weights", Done: 1, Total: 2}
	fe.ch <- engine.Ready{Info: engine.ModelInfo{Name: "tiny"}}
	waitFor(t, "the chat screen", func() bool { return strings.Contains(out.String(), "tiny is ready") })
	io.WriteString(inW, "hi there\r")
	var id engine.RequestID
	waitFor(t, "Generate", func() bool {
		for i, r := range fe.requests() {
			if g, ok := r.(engine.Generate); ok && g.Conversation[0].Content == "hi there" {
				id = engine.RequestID(i + 1)
				return true
			}
		}
		return false
	})
	fe.ch <- engine.Token{Header: engine.Header{ID: id, At: time.Now()}, Text: "Hello from the model", Tokens: 3}
	fe.ch <- engine.Done{Header: engine.Header{ID: id, At: time.Now()}, Reason: engine.DoneStop, Text: "Hello from the model"}
	waitFor(t, "the answer", func() bool { return strings.Contains(out.String(), "Hello from the model") })
	io.WriteString(inW, "draft")
	time.Sleep(50 * time.Millisecond)
	io.WriteString(inW, "\x03")
	time.Sleep(50 * time.Millisecond)
	io.WriteString(inW, "\x03")
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Ctrl+C twice")
	}
	inW.Close()
	files, _ := filepath.Glob(filepath.Join(state, "conversations", "*.json"))
	if len(files) != 1 {
		t.Fatalf("autosave files: %v", files)
	}
	c := readConv(t, files[0])
	if len(c.Messages) != 2 || c.Messages[1].Content != "Hello from the model" || c.Draft != "draft" {
		t.Errorf("autosaved conversation: %+v", c)
	}
	name := strings.TrimSuffix(filepath.Base(files[0]), ".json")
	if want := "conversation saved to " + files[0] + " (reopen it with /load " + name + ")\n"; report.String() != want {
		t.Errorf("exit report %q, want %q", report.String(), want)
	}
}

func TestRunErrors(t *testing.T) {
	fe := newFakeEngine()
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no engine", Options{}, "Options.Engine is nil"},
		{"missing config", Options{Engine: fe, ConfigPath: filepath.Join(t.TempDir(), "nope.json")}, "nope.json: no such file"},
		{"bad config", Options{Engine: fe, ConfigPath: writeConfig(t, `{"colour": 1}`)}, `unknown key "colour"`},
		{"bad theme flag", Options{Engine: fe, Theme: "neon", ConfigPath: writeConfig(t, `{}`)}, `--theme: unknown theme "neon"`},
		{"bad theme config", Options{Engine: fe, ConfigPath: writeConfig(t, `{"theme": "neon"}`)}, `unknown theme "neon"`},
	}
	for _, tc := range tests {
		err := Run(context.Background(), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestRunLoadFailure(t *testing.T) {
	fe := newFakeEngine()
	inR, inW := io.Pipe()
	defer inW.Close()
	fe.ch <- engine.ModelLoading{Stage: "resolving"}
	fe.ch <- engine.Error{Err: errFake("loading model: no such model \"nope\"")}
	err := Run(context.Background(), Options{
		Engine: fe, ConfigPath: writeConfig(t, `{}`), StateDir: t.TempDir(),
		NoColor: true, Input: inR, Output: io.Discard, Inline: true,
	})
	if err == nil || !strings.Contains(err.Error(), `no such model "nope"`) {
		t.Fatalf("Run = %v, want the load error", err)
	}
}

func TestRunContextCancel(t *testing.T) {
	fe := newFakeEngine()
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	fe.ch <- engine.Ready{}
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	err := Run(ctx, Options{
		Engine: fe, ConfigPath: writeConfig(t, `{}`), StateDir: t.TempDir(),
		NoColor: true, Input: inR, Output: io.Discard, Inline: true,
	})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("Run after cancel = %v", err)
	}
}

type errFake string

func (e errFake) Error() string { return string(e) }

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunReportNamesALoadableFile: when the state dir cannot be used and
// the conversation went to a temporary folder, the exit line's /load names
// the whole path, which a new session (whose conversations folder is
// elsewhere) loads.
func TestRunReportNamesALoadableFile(t *testing.T) {
	fe := newFakeEngine()
	inR, inW := io.Pipe()
	defer inW.Close()
	out, report := &syncBuffer{}, &syncBuffer{}
	state := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(state, []byte("a file, not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		errc <- Run(context.Background(), Options{
			Engine: fe, ModelName: "tiny", Settings: engine.DefaultSettings(),
			ConfigPath: writeConfig(t, `{}`), StateDir: state,
			NoColor: true, Input: inR, Output: out, Inline: true, Report: report,
		})
	}()
	fe.ch <- engine.Ready{Info: engine.ModelInfo{Name: "tiny"}}
	waitFor(t, "the chat screen", func() bool { return strings.Contains(out.String(), "tiny is ready") })
	io.WriteString(inW, "kept elsewhere\r")
	waitFor(t, "Generate", func() bool { return len(fe.requests()) > 0 })
	io.WriteString(inW, "\x03")
	time.Sleep(50 * time.Millisecond)
	io.WriteString(inW, "\x03")
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Ctrl+C twice")
	}
	mt := regexp.MustCompile(`^conversation saved to (\S+) \(reopen it with /load (\S+)\)\n$`).FindStringSubmatch(report.String())
	if mt == nil {
		t.Fatalf("exit report %q", report.String())
	}
	defer os.RemoveAll(filepath.Dir(filepath.Dir(mt[1])))
	if mt[2] != mt[1] {
		t.Errorf("the report says /load %s for %s, outside the state dir: a new session cannot find that", mt[2], mt[1])
	}
	m, _ := newTestModel(t)
	ready(m)
	typeText(m, "/load "+mt[2])
	enter(m)
	if c := m.conversation(); len(c) != 1 || c[0].Content != "kept elsewhere" {
		// The unanswered message goes back into the editor.
		if v := m.ed.value(); !strings.Contains(v, "kept elsewhere") {
			t.Errorf("/load %s in a new session: conversation %+v, editor %q:\n%s", mt[2], c, v, screen(m))
		}
	}
}

// TestLoadName: the exit line's /load argument is the bare name inside
// the conversations folder, the whole path elsewhere.
func TestLoadName(t *testing.T) {
	for _, tc := range []struct{ path, dir, want string }{
		{"/s/mlxchat/conversations/2025-03-01T12-00-00.json", "/s/mlxchat/conversations", "2025-03-01T12-00-00"},
		{"/s/mlxchat/conversations/x.json", "/s/mlxchat/conversations/", "x"},
		{"/tmp/mlxchat-state-1/conversations/x.json", "/s/mlxchat/conversations", "/tmp/mlxchat-state-1/conversations/x.json"},
		{"/home/u/notes/chat.json", "/s/mlxchat/conversations", "/home/u/notes/chat.json"},
	} {
		if got := loadName(tc.path, tc.dir); got != tc.want {
			t.Errorf("loadName(%q, %q) = %q, want %q", tc.path, tc.dir, got, tc.want)
		}
	}
}
