package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mlxchat/engine"
	"mlxchat/engine/enginetest"
	"mlxchat/tensor/cpu"
)

// tinyDir is the tiny model, written once per test binary, with the real
// Gemma 3n chat template (models/chat/testdata), which refuses a
// conversation whose roles do not alternate, as the real model's does.
var tinyDir struct {
	once sync.Once
	dir  string
	err  error
}

func tinyGemmaModel(t *testing.T) string {
	t.Helper()
	tinyDir.once.Do(func() {
		tinyDir.dir, tinyDir.err = os.MkdirTemp("", "mlxchat-ui-tiny-")
		if tinyDir.err != nil {
			return
		}
		if tinyDir.err = enginetest.WriteTinyModel(tinyDir.dir, 4, 7); tinyDir.err != nil {
			return
		}
		var tmpl []byte
		tmpl, tinyDir.err = os.ReadFile(filepath.Join(moduleRoot(t), "models", "chat", "testdata", "templates", "gemma3n.jinja"))
		if tinyDir.err != nil {
			return
		}
		cfgPath := filepath.Join(tinyDir.dir, "tokenizer_config.json")
		var cfg map[string]any
		var data []byte
		if data, tinyDir.err = os.ReadFile(cfgPath); tinyDir.err != nil {
			return
		}
		if tinyDir.err = json.Unmarshal(data, &cfg); tinyDir.err != nil {
			return
		}
		cfg["chat_template"] = string(tmpl)
		if data, tinyDir.err = json.Marshal(cfg); tinyDir.err != nil {
			return
		}
		tinyDir.err = os.WriteFile(cfgPath, data, 0o644)
	})
	if tinyDir.err != nil {
		t.Fatal(tinyDir.err)
	}
	return tinyDir.dir
}

// chatSession is Run on the real engine with the tiny model, driven
// through a pipe.
type chatSession struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *syncBuffer
	errc  chan error
	state string
	eng   *engine.Engine
}

func startChat(t *testing.T, state string, s engine.Settings) *chatSession {
	t.Helper()
	return startChatOn(t, tinyGemmaModel(t), state, s)
}

// startChatOn is startChat on the model in dir.
func startChatOn(t *testing.T, dir, state string, s engine.Settings) *chatSession {
	t.Helper()
	be := cpu.New(1)
	t.Cleanup(func() { be.Close() })
	var bundle *engine.Bundle
	e := engine.NewLoading(func(ctx context.Context, progress func(string, int64, int64)) (*engine.Bundle, error) {
		var err error
		bundle, err = engine.LoadBundle(dir, be, "tiny")
		return bundle, err
	}, engine.Options{Settings: s})
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	inR, inW := io.Pipe()
	cs := &chatSession{t: t, in: inW, out: &syncBuffer{}, errc: make(chan error, 1), state: state, eng: e}
	t.Cleanup(func() {
		inW.Close()
		cancel()
		e.Close()
		if bundle != nil {
			bundle.Close()
		}
	})
	go func() {
		cs.errc <- Run(ctx, Options{
			Engine: e, ModelName: "tiny", Settings: s, CountTokens: e.CountTokens,
			ConfigPath: writeConfig(t, `{}`), StateDir: state,
			NoColor: true, Input: inR, Output: cs.out, Inline: true,
		})
	}()
	cs.waitScreen("the chat to open", "tiny is ready")
	return cs
}

func (cs *chatSession) typeLine(s string) {
	cs.t.Helper()
	if _, err := io.WriteString(cs.in, s+"\r"); err != nil {
		cs.t.Fatal(err)
	}
}

