package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Temporary development harness until the real tiny model lands.

type toyTok struct{}

const (
	toyBOS = 256
	toyEOT = 257
)

func (toyTok) Encode(text string) ([]int32, error) {
	var out []int32
	for len(text) > 0 {
		switch {
		case strings.HasPrefix(text, "<bos>"):
			out = append(out, toyBOS)
			text = text[5:]
		case strings.HasPrefix(text, "<eot>"):
			out = append(out, toyEOT)
			text = text[5:]
		default:
			out = append(out, int32(text[0]))
			text = text[1:]
		}
	}
	return out, nil
}

type toyStream struct{ buf []byte }

func (s *toyStream) Add(id int32) string {
	if id < 256 {
		s.buf = append(s.buf, byte(id))
	}
	n := len(s.buf)
	for n > 0 && !utf8.Valid(s.buf[:n]) {
		n--
	}
	out := string(s.buf[:n])
	s.buf = s.buf[n:]
	return out
}
func (s *toyStream) Flush() string { out := string(s.buf); s.buf = nil; return out }

func (toyTok) NewStream() StreamDecoder { return &toyStream{} }

type toyTmpl struct{}

func (toyTmpl) Render(msgs []Message, gen bool) (string, error) {
	var b strings.Builder
	b.WriteString("<bos>")
	for _, m := range msgs {
		fmt.Fprintf(&b, "[%s]%s<eot>", m.Role, m.Content)
	}
	if gen {
		b.WriteString("[assistant]")
	}
	return b.String(), nil
}

type toyLM struct {
	seen, live, trimmed, maxKV, sinkN int
	pending                           int
	forwarded                         int
	script                            string // answer emitted after the prompt
	pos                               int
	fail                              func(ids []int32) error
	delay                             time.Duration
}

func (m *toyLM) vocabSize() int { return 258 }
func (m *toyLM) configure(maxKV, sink int) (bool, error) {
	m.maxKV = maxKV
	if sink != m.sinkN {
		m.sinkN = sink
		return true, m.reset()
	}
	return false, nil
}
func (m *toyLM) reset() error { m.seen, m.live, m.trimmed, m.pos = 0, 0, 0, 0; return nil }
func (m *toyLM) maxChunk() int {
	if m.maxKV == 0 {
		return 1 << 30
	}
	return m.maxKV - m.sinkN
}
func (m *toyLM) begin(n int) (trimInfo, error) {
	m.pending = n
	if m.maxKV > 0 && m.live+n > m.maxKV {
		drop := m.live + n - m.maxKV
		if m.live-drop < min(m.sinkN, m.live) {
			return trimInfo{}, fmt.Errorf("chunk of %d does not fit", n)
		}
		before := m.live
		m.live -= drop
		m.trimmed += drop
		return trimInfo{Dropped: drop, LiveBefore: before, LiveAfter: m.live, Kind: "global"}, nil
	}
	return trimInfo{}, nil
}
func (m *toyLM) forward(ids []int32) ([]float32, error) {
	if m.fail != nil {
		if err := m.fail(ids); err != nil {
			return nil, err
		}
	}
	time.Sleep(m.delay)
	m.forwarded += len(ids)
	m.seen += len(ids)
	m.live += len(ids)
	logits := make([]float32, 258)
	if ids[len(ids)-1] == ']' && len(ids) > 1 || m.pos > 0 || len(ids) == 1 {
		// answer the script, then EOT
	}
	next := int32(toyEOT)
	if len(ids) > 1 {
		m.pos = 0
	}
	if m.pos < len(m.script) {
		next = int32(m.script[m.pos])
	}
	m.pos++
	logits[next] = 10
	return logits, nil
}
func (m *toyLM) state() (CacheState, int64) {
	return CacheState{Live: m.live, Max: m.maxKV, Seen: m.seen, Trimmed: m.trimmed}, int64(m.live * 8)
}

func toyEngine(t *testing.T, m *toyLM, s Settings) *Engine {
	w, err := newWorkerLM(m, toyTok{}, toyTmpl{}, []int32{toyEOT}, ModelInfo{Name: "toy"}, Options{Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(w, nil, Options{Settings: s})
	e.Start(context.Background())
	t.Cleanup(e.Close)
	return e
}

func collect(t *testing.T, e *Engine, id RequestID) []Event {
	t.Helper()
	var out []Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-e.Events():
			if ev.Request() != id {
				continue
			}
			out = append(out, ev)
			switch ev.(type) {
			case Done, Error, Cleared, SettingsChanged:
				return out
			}
		case <-timeout:
			t.Fatalf("request %d: timed out, got %d events", id, len(out))
		}
	}
}

func TestToyFlow(t *testing.T) {
	m := &toyLM{script: "Hi there"}
	e := toyEngine(t, m, Settings{PrefillChunk: 4})
	conv := []Message{{Role: RoleUser, Content: "hello"}}
	evs := collect(t, e, e.Submit(Generate{Conversation: conv}))
	d := evs[len(evs)-1].(Done)
	if d.Text != "Hi there" || d.Reason != DoneStop {
		t.Fatalf("done %+v", d)
	}
	p1 := m.forwarded
	conv = append(conv, Message{Role: RoleAssistant, Content: d.Text}, Message{Role: RoleUser, Content: "again"})
	evs = collect(t, e, e.Submit(Generate{Conversation: conv}))
	var st Stats
	for _, ev := range evs {
		if s, ok := ev.(Stats); ok {
			st = s
		}
	}
	t.Logf("first %d forwarded, stats %+v", p1, st)
	if st.ReusedTokens == 0 {
		t.Fatalf("no reuse: %+v", st)
	}
}
