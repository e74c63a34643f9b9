package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"mlxchat/engine/enginetest"
	"mlxchat/kvcache"
	"mlxchat/models"
	"mlxchat/models/tokenizer"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// The end-to-end tests run the real tiny Gemma 3n model (models/synth
// weights, a matching tokenizer and template) on the CPU backend. The only
// wrapper is watchModel, which counts forwarded tokens and injects faults.

var tinyDir struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tinyDir.dir != "" {
		os.RemoveAll(tinyDir.dir)
	}
	os.Exit(code)
}

// tinyModelDir writes the tiny model once per test binary.
func tinyModelDir(t *testing.T) string {
	t.Helper()
	tinyDir.once.Do(func() {
		tinyDir.dir, tinyDir.err = os.MkdirTemp("", "mlxchat-engine-tiny-")
		if tinyDir.err == nil {
			tinyDir.err = enginetest.WriteTinyModel(tinyDir.dir, 4, 7)
		}
	})
	if tinyDir.err != nil {
		t.Fatal(tinyDir.err)
	}
	return tinyDir.dir
}

// watchModel wraps the real model: it counts the tokens given to Forward
// and can fail or panic on a chosen call.
type watchModel struct {
	models.Model
	mu        sync.Mutex
	calls     int
	forwarded int
	delay     time.Duration
	failAt    int  // 1-based Forward call that fails; 0 = never
	panicking bool // the failing call panics instead of returning an error
	nonFinite int  // Forward calls whose logits held NaN or Inf
	// force maps a 1-based Forward call to a token id made the clear
	// argmax of its last logits row (a model that emits that token next).
	force map[int]int32
	fed   [][]int32   // ids of every Forward call, in order
	last  [][]float32 // the last logits row of every Forward call (before forcing)
}

func (w *watchModel) Forward(c *kvcache.Cache, ids []int32, lastOnly bool) (*tensor.Tensor, error) {
	w.mu.Lock()
	w.calls++
	call := w.calls
	w.forwarded += len(ids)
	w.fed = append(w.fed, append([]int32(nil), ids...))
	forced, doForce := w.force[call]
	delay := w.delay
	fail := w.failAt == call
	w.mu.Unlock()
	time.Sleep(delay)
	if fail {
		if w.panicking {
			var nilMap map[string]int
			nilMap["boom"]++ // a real runtime panic, as a model bug would give
		}
		return nil, fmt.Errorf("injected fault in forward call %d", call)
	}
	logits, err := w.Model.Forward(c, ids, lastOnly)
	if err == nil && logits != nil && logits.DType == tensor.F32 {
		row := logits.F32()
		w.mu.Lock()
		w.last = append(w.last, append([]float32(nil), row[len(row)-w.Config().VocabSize:]...))
		w.mu.Unlock()
	}
	if err == nil && doForce {
		row := logits.F32()
		row = row[len(row)-w.Config().VocabSize:]
		row[forced] = 1e4
	}
	if err == nil && logits != nil && logits.DType == tensor.F32 {
		for _, v := range logits.F32() {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				w.mu.Lock()
				w.nonFinite++
				w.mu.Unlock()
				break
			}
		}
	}
	return logits, err
}

func (w *watchModel) nonFiniteCalls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nonFinite
}

func (w *watchModel) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.forwarded
}

// newTiny loads the tiny model on the CPU and starts an engine on it.
func newTiny(t *testing.T, s Settings) (*Engine, *watchModel) {
	t.Helper()
	return newTinyFrom(t, tinyModelDir(t), s)
}

// newTinyFrom is newTiny on the model in dir.
func newTinyFrom(t *testing.T, dir string, s Settings) (*Engine, *watchModel) {
	t.Helper()
	var wm *watchModel
	e := startTiny(t, dir, s, func(m models.Model) models.Model {
		wm = &watchModel{Model: m}
		return wm
	})
	return e, wm
}