// waitScreen waits until the output since the call shows want. The
// deadline only keeps a broken run from hanging: it is generous because a
// -race run on a loaded 2-core machine can take a minute per step.
func (cs *chatSession) waitScreen(what, want string) {
	cs.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(cs.out.String(), want) {
		if out := cs.out.String(); strings.Contains(out, "answer failed") && !strings.Contains(want, "failed") {
			cs.t.Fatalf("waiting for %s, an answer failed:\n%s", what, tail(out, 3000))
		}
		if time.Now().After(deadline) {
			cs.t.Fatalf("timed out waiting for %s (%q); output tail:\n%s", what, want, tail(cs.out.String(), 3000))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (cs *chatSession) quit() {
	cs.t.Helper()
	io.WriteString(cs.in, "\x03")
	time.Sleep(30 * time.Millisecond)
	io.WriteString(cs.in, "\x03")
	select {
	case err := <-cs.errc:
		if err != nil {
			cs.t.Fatalf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		cs.t.Fatal("the chat did not quit")
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestLoadRepairEndToEnd loads files a crash leaves (ending with a
// question; two questions in a row) into a chat on the real engine and
// the Gemma template, then sends a message: it is answered, where it used
// to fail with "Conversation roles must alternate".
func TestLoadRepairEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the tiny model")
	}
	tests := []struct {
		name string
		msgs []savedMessage
	}{
		{"ends with a question", []savedMessage{{Role: "user", Content: "hello"}, {Role: "assistant", Content: "hi"}, {Role: "user", Content: "lost answer"}}},
		{"two questions in a row", []savedMessage{{Role: "user", Content: "one"}, {Role: "user", Content: "two"}, {Role: "assistant", Content: "hi"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			crash := filepath.Join(state, "conversations", "crash.json")
			if err := saveConversation(crash, conversationFile{Model: "tiny", Messages: tc.msgs}); err != nil {
				t.Fatal(err)
			}
			s := engine.DefaultSettings()
			s.MaxTokens = 4
			s.NoLoopDetect = true
			cs := startChat(t, state, s)
			cs.typeLine("/load crash")
			cs.waitScreen("the load", "repaired")
			cs.typeLine(" and the next question")
			cs.waitScreen("the answer", "answer cut at /max 4 tokens")
			if strings.Contains(cs.out.String(), "alternate") {
				t.Fatalf("the engine refused the repaired conversation:\n%s", tail(cs.out.String(), 2000))
			}
			cs.quit()
			c := readConv(t, crash)
			n := len(c.Messages)
			if n < 2 || c.Messages[n-1].Role != "assistant" || c.Messages[n-1].Content == "" ||
				!strings.HasSuffix(c.Messages[n-2].Content, " and the next question") {
				t.Errorf("saved conversation after the repair: %+v", c.Messages)
			}
			for i, sm := range c.Messages {
				if want := []string{"user", "assistant"}[i%2]; sm.Role != want {
					t.Errorf("saved message %d is %s, want %s", i, sm.Role, want)
				}
			}
		})
	}
}

// TestPrefillMeterShowsAtOnce: the real engine reports prefill progress
// before the first chunk, so the status line reads "prefill 0/N chunks"
// from the start instead of staying blank through a long first chunk.
func TestPrefillMeterShowsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the tiny model")
	}
	dir := tinyGemmaModel(t)
	be := cpu.New(1)
	defer be.Close()
	b, err := engine.LoadBundle(dir, be, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := engine.DefaultSettings()
	s.PrefillChunk, s.MaxTokens = 8, 1
	e, err := engine.FromBundle(b, engine.Options{Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(context.Background())
	defer e.Close()
	id := e.Submit(engine.Generate{Conversation: []engine.Message{{Role: "user", Content: strings.Repeat("hello there ", 10)}}})
	var first *engine.PrefillProgress
	timeout := time.After(60 * time.Second)
	for first == nil {
		select {
		case ev := <-e.Events():
			if p, ok := ev.(engine.PrefillProgress); ok && p.ID == id {
				first = &p
			}
		case <-timeout:
			t.Fatal("no prefill progress")
		}
	}
	if first.Chunk != 0 || first.Chunks < 2 || first.Total == 0 {
		t.Fatalf("first prefill progress %+v, want chunk 0 of several", *first)
	}
	m, fe := newTestModel(t)
	ready(m)
	_, gid := send(t, m, fe, "hi")
	p := *first
	p.Header = hdr(gid, 0)
	events(m, p)
	if s := screen(m); !strings.Contains(s, fmt.Sprintf("prefill 0/%d chunks", first.Chunks)) {
		t.Errorf("status line lacks prefill 0/%d:\n%s", first.Chunks, s)
	}
}