// tinyBundle loads the model in dir on a 2-thread CPU backend; the test's
// cleanup closes the bundle and then the backend.
func tinyBundle(t *testing.T, dir string) *Bundle {
	t.Helper()
	be := cpu.New(2)
	t.Cleanup(be.Close)
	b, err := LoadBundle(dir, be, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// startTiny loads the model in dir (tinyBundle), replaces it with wrap's
// wrapper and starts an engine with settings s; the test's cleanup closes
// it.
func startTiny(t *testing.T, dir string, s Settings, wrap func(models.Model) models.Model) *Engine {
	t.Helper()
	b := tinyBundle(t, dir)
	b.Model = wrap(b.Model)
	e, err := FromBundle(b, Options{Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(context.Background())
	t.Cleanup(e.Close)
	return e
}

// result is what one request produced.
type result struct {
	events   []Event
	text     string // concatenated Token texts
	done     *Done
	err      *Error
	stats    *Stats
	trims    []Trim
	prefills []PrefillProgress
	states   []CacheState
}

// idle reports whether no request is running or queued.
func (e *Engine) idle() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running == nil && len(e.queue) == 0
}

// await reads events until request id ends (Done, Error, Cleared or
// SettingsChanged). onEvent, when set, sees each of its events as it comes.
// awaitTimeout only guards against a hung engine: under -race on a busy
// two-core machine a summary of many pieces takes well over 30 s.
const awaitTimeout = 3 * time.Minute

func await(t *testing.T, e *Engine, id RequestID, onEvent func(Event)) result {
	t.Helper()
	var r result
	timeout := time.After(awaitTimeout)
	for {
		select {
		case ev, ok := <-e.Events():
			if !ok {
				t.Fatalf("request %d: events closed early", id)
			}
			if ev.Request() != id {
				continue
			}
			r.events = append(r.events, ev)
			if onEvent != nil {
				onEvent(ev)
			}
			switch v := ev.(type) {
			case Token:
				r.text += v.Text
			case Stats:
				r.stats = &v
			case Trim:
				r.trims = append(r.trims, v)
			case PrefillProgress:
				r.prefills = append(r.prefills, v)
			case CacheState:
				r.states = append(r.states, v)
			case Done:
				r.done = &v
				return r
			case Error:
				r.err = &v
				return r
			case Cleared, SettingsChanged:
				return r
			}
		case <-timeout:
			t.Fatalf("request %d: timed out after %d events", id, len(r.events))
		}
	}
}

func mustDone(t *testing.T, r result) *Done {
	t.Helper()
	if r.err != nil {
		t.Fatalf("request failed: %v", r.err.Err)
	}
	if r.done == nil {
		t.Fatal("request ended without Done")
	}
	if r.done.Text != r.text {
		t.Fatalf("Done.Text %q differs from the streamed tokens %q", r.done.Text, r.text)
	}
	return r.done
}

func user(s string) Message      { return Message{Role: RoleUser, Content: s} }
func assistant(s string) Message { return Message{Role: RoleAssistant, Content: s} }

func TestReadyFirst(t *testing.T) {
	e, _ := newTiny(t, Settings{})
	select {
	case ev := <-e.Events():
		r, ok := ev.(Ready)
		if !ok {
			t.Fatalf("first event %T, want Ready", ev)
		}
		if r.Info.VocabSize != 512 || r.Info.Layers != 10 || r.Info.ModelType == "" || r.Info.WeightBytes <= 0 {
			t.Fatalf("Ready info %+v", r.Info)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Ready")
	}
}

// TestMultiTurnPrefixReuse proves that a second turn prefills only the new
// suffix (by the model's own count of forwarded tokens) and that the answer
// equals a from-scratch run; changed history and Reset fall back to a full
// prefill.
func TestMultiTurnPrefixReuse(t *testing.T) {
	s := Settings{MaxTokens: 1, PrefillChunk: 16}
	e, wm := newTiny(t, s)
	conv := []Message{user("hello the world, how are you")}
	r1 := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
	d1 := mustDone(t, r1)
	if r1.stats.ReusedTokens != 0 || r1.stats.PrefillTokens != r1.stats.PromptTokens {
		t.Fatalf("first turn stats %+v, want everything prefilled", *r1.stats)
	}
	if got := wm.count(); got != r1.stats.PromptTokens {
		t.Fatalf("first turn forwarded %d tokens, want the %d prompt tokens", got, r1.stats.PromptTokens)
	}

	// Turn 2: the cache holds turn 1's prompt; only the rest is prefilled.
	s2 := Settings{MaxTokens: 6, PrefillChunk: 16, NoLoopDetect: true}
	conv2 := append(append([]Message(nil), conv...), assistant(d1.Text), user("and is it going"))
	before := wm.count()
	r2 := await(t, e, e.Submit(Generate{Conversation: conv2, Settings: &s2}), nil)
	d2 := mustDone(t, r2)
	st := r2.stats
	if st.ReusedTokens != r1.stats.PromptTokens {
		t.Fatalf("second turn reused %d tokens, want the %d of turn 1", st.ReusedTokens, r1.stats.PromptTokens)
	}
	if st.PrefillTokens != st.PromptTokens-st.ReusedTokens {
		t.Fatalf("second turn prefilled %d of %d (reused %d)", st.PrefillTokens, st.PromptTokens, st.ReusedTokens)
	}
	decodeSteps := d2.Tokens
	if d2.Reason == DoneMaxTokens {
		decodeSteps-- // the last sampled token is never forwarded
	}
	if got := wm.count() - before; got != st.PrefillTokens+decodeSteps {
		t.Fatalf("second turn forwarded %d tokens, want %d prefilled + %d decoded", got, st.PrefillTokens, decodeSteps)
	}
	if len(r2.prefills) == 0 || r2.prefills[0].Reused != st.ReusedTokens {
		t.Fatalf("prefill progress %+v does not report the reuse", r2.prefills)
	}

	// The reused cache gives the same answer as a fresh engine.
	fresh, _ := newTiny(t, s)
	rf := await(t, fresh, fresh.Submit(Generate{Conversation: conv2, Settings: &s2}), nil)
	if df := mustDone(t, rf); df.Text != d2.Text || rf.stats.ReusedTokens != 0 {
		t.Fatalf("fresh answer %q (reused %d), with reuse %q", df.Text, rf.stats.ReusedTokens, d2.Text)
	}

	// Turn 3 with the answer of turn 2 kept: its tokens are reused too when
	// the text re-tokenizes to the same ids; either way nothing is lost.
	conv3 := append(append([]Message(nil), conv2...), assistant(d2.Text), user("ok"))
	r3 := await(t, e, e.Submit(Generate{Conversation: conv3, Settings: &s2}), nil)
	mustDone(t, r3)
	if r3.stats.ReusedTokens < r2.stats.PromptTokens && r3.stats.ReusedTokens != 0 {
		t.Fatalf("third turn reused %d tokens: neither all of turn 2's prompt (%d) nor a clean restart", r3.stats.ReusedTokens, r2.stats.PromptTokens)
	}

	// Edited history: the prompt parts from what the cache was fed inside
	// the first turn; the cache is rewound there and the rest prefilled.
	edited := []Message{user("hello the world, how are they"), assistant(d1.Text), user("and is it going")}
	fed := append([]int32(nil), e.w.cached...)
	common := commonPrefix(promptIDs(t, e, edited), fed)
	before = wm.count()
	r4 := await(t, e, e.Submit(Generate{Conversation: edited, Settings: &s2}), nil)
	d4 := mustDone(t, r4)
	st4 := r4.stats
	if common < 10 || st4.ReusedTokens != common || st4.RewoundTokens != len(fed)-common || st4.CacheRewind != RewindDiverged ||
		st4.CacheRestart != "" || st4.PrefillTokens != st4.PromptTokens-common {
		t.Fatalf("edited history: %+v, want %d tokens kept and %d rewound", *st4, common, len(fed)-common)
	}
	if got := wm.count() - before; got != st4.PrefillTokens+forwardedSteps(d4) {
		t.Fatalf("edited history forwarded %d tokens, want %d prefilled + %d decoded", got, st4.PrefillTokens, forwardedSteps(d4))
	}

	// Reset (/clear) empties the cache: the same conversation is prefilled again.
	rc := await(t, e, e.Submit(Reset{}), nil)
	if len(rc.events) == 0 {
		t.Fatal("no Cleared event")
	}
	if _, ok := rc.events[len(rc.events)-1].(Cleared); !ok {
		t.Fatalf("Reset answered with %T", rc.events[len(rc.events)-1])
	}
	// The full prefill gives the answer the rewound cache gave.
	r5 := await(t, e, e.Submit(Generate{Conversation: edited, Settings: &s2}), nil)
	if d5 := mustDone(t, r5); r5.stats.ReusedTokens != 0 || d5.Text != r4.done.Text {
		t.Fatalf("after Reset: reused %d, answer %q, want 0 and %q", r5.stats.ReusedTokens, d5.Text, r4.done.Text)
	}
}

// promptIDs renders conv with the generation prompt and tokenizes it, as
// the engine does.
func promptIDs(t *testing.T, e *Engine, conv []Message) []int32 {
	t.Helper()
	ids, err := e.w.tok.Encode(mustRender(t, e, conv))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// forwardedSteps is how many of an answer's tokens were fed back: all of
// them when a stop token ended it (the stop token is not counted), else all
// but the last one, which ended it (token limit, stop string, loop, cancel).
func forwardedSteps(d *Done) int {
	if d.Reason == DoneStop {
		return d.Tokens
	}
	return max(0, d.Tokens-1)
}

// longPrompt is a prompt of well over 100 tokens for the tiny tokenizer.
func longPrompt() string {
	return strings.Repeat("the cat is on the mat and it is happy. ", 8)
}

// TestTrimMidPrefill prefills a prompt much longer than MaxKV in small
// chunks: trims happen between chunks, the live window never exceeds MaxKV,
// decoding goes on with further trims, and the next turn starts over.
func TestTrimMidPrefill(t *testing.T) {
	const maxKV, chunk = 40, 12
	s := Settings{MaxKV: maxKV, PrefillChunk: chunk, MaxTokens: 30, NoLoopDetect: true}
	e, _ := newTiny(t, s)
	conv := []Message{user(longPrompt())}
	r := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
	d := mustDone(t, r)
	n := r.stats.PromptTokens
	if n < 3*maxKV {
		t.Fatalf("prompt has %d tokens, want more than %d", n, 3*maxKV)
	}
	wantChunks := (n + chunk - 1) / chunk
	if last := r.prefills[len(r.prefills)-1]; last.Chunks != wantChunks || last.Chunk != wantChunks || last.Tokens != n {
		t.Fatalf("last prefill progress %+v, want %d/%d chunks and %d tokens", last, wantChunks, wantChunks, n)
	}
	var prefillTrims, decodeTrims int
	for _, tr := range r.trims {
		if tr.Dropped <= 0 || tr.LiveAfter != tr.LiveBefore-tr.Dropped || tr.Kind != kvcache.TrimKindGlobal {
			t.Fatalf("bad trim event %+v", tr)
		}
		switch tr.Phase {
		case "prefill":
			prefillTrims++
		case "decode":
			decodeTrims++
		default:
			t.Fatalf("trim phase %q", tr.Phase)
		}
	}
	if prefillTrims == 0 {
		t.Fatal("no trim during prefill")
	}
	if d.Tokens > 2 && decodeTrims == 0 {
		t.Fatalf("%d tokens decoded at the cap but no trim during decode", d.Tokens)
	}
	for _, cs := range r.states {
		if cs.Live > maxKV || cs.Max != maxKV {
			t.Fatalf("cache state %+v exceeds max %d", cs, maxKV)
		}
	}
	last := r.states[len(r.states)-1]
	if last.Trimmed == 0 || last.Seen != last.Live+last.Trimmed {
		t.Fatalf("final cache state %+v: want trimmed > 0 and seen = live + trimmed", last)
	}
}

// TestContinueAfterTrim: turn 1 overflows a small MaxKV and trims; turn 2
// continues the trimmed cache, forwarding only its new suffix (by the
// model's own count), with the live window under the cap and finite logits
// throughout. Diverging history, another system prompt and a raised cap
// fall back to a full prefill.
func TestContinueAfterTrim(t *testing.T) {
	const maxKV, chunk = 40, 12
	s := Settings{MaxKV: maxKV, PrefillChunk: chunk, MaxTokens: 12, NoLoopDetect: true}
	e, wm := newTiny(t, s)
	conv := []Message{user(longPrompt())}
	// Turn 1 samples one token, which is never fed: the cache holds exactly
	// the prompt, so any answer text continues it (the random tiny model's
	// own answers need not re-tokenize to the ids it sampled).
	one := s
	one.MaxTokens = 1
	r1 := await(t, e, e.Submit(Generate{Conversation: conv, Settings: &one}), nil)
	mustDone(t, r1)
	end1 := r1.states[len(r1.states)-1]
	if end1.Trimmed == 0 || end1.Seen != r1.stats.PromptTokens {
		t.Fatalf("turn 1 did not trim or fed more than its prompt: %+v", end1)
	}

	conv2 := append(append([]Message(nil), conv...), assistant("it is happy."), user("why is it happy"))
	before := wm.count()
	r2 := await(t, e, e.Submit(Generate{Conversation: conv2}), nil)
	d2 := mustDone(t, r2)
	st := r2.stats
	if st.ReusedTokens != end1.Seen || st.ReusedTrimmed != end1.Trimmed {
		t.Fatalf("turn 2 stats %+v: want %d reused of which %d trimmed (turn 1 ended at %+v)", *st, end1.Seen, end1.Trimmed, end1)
	}
	suffix := st.PromptTokens - st.ReusedTokens
	if suffix <= 0 || suffix >= 40 || st.PrefillTokens != suffix {
		t.Fatalf("turn 2 prefilled %d of %d prompt tokens (reused %d), want only the short suffix", st.PrefillTokens, st.PromptTokens, st.ReusedTokens)
	}
	decodeSteps := d2.Tokens
	if d2.Reason == DoneMaxTokens {
		decodeSteps-- // the last sampled token is never forwarded
	}
	if got := wm.count() - before; got != suffix+decodeSteps {
		t.Fatalf("turn 2 forwarded %d tokens, want the %d-token suffix + %d decode steps", got, suffix, decodeSteps)
	}
	if len(r2.prefills) == 0 || r2.prefills[0].Reused != st.ReusedTokens || r2.prefills[len(r2.prefills)-1].Total != suffix {
		t.Fatalf("prefill progress %+v does not report the reuse", r2.prefills)
	}
	if len(r2.trims) == 0 || r2.trims[0].LiveBefore != end1.Live {
		t.Fatalf("turn 2 trims %+v: the first should start from turn 1's %d live keys", r2.trims, end1.Live)
	}
	prevTrimmed := end1.Trimmed
	for _, cs := range r2.states {
		if cs.Live > maxKV || cs.Seen != cs.Live+cs.Trimmed || cs.Trimmed < prevTrimmed {
			t.Fatalf("turn 2 cache state %+v: want live <= %d, seen = live + trimmed, trimmed growing from %d", cs, maxKV, prevTrimmed)
		}
		prevTrimmed = cs.Trimmed
	}
	if last := r2.states[len(r2.states)-1]; last.Seen != end1.Seen+suffix+decodeSteps {
		t.Fatalf("turn 2 ends at %+v, want %d seen", last, end1.Seen+suffix+decodeSteps)
	}
	if d2.Tokens == 0 || wm.nonFiniteCalls() != 0 {
		t.Fatalf("turn 2 generated %d tokens; %d forward calls returned non-finite logits", d2.Tokens, wm.nonFiniteCalls())
	}

	if st.CacheRestart != "" {
		t.Fatalf("continued turn reports a restart %q", st.CacheRestart)
	}
	fullPrefill := func(name string, conv []Message, set *Settings, why string) {
		t.Helper()
		r := await(t, e, e.Submit(Generate{Conversation: conv, Settings: set}), nil)
		d := mustDone(t, r)
		if r.stats.ReusedTokens != 0 || r.stats.PrefillTokens != r.stats.PromptTokens || r.stats.CacheRestart != why {
			t.Fatalf("%s: stats %+v, want a full prefill because %q", name, *r.stats, why)
		}
		// CacheState events may be coalesced, but the last one is always
		// delivered: it counts only this request's tokens.
		if cs := r.states[len(r.states)-1]; cs.Seen != r.stats.PromptTokens+forwardedSteps(d) {
			t.Fatalf("%s: last cache state %+v after %d prompt tokens and %d answer tokens, want the cache reset before prefill", name, cs, r.stats.PromptTokens, d.Tokens)
		}
	}
	// Edited history after a trim: the fed tokens part at the front, in
	// the sink and the trimmed tokens, where the cache cannot rewind to.
	edited := append([]Message{user("the dog" + longPrompt())}, conv2[1:]...)
	fullPrefill("edited history", edited, nil, RestartBeyondRewind)
	// Another system prompt changes the front of the prompt.
	sys := one
	sys.System = "be brief"
	fullPrefill("system prompt", edited, &sys, RestartBeyondRewind)
	// A raised cap: the trimmed tokens now fit, so they are prefilled again
	// although the fed history (the last prompt; its one sampled token was
	// not fed) is a prefix of this one.
	more := append(append([]Message(nil), edited...), assistant("ok"), user("more"))
	raised := sys
	raised.MaxKV = 4 * maxKV
	fullPrefill("raised cap", more, &raised, RestartCapRaised)
	off := raised
	off.MaxKV = 0
	fullPrefill("cap off", append(more, assistant("ok"), user("all")), &off, RestartCapRaised)
	// The same conversation again adds nothing: the cache (untrimmed now)
	// is rewound to where the prompt's last prefill chunk began, and that
	// chunk runs again exactly as before (a regenerate repeats the same
	// computation, so seeded answers repeat).
	again := append(more, assistant("ok"), user("all"))
	ra := await(t, e, e.Submit(Generate{Conversation: again, Settings: &off}), nil)
	mustDone(t, ra)
	lastChunk := (ra.stats.PromptTokens-1)%chunk + 1
	if st := ra.stats; st.ReusedTokens != st.PromptTokens-lastChunk || st.PrefillTokens != lastChunk || st.RewoundTokens != lastChunk || st.CacheRewind != RewindNothingNew || st.CacheRestart != "" {
		t.Fatalf("same prompt: stats %+v, want all but the last %d-token chunk reused", *st, lastChunk)
	}
	if cs := e.w.cacheState(); cs.Trimmed != 0 || cs.Live != cs.Seen {
		t.Fatalf("after /kv off: %+v, want every token live", cs)
	}
}

// TestLowerMaxKVBetweenTurns: UpdateSettings lowers MaxKV; the next turn
// reuses the untrimmed prefix and the first Begin trims it.
func TestLowerMaxKVBetweenTurns(t *testing.T) {
	s := Settings{MaxTokens: 1}
	e, _ := newTiny(t, s)
	conv := []Message{user(longPrompt())}
	r1 := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
	d1 := mustDone(t, r1)
	low := Settings{MaxKV: 32, MaxTokens: 4, NoLoopDetect: true}
	rs := await(t, e, e.Submit(UpdateSettings{Settings: low}), nil)
	ch, ok := rs.events[len(rs.events)-1].(SettingsChanged)
	if !ok || ch.Settings.MaxKV != 32 {
		t.Fatalf("UpdateSettings answered %+v", rs.events)
	}
	bad := await(t, e, e.Submit(UpdateSettings{Settings: Settings{MaxKV: 2}}), nil)
	if bad.err == nil {
		t.Fatal("MaxKV 2 (below the sink) accepted")
	}
	r2 := await(t, e, e.Submit(Generate{Conversation: append(conv, assistant(d1.Text), user("ok"))}), nil)
	mustDone(t, r2)
	if r2.stats.ReusedTokens != r1.stats.PromptTokens {
		t.Fatalf("reused %d, want %d", r2.stats.ReusedTokens, r1.stats.PromptTokens)
	}
	if len(r2.trims) == 0 || r2.trims[0].LiveBefore != r1.stats.PromptTokens {
		t.Fatalf("trims %+v: want the first to start from the %d cached tokens", r2.trims, r1.stats.PromptTokens)
	}
	for _, cs := range r2.states {
		if cs.Live > 32 {
			t.Fatalf("live %d over the new cap", cs.Live)
		}
	}
}

// TestCancel stops a request mid-prefill and another mid-decode; the
// partial answer is kept, and the engine keeps working.
func TestCancel(t *testing.T) {
	t.Run("mid-prefill", func(t *testing.T) {
		e, wm := newTiny(t, Settings{PrefillChunk: 4, MaxTokens: 5})
		wm.delay = 5 * time.Millisecond
		var id RequestID
		id = e.Submit(Generate{Conversation: []Message{user(longPrompt())}})
		r := await(t, e, id, func(ev Event) {
			if p, ok := ev.(PrefillProgress); ok && p.Chunk == 2 {
				e.Submit(Cancel{ID: id})
			}
		})
		d := mustDone(t, r)
		last := r.prefills[len(r.prefills)-1]
		if d.Reason != DoneCancelled || d.Text != "" || last.Chunk >= last.Chunks || last.Chunk > 3 {
			t.Fatalf("done %+v after prefill %d/%d; want cancelled within a chunk", d, last.Chunk, last.Chunks)
		}
		wm.delay = 0
		after := await(t, e, e.Submit(Generate{Conversation: []Message{user("hi")}}), nil)
		mustDone(t, after)
	})
	t.Run("mid-decode", func(t *testing.T) {
		e, wm := newTiny(t, Settings{MaxTokens: 400, NoLoopDetect: true})
		// A step slower than reading an event: the tiny model decodes a
		// token in well under a millisecond, and the buffered events let
		// it run many tokens ahead of this reader before the Cancel is
		// sent (12 tokens seen once attention got faster).
		wm.delay = time.Millisecond
		var id RequestID
		tokens := 0
		id = e.Submit(Generate{Conversation: []Message{user("tell me a story")}})
		r := await(t, e, id, func(ev Event) {
			if _, ok := ev.(Token); ok {
				if tokens++; tokens == 3 {
					e.Submit(Cancel{}) // id 0: whatever is running
				}
			}
		})
		d := mustDone(t, r)
		if d.Reason != DoneCancelled {
			t.Fatalf("reason %s after %d tokens, want cancelled (the tiny model stopped on its own; pick another seed)", d.Reason, d.Tokens)
		}
		// Cancel arrives while the engine may be one step ahead: it stops
		// within a decode step or two of the third token event.
		if d.Text == "" || d.Tokens > 8 {
			t.Fatalf("cancelled after %d tokens with text %q", d.Tokens, d.Text)
		}
	})
	t.Run("queued", func(t *testing.T) {
		e, wm := newTiny(t, Settings{MaxTokens: 3})
		wm.delay = 2 * time.Millisecond
		first := e.Submit(Generate{Conversation: []Message{user(longPrompt())}})
		second := e.Submit(Generate{Conversation: []Message{user("hi")}})
		e.Submit(Cancel{ID: second})
		r1 := await(t, e, first, nil)
		mustDone(t, r1)
		if r1.done.Reason == DoneCancelled {
			t.Fatal("cancelling the queued request cancelled the running one")
		}
		r2 := await(t, e, second, nil)
		if d := mustDone(t, r2); d.Reason != DoneCancelled || d.Tokens != 0 {
			t.Fatalf("queued request: %+v, want cancelled before it ran", d)
		}
	})
}

// TestFaultBecomesError: a failing or panicking Forward becomes an Error
// event, the cache is reset, and the next request gives the same answer a
// healthy engine gives.
func TestFaultBecomesError(t *testing.T) {
	conv := []Message{user("hello the world, how are you")}
	s := Settings{MaxTokens: 8, PrefillChunk: 8, NoLoopDetect: true}
	ref, _ := newTiny(t, s)
	want := mustDone(t, await(t, ref, ref.Submit(Generate{Conversation: conv}), nil)).Text
	tests := []struct {
		name     string
		failAt   int
		panicing bool
	}{
		{"error in prefill", 2, false},
		{"panic in prefill", 1, true},
		{"error in decode", 6, false},
		{"panic in decode", 7, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, wm := newTiny(t, s)
			wm.failAt, wm.panicking = tc.failAt, tc.panicing
			r := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
			if r.err == nil {
				t.Fatalf("no Error event; done %+v", r.done)
			}
			var pe *PanicError
			if isPanic := errors.As(r.err.Err, &pe); isPanic != tc.panicing {
				t.Fatalf("error %v: panic=%v, want %v", r.err.Err, isPanic, tc.panicing)
			}
			if !r.err.CacheReset || r.err.Text != r.text {
				t.Fatalf("error event %+v: want CacheReset and the partial text %q", *r.err, r.text)
			}
			if cs := r.states[len(r.states)-1]; cs.Seen != 0 || cs.Live != 0 {
				t.Fatalf("cache after the fault: %+v, want empty", cs)
			}
			again := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
			if got := mustDone(t, again).Text; got != want {
				t.Fatalf("after the fault the answer is %q, want %q", got, want)
			}
		})
	}
}

// TestSlowReader: the engine never waits for the reader; every token is
// delivered once the reader comes back, and CacheState is coalesced.
func TestSlowReader(t *testing.T) {
	e, _ := newTiny(t, Settings{MaxTokens: 60, NoLoopDetect: true, Temperature: 1, Seed: 3})
	<-e.Events() // Ready
	id := e.Submit(Generate{Conversation: []Message{user("count")}})
	// The whole answer runs while nobody reads: the engine goes idle.
	deadline := time.Now().Add(20 * time.Second)
	for !e.idle() {
		if time.Now().After(deadline) {
			t.Fatal("the engine did not finish while its events were unread")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := await(t, e, id, nil)
	d := mustDone(t, r)
	if d.Tokens == 0 {
		t.Fatal("no tokens")
	}
	if len(r.states) > d.Tokens/2+3 {
		t.Fatalf("%d CacheState events for %d tokens: not coalesced", len(r.states), d.Tokens)
	}
}

// TestSeedAndStopStrings: sampling with a seed is reproducible across
// engines, and a stop string spanning tokens cuts the answer exactly.
func TestSeedAndStopStrings(t *testing.T) {
	s := Settings{Temperature: 0.9, TopP: 0.95, TopK: 100, Seed: 42, MaxTokens: 40, NoLoopDetect: true}
	conv := []Message{user("write something")}
	a, _ := newTiny(t, s)
	b, _ := newTiny(t, s)
	ta := mustDone(t, await(t, a, a.Submit(Generate{Conversation: conv}), nil)).Text
	tb := mustDone(t, await(t, b, b.Submit(Generate{Conversation: conv}), nil)).Text
	if ta != tb || len(ta) < 6 {
		t.Fatalf("same seed, different answers: %q vs %q", ta, tb)
	}
	s2 := s
	s2.Seed = 43
	tc := mustDone(t, await(t, b, b.Submit(Generate{Conversation: conv, Settings: &s2}), nil)).Text
	if tc == ta {
		t.Fatalf("seeds 42 and 43 gave the same 40-token answer %q", ta)
	}
	// Regenerating on the same engine (the cache holds the prompt and the
	// answer) gives the fresh engine's answer again.
	if td := mustDone(t, await(t, b, b.Submit(Generate{Conversation: conv}), nil)).Text; td != ta {
		t.Fatalf("same seed regenerated on a used engine: %q, want %q", td, ta)
	}
	// Stop at a piece from the middle of the answer (several tokens long).
	runes := []rune(ta)
	stop := string(runes[len(runes)/2 : len(runes)/2+3])
	s3 := s
	s3.StopStrings = []string{stop}
	r := await(t, b, b.Submit(Generate{Conversation: conv, Settings: &s3}), nil)
	d := mustDone(t, r)
	wantText := ta[:strings.Index(ta, stop)]
	if d.Reason != DoneStopString || d.Text != wantText {
		t.Fatalf("stop %q: done %s %q, want stop_string %q", stop, d.Reason, d.Text, wantText)
	}
}

// TestBadRequests: invalid settings and an empty conversation are Error
// events, not crashes.
func TestBadRequests(t *testing.T) {
	e, _ := newTiny(t, Settings{})
	bad := Settings{TopP: 2}
	for _, req := range []Generate{
		{Conversation: nil},
		{Conversation: []Message{user("x")}, Settings: &bad},
	} {
		r := await(t, e, e.Submit(req), nil)
		if r.err == nil || r.err.CacheReset {
			t.Fatalf("request %+v: want an Error without a cache reset, got %+v", req, r.events)
		}
	}
	mustDone(t, await(t, e, e.Submit(Generate{Conversation: []Message{user("x")}, Settings: &Settings{MaxTokens: 2}}), nil))
}

func TestCloseEndsEvents(t *testing.T) {
	e, wm := newTiny(t, Settings{MaxTokens: 1000, NoLoopDetect: true})
	wm.delay = time.Millisecond
	e.Submit(Generate{Conversation: []Message{user(longPrompt())}})
	time.Sleep(20 * time.Millisecond)
	e.Close()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-e.Events():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("Events not closed after Close")
		}
	}
}

// TestKeepSystem: the sink covers the rendered system prompt, trimming
// never drops it, and a system prompt over half of MaxKV is an Error.
func TestKeepSystem(t *testing.T) {
	sys := "you are a cat and the world is a mat"
	s := Settings{System: sys, KeepSystem: true, MaxKV: 64, PrefillChunk: 8, MaxTokens: 3}
	e, _ := newTiny(t, s)
	conv := []Message{user(longPrompt())}
	r := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
	mustDone(t, r)
	if len(r.trims) == 0 {
		t.Fatal("no trims")
	}
	// The system prompt's tokens are the sink: the rendering with the system
	// message and an empty user turn shares that prefix with the prompt.
	ids, _ := e.w.tok.Encode(mustRender(t, e, append([]Message{{Role: RoleSystem, Content: sys}}, conv...)))
	n := e.w.systemPrefix(append([]Message{{Role: RoleSystem, Content: sys}}, conv...), ids)
	sysOnly, _ := e.w.tok.Encode(sys)
	if n <= len(sysOnly) || n >= len(ids) {
		t.Fatalf("system prefix %d tokens; the system text alone is %d, the prompt %d", n, len(sysOnly), len(ids))
	}
	if got := e.w.lm.(*modelLM).cache.Sink(); got != n {
		t.Fatalf("cache sink %d, want the %d system-prompt tokens", got, n)
	}
	small := s
	small.MaxKV = 2*n - 2
	r2 := await(t, e, e.Submit(Generate{Conversation: conv, Settings: &small}), nil)
	if r2.err == nil || !strings.Contains(r2.err.Err.Error(), "system prompt") {
		t.Fatalf("system prompt over half the cache: %+v", r2.events)
	}
}

func mustRender(t *testing.T, e *Engine, msgs []Message) string {
	t.Helper()
	s, err := e.w.tmpl.Render(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLoopDetection: greedy decoding of the tiny model falls into a cycle on
// this prompt; the detector ends it, and without it the answer runs on.
func TestLoopDetection(t *testing.T) {
	e, _ := newTiny(t, Settings{MaxTokens: 300})
	conv := []Message{user("the cat")}
	d := mustDone(t, await(t, e, e.Submit(Generate{Conversation: conv}), nil))
	if d.Reason != DoneLoop || d.Tokens >= 300 {
		t.Fatalf("done %s after %d tokens, want loop", d.Reason, d.Tokens)
	}
	// Start over, so the same prompt runs through the same kernels (a
	// rewound cache would prefill its last token alone, at another
	// rounding, and the random model's greedy path may part).
	await(t, e, e.Submit(Reset{}), nil)
	off := Settings{MaxTokens: 80, NoLoopDetect: true}
	d2 := mustDone(t, await(t, e, e.Submit(Generate{Conversation: conv, Settings: &off}), nil))
	if d2.Tokens <= d.Tokens || !strings.HasPrefix(d2.Text, d.Text) {
		t.Fatalf("without detection: %s after %d tokens (%q), want a longer answer starting with %q", d2.Reason, d2.Tokens, d2.Text, d.Text)
	}
}

// TestSpecialTokensHidden: control tokens the model emits mid-answer
// (<start_of_turn>, <pad>, <bos>) are fed back but never shown; the answer
// is the decoding of the other tokens. Stop tokens still end it.
func TestSpecialTokensHidden(t *testing.T) {
	e, wm := newTiny(t, Settings{MaxTokens: 20, NoLoopDetect: true})
	// Call 1 is the prompt; calls 2.. feed one sampled token each and their
	// logits choose the next one.
	wm.force = map[int]int32{
		2: enginetest.StartOfTurnID,
		3: enginetest.PadID,
		5: enginetest.BOSID,
		7: enginetest.EOSID,
	}
	r := await(t, e, e.Submit(Generate{Conversation: []Message{user("hello")}}), nil)
	d := mustDone(t, r)
	if d.Reason != DoneStop || d.Tokens != 6 {
		t.Fatalf("done %s after %d tokens, want stop after 6", d.Reason, d.Tokens)
	}
	wm.mu.Lock()
	var answer []int32
	for _, ids := range wm.fed[1:] {
		answer = append(answer, ids...)
	}
	wm.mu.Unlock()
	if len(answer) != 6 || answer[1] != enginetest.StartOfTurnID || answer[2] != enginetest.PadID || answer[4] != enginetest.BOSID {
		t.Fatalf("fed answer ids %v, want the forced control tokens at 1, 2 and 4", answer)
	}
	tk, err := tokenizer.LoadDir(tinyModelDir(t))
	if err != nil {
		t.Fatal(err)
	}
	var plain []int32
	for _, id := range answer {
		if !tk.IsSpecial(id) {
			plain = append(plain, id)
		}
	}
	if want := tk.Decode(plain); d.Text != want {
		t.Fatalf("answer %q, want %q (the decoding without control tokens)", d.Text, want)
	}
	for _, ctl := range []string{"<start_of_turn>", "<pad>", "<bos>", "<eos>"} {
		if strings.Contains(d.Text, ctl) {
			t.Fatalf("answer %q shows %s", d.Text, ctl)
		}
	}
}
