package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mlxchat/engine/enginetest"
	"mlxchat/kvcache"
	"mlxchat/tensor"
)

// awaitFit reads events until the Fit (or Error) of request id.
func awaitFit(t *testing.T, e *Engine, id RequestID) Fit {
	t.Helper()
	timeout := time.After(awaitTimeout)
	for {
		select {
		case ev, ok := <-e.Events():
			if !ok {
				t.Fatal("events closed before the fit check was answered")
			}
			if ev.Request() != id {
				continue
			}
			switch v := ev.(type) {
			case Fit:
				return v
			case Error:
				t.Fatalf("fit check: %v", v.Err)
			}
		case <-timeout:
			t.Fatal("fit check not answered")
		}
	}
}

func TestSettingsKVBits(t *testing.T) {
	for _, tc := range []struct {
		bits int
		err  string
	}{{0, ""}, {32, ""}, {16, ""}, {8, ""}, {4, "kv-bits 4: want 32 (float32), 16 (float16) or 8 (int8)"},
		{64, "kv-bits 64: want 32 (float32), 16 (float16) or 8 (int8)"}, {-8, "kv-bits -8: want 32 (float32), 16 (float16) or 8 (int8)"}} {
		err := Settings{KVBits: tc.bits}.Validate()
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("KVBits %d: error %v, want %q", tc.bits, err, tc.err)
		}
	}
}

// lastLayout returns the last Layout event of a result.
func lastLayout(t *testing.T, r result) Layout {
	t.Helper()
	var l *Layout
	for _, ev := range r.events {
		if v, ok := ev.(Layout); ok {
			l = &v
		}
	}
	if l == nil {
		t.Fatal("no Layout event")
	}
	return *l
}

// TestFitCheckAgreesWithTheCache: a fit check of a draft longer than the
// live window predicts how many of its tokens the model sees; sending the
// draft, the Layout after the prefill (from the cache's real live spans)
// says the same, and the message's cut offset points into its text.
func TestFitCheckAgreesWithTheCache(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       Settings
		context int // max_position_embeddings of the model (0: the tiny model's own)
		cap     int // the live cap the fit check and the cache must use
	}{
		{"cap", Settings{MaxKV: 64, PrefillChunk: 16, MaxTokens: 1, NoLoopDetect: true}, 0, 64},
		{"keep-system", Settings{MaxKV: 96, PrefillChunk: 20, MaxTokens: 1, NoLoopDetect: true, KeepSystem: true, System: "you are a terse assistant."}, 0, 96},
		{"8-bit", Settings{MaxKV: 80, PrefillChunk: 32, MaxTokens: 1, NoLoopDetect: true, KVBits: 8}, 0, 80},
		// No cap: the model's context length is the live window, and
		// the cache trims to it as it would to a cap.
		{"no cap, context 72", Settings{PrefillChunk: 16, MaxTokens: 1, NoLoopDetect: true}, 72, 72},
		{"cap under the context", Settings{MaxKV: 64, PrefillChunk: 16, MaxTokens: 1, NoLoopDetect: true}, 128, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tinyModelDir(t)
			if tc.context > 0 {
				dir = tinyWithContext(t, tc.context)
			}
			e, _ := newTinyFrom(t, dir, tc.s)
			draft := strings.Repeat("every word here is a token or two of a long paste. ", 12)
			conv := []Message{user("hello there"), assistant("hi, what can I do?"), user(draft)}
			f := awaitFit(t, e, e.Submit(FitCheck{Conversation: conv}))
			if f.LiveCap != tc.cap || f.MaxKV != tc.s.MaxKV {
				t.Fatalf("fit %+v: live cap %d (max-kv %d), want %d", f, f.LiveCap, f.MaxKV, tc.cap)
			}
			if f.MessageTokens < 2*tc.cap || f.PromptTokens <= f.MessageTokens || f.Fits {
				t.Fatalf("fit %+v: want a message over twice the cap, not fitting", f)
			}
			if f.Window != tc.cap-f.Sink || f.Visible <= 0 || f.Visible >= f.Window {
				t.Fatalf("fit %+v: window should be the cap minus the sink, visible part of it", f)
			}
			if f.KVBytesPerToken <= 0 {
				t.Fatalf("fit %+v: no KV bytes per token", f)
			}
			switch {
			case f.ContextLength > 0 && tc.cap == f.ContextLength:
				if f.SuggestedMaxKV != 0 || f.SuggestedKVBytes != 0 {
					t.Fatalf("fit %+v: a cap at the model's context has nothing to raise", f)
				}
			case f.ContextLength > 0 && f.ContextLength < f.PromptTokens:
				if f.SuggestedMaxKV != f.ContextLength {
					t.Fatalf("fit %+v: the suggestion should stop at the model's context", f)
				}
			default:
				if f.SuggestedMaxKV < f.PromptTokens || f.SuggestedKVBytes < int64(f.SuggestedMaxKV)*f.KVBytesPerToken {
					t.Fatalf("fit %+v: suggestion should hold the prompt, at least KVBytesPerToken per token", f)
				}
			}
			r := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
			mustDone(t, r)
			if r.stats.PromptTokens != f.PromptTokens {
				t.Fatalf("prompt of %d tokens, the fit check said %d", r.stats.PromptTokens, f.PromptTokens)
			}
			if len(r.trims) == 0 {
				t.Fatalf("no Trim event for a prompt of %d tokens over the %d-token cap", f.PromptTokens, tc.cap)
			}
			for _, cs := range r.states {
				if cs.Max != tc.cap || cs.Live > tc.cap {
					t.Fatalf("cache state %+v: want at most %d live keys, Max %d", cs, tc.cap, tc.cap)
				}
			}
			// The first Layout is sent after the prefill.
			var after *Layout
			for _, ev := range r.events {
				if v, ok := ev.(Layout); ok {
					after = &v
					break
				}
			}
			if after == nil {
				t.Fatal("no Layout after the prefill")
			}
			var msg *MessageSpan
			for i := range after.Messages {
				if after.Messages[i].Index == len(conv)-1 {
					msg = &after.Messages[i]
				}
			}
			if msg == nil {
				t.Fatalf("layout %+v has no span for the draft", after.Messages)
			}
			if msg.Tokens.Len() != f.MessageTokens || msg.Live != f.Visible || msg.Trimmed != f.MessageTokens-f.Visible {
				t.Fatalf("draft span %+v after the prefill; the fit check said %d of %d tokens visible", *msg, f.Visible, f.MessageTokens)
			}
			if msg.CutAt <= 0 || msg.CutAt >= len(draft) {
				t.Fatalf("cut at byte %d of a %d-byte draft", msg.CutAt, len(draft))
			}
			// The text after the cut is the text of the live tokens.
			full, _ := withSystem(conv, tc.s)
			ids := promptIDs(t, e, full)
			live := e.w.tok.(Decoder).Decode(ids[msg.Tokens.End-msg.Live : msg.Tokens.End])
			if got := strings.TrimSpace(draft[msg.CutAt:]); got != strings.TrimSpace(live) {
				t.Fatalf("after the cut at %d: %q; the live tokens decode to %q", msg.CutAt, got, live)
			}
			for _, m := range after.Messages[:len(after.Messages)-1] {
				if m.Index >= 0 && m.Index < 2 && m.Live != 0 {
					t.Fatalf("early message %+v is live, the window holds only the draft's end", m)
				}
			}
		})
	}
}

// document is a long text of paragraphs and headings for the tiny
// tokenizer.
func document(paragraphs int) string {
	var b strings.Builder
	for i := 0; i < paragraphs; i++ {
		if i%4 == 0 {
			b.WriteString("# Part of the story\n\n")
		}
		b.WriteString("The cat sat on the mat and it was happy. The dog ran in the park with a ball. ")
		b.WriteString("It is a long day and the sun is hot.\n\n")
	}
	return b.String()
}

// TestSummarizeMapReduce: a document many times the cap is summarized in
// pieces, each after rewinding to the shared prefix (prefilled once: the
// BOS token that opens it is fed once, and the prefill count says so), the
// summaries are combined into a streamed final answer, the cache never
// trims nor exceeds the cap, and Done carries the piece summaries.
func TestSummarizeMapReduce(t *testing.T) {
	const maxKV = 256
	s := Settings{MaxKV: maxKV, PrefillChunk: 48, NoLoopDetect: true}
	e, wm := newTiny(t, s)
	doc := document(20)
	var progress []SummarizeProgress
	var pieces []SummaryPiece
	r := await(t, e, e.Submit(Summarize{Document: doc, AnswerTokens: 16}), func(ev Event) {
		switch v := ev.(type) {
		case SummarizeProgress:
			progress = append(progress, v)
		case PieceSummary:
			pieces = append(pieces, v.Piece)
		}
	})
	d := mustDone(t, r)
	if len(r.trims) > 0 {
		t.Fatalf("summarize trimmed the cache: %+v", r.trims[0])
	}
	for _, cs := range r.states {
		if cs.Live > maxKV || cs.Seen > maxKV {
			t.Fatalf("cache state %+v over the cap %d", cs, maxKV)
		}
	}
	var maps []SummaryPiece
	for _, p := range pieces {
		if p.Phase == PhaseMap {
			maps = append(maps, p)
		}
	}
	n := len(maps)
	if n < 4 || len(d.Pieces) != n {
		t.Fatalf("%d map pieces, Done has %d: want at least 4 for a document %d bytes long under a %d-token cap", n, len(d.Pieces), len(doc), maxKV)
	}
	// Pieces cover the document in order.
	at := 0
	for i, p := range d.Pieces {
		if p.Piece != i+1 || p.Pieces != n || p.SourceStart != at || p.SourceEnd <= p.SourceStart || p.Tokens == 0 || p.Tokens > 16 {
			t.Fatalf("piece %d: %+v (expected to start at %d)", i, p, at)
		}
		at = p.SourceEnd
	}
	if at != len(doc) {
		t.Fatalf("pieces end at %d of %d bytes", at, len(doc))
	}
	// Progress: map 1..n, then reduce rounds; the last one is final.
	for i := 0; i < n; i++ {
		if p := progress[i]; p.Phase != PhaseMap || p.Piece != i+1 || p.Pieces != n {
			t.Fatalf("progress %d: %+v", i, p)
		}
	}
	last := progress[len(progress)-1]
	if last.Phase != PhaseReduce || last.Pieces != 1 || last.Piece != 1 {
		t.Fatalf("last progress %+v, want the one final combination", last)
	}
	if d.Text == "" || d.Tokens == 0 {
		t.Fatalf("empty final answer: %+v", d)
	}
	// The shared prefix is prefilled once.
	fed := 0
	bos := 0
	wm.mu.Lock()
	for _, ids := range wm.fed {
		fed += len(ids)
		if len(ids) > 1 && ids[0] == 2 { // a prefill chunk opening with the prefix's <bos>
			bos++
		}
	}
	wm.mu.Unlock()
	if bos != 1 {
		t.Fatalf("%d prefill chunks start with <bos>: the shared prefix was prefilled again", bos)
	}
	st := r.stats
	prefix := st.ReusedTokens / (len(progress)) // every prompt reuses the prefix
	if st.PrefillTokens != st.PromptTokens-st.ReusedTokens+prefix {
		t.Fatalf("stats %+v: prefilled %d tokens, want the %d prompt tokens minus the %d reused plus the %d-token prefix once",
			st, st.PrefillTokens, st.PromptTokens, st.ReusedTokens, prefix)
	}
	if fed < st.PrefillTokens || fed > st.PrefillTokens+st.DecodeTokens {
		t.Fatalf("the model was fed %d tokens; stats say %d prefilled and %d decoded", fed, st.PrefillTokens, st.DecodeTokens)
	}
	if stats := e.w.lm.(*modelLM).cache.Stats(); stats.Anchor != -1 {
		t.Fatalf("anchor %d kept after the request", stats.Anchor)
	}
}

// TestSummarizeShortDocument: a document that fits is answered in one go,
// streamed, without pieces.
func TestSummarizeShortDocument(t *testing.T) {
	e, _ := newTiny(t, Settings{MaxKV: 256, NoLoopDetect: true})
	r := await(t, e, e.Submit(Summarize{Document: "The cat sat on the mat.", Instruction: "What did the cat do?", AnswerTokens: 8}), nil)
	d := mustDone(t, r)
	if d.Pieces != nil || d.Tokens == 0 || d.Tokens > 8 {
		t.Fatalf("done %+v: want a direct answer of at most 8 tokens", d)
	}
	for _, ev := range r.events {
		if _, ok := ev.(SummarizeProgress); ok {
			t.Fatalf("progress event %+v for a document in one piece", ev)
		}
	}
}

// TestSummarizeCancelKeepsPieces: cancelling after two pieces ends with
// Done cancelled carrying them; the engine goes on.
func TestSummarizeCancelKeepsPieces(t *testing.T) {
	e, wm := newTiny(t, Settings{MaxKV: 256, PrefillChunk: 48, NoLoopDetect: true})
	// Slow forward passes keep the engine from finishing every piece
	// before the reader sees the second one.
	wm.mu.Lock()
	wm.delay = 5 * time.Millisecond
	wm.mu.Unlock()
	var id RequestID
	got := 0
	id = e.Submit(Summarize{Document: document(40), AnswerTokens: 16})
	r := await(t, e, id, func(ev Event) {
		if _, ok := ev.(PieceSummary); ok {
			if got++; got == 2 {
				e.Submit(Cancel{ID: id})
			}
		}
	})
	if r.done == nil || r.done.Reason != DoneCancelled {
		t.Fatalf("want Done cancelled, got %+v / %+v", r.done, r.err)
	}
	if len(r.done.Pieces) < 2 || r.done.Pieces[0].Piece != 1 || r.done.Pieces[1].Piece != 2 {
		t.Fatalf("cancelled with pieces %+v, want the first two (or more)", r.done.Pieces)
	}
	mustDone(t, await(t, e, e.Submit(Generate{Conversation: []Message{user("hello")}, Settings: &Settings{MaxTokens: 3}}), nil))
}

// TestSummarizeNoRoom: a conversation prefix that leaves no room for
// pieces under the cap is a clear error, not a trim.
func TestSummarizeNoRoom(t *testing.T) {
	e, _ := newTiny(t, Settings{MaxKV: 64, NoLoopDetect: true})
	r := await(t, e, e.Submit(Summarize{Conversation: []Message{user(longPrompt()), assistant("ok")}, Document: document(10)}), nil)
	if r.err == nil || !strings.Contains(r.err.Err.Error(), "leaving") || !strings.Contains(r.err.Err.Error(), "max-kv-size") {
		t.Fatalf("want a no-room error naming max-kv-size, got %+v %+v", r.done, r.err)
	}
}

// TestPinnedMessageSurvivesTrims: a pinned early message stays whole in
// the live window while later turns overflow the cap and trim everything
// else but the sink; the layout, the meter and Stats say so. Pinning a
// message whose tokens were already trimmed prefills the conversation
// again with the pin in place; pins too large for half the cap are a
// clear error.
func TestPinnedMessageSurvivesTrims(t *testing.T) {
	const maxKV = 96
	s := Settings{MaxKV: maxKV, PrefillChunk: 16, MaxTokens: 4, NoLoopDetect: true}
	e, _ := newTiny(t, s)
	key := Message{Role: RoleUser, Content: "remember: the key is blue", Pinned: true}
	conv := []Message{key, assistant("ok"), user(longPrompt())}
	r := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
	d := mustDone(t, r)
	if len(r.trims) == 0 {
		t.Fatal("no trim: the test needs a conversation over the cap")
	}
	l := lastLayout(t, r)
	var pinned, long MessageSpan
	for _, m := range l.Messages {
		switch m.Index {
		case 0:
			pinned = m
		case 2:
			long = m
		}
	}
	if !pinned.Pinned || pinned.Live != pinned.Tokens.Len() || pinned.Trimmed != 0 || pinned.Tokens.Len() < 5 {
		t.Fatalf("pinned message %+v: want all of it live", pinned)
	}
	if long.Trimmed == 0 || long.CutAt == 0 {
		t.Fatalf("long message %+v: want it cut", long)
	}
	if r.stats.PinnedTokens != pinned.Tokens.Len() {
		t.Fatalf("stats pinned %d, the message has %d tokens", r.stats.PinnedTokens, pinned.Tokens.Len())
	}
	last := r.states[len(r.states)-1]
	if last.Pinned != pinned.Tokens.Len() || last.Live > maxKV || len(last.Spans) < 2 || last.Spans[0].Start != 0 {
		t.Fatalf("meter %+v: want the pin counted and the sink first", last)
	}
	// The next turn continues the trimmed cache, the pin still in place.
	conv = append(conv, assistant(d.Text), user("what is the key?"))
	r = await(t, e, e.Submit(Generate{Conversation: conv}), nil)
	mustDone(t, r)
	if r.stats.CacheRestart != "" || r.stats.PinnedTokens != pinned.Tokens.Len() {
		t.Fatalf("second turn: stats %+v, want the cache continued with the pin", r.stats)
	}
	// Pinning the long message, trimmed by now, prefills again with it kept;
	// it does not fit in half the cap, so first pin only the key again.
	conv[2].Pinned = true
	r = await(t, e, e.Submit(Generate{Conversation: conv}), nil)
	if r.err == nil || !strings.Contains(r.err.Err.Error(), "pinned messages") || !strings.Contains(r.err.Err.Error(), "half of max-kv-size 96") {
		t.Fatalf("pins over half the cap: %+v %+v", r.done, r.err)
	}
	conv[2].Pinned = false
	conv[1].Pinned = true // "ok": its tokens were trimmed long ago
	r = await(t, e, e.Submit(Generate{Conversation: conv}), nil)
	mustDone(t, r)
	if r.stats.CacheRestart != RestartPinned {
		t.Fatalf("pinning a trimmed message: restart %q, want %q", r.stats.CacheRestart, RestartPinned)
	}
	for _, m := range lastLayout(t, r).Messages {
		if m.Index <= 1 && m.Live != m.Tokens.Len() {
			t.Fatalf("message %+v: pinned but not all live", m)
		}
	}
}

// TestKVBitsSetting: switching the KV storage empties the cache (the next
// turn says why and prefills again), the meter and Stats report the
// storage, and the same conversation holds fewer bytes at 16 bits than at
// 32 and fewer at 8 than at 16.
func TestKVBitsSetting(t *testing.T) {
	e, _ := newTiny(t, Settings{MaxTokens: 4, NoLoopDetect: true})
	conv := []Message{user(longPrompt())}
	r := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
	mustDone(t, r)
	if r.stats.KVBits != 32 || r.stats.KVBytes == 0 {
		t.Fatalf("stats %+v: want 32-bit (float32) KV by default, with bytes", r.stats)
	}
	last := r.stats.KVBytes
	for _, bits := range []int{16, 8} {
		r := await(t, e, e.Submit(UpdateSettings{Settings: Settings{MaxTokens: 4, NoLoopDetect: true, KVBits: bits}}), nil)
		if r.err != nil {
			t.Fatal(r.err.Err)
		}
		r = await(t, e, e.Submit(Generate{Conversation: conv}), nil)
		mustDone(t, r)
		if r.stats.CacheRestart != RestartKVBits || r.stats.ReusedTokens != 0 || r.stats.KVBits != bits {
			t.Fatalf("after kv-bits %d: stats %+v, want a restart because kv-bits changed", bits, r.stats)
		}
		if r.stats.KVBytes >= last {
			t.Fatalf("%d-bit KV holds %d bytes, the wider storage before it %d: want fewer", bits, r.stats.KVBytes, last)
		}
		if cs := r.states[len(r.states)-1]; cs.KVBits != bits || cs.KVBytes != r.stats.KVBytes {
			t.Fatalf("meter %+v: want kv bits %d and the bytes", cs, bits)
		}
		last = r.stats.KVBytes
	}
	r = await(t, e, e.Submit(UpdateSettings{Settings: Settings{KVBits: 4}}), nil)
	if r.err == nil || r.err.Err.Error() != "kv-bits 4: want 32 (float32), 16 (float16) or 8 (int8)" {
		t.Fatalf("kv-bits 4: %+v", r.err)
	}
}

// TestKVBitsLogitError bounds what 16-bit and 8-bit KV storage change in
// the tiny model's logits over a long prompt (past the sliding window,
// under a cap that trims) and a long decode, against float32 KV: each run
// is made to follow the same tokens, and at every step the logit
// difference stays a small fraction of the logits' spread, and the greedy
// choice agrees almost always.
func TestKVBitsLogitError(t *testing.T) {
	s := Settings{MaxKV: 192, PrefillChunk: 64, MaxTokens: 64, NoLoopDetect: true}
	conv := []Message{user(longPrompt() + longPrompt())}
	e32, w32 := newTiny(t, s)
	r32 := await(t, e32, e32.Submit(Generate{Conversation: conv}), nil)
	d32 := mustDone(t, r32)
	if r32.stats.PromptTokens < 300 || d32.Tokens < 48 || len(r32.trims) == 0 {
		t.Fatalf("want a long prompt, a long answer and trims: stats %+v, %d tokens, %d trims", r32.stats, d32.Tokens, len(r32.trims))
	}
	w32.mu.Lock()
	force := map[int]int32{}
	for call := 1; call < len(w32.fed); call++ {
		if len(w32.fed[call]) == 1 { // a decode step: the token sampled after the previous call
			force[call] = w32.fed[call][0]
		}
	}
	calls := len(w32.last)
	w32.mu.Unlock()
	for _, tc := range []struct {
		bits int
		// Bounds, in standard deviations of the logits: the mean and
		// worst RMS difference per step, the largest difference, and
		// the least share of steps whose greedy choice agrees.
		meanRMS, worstRMS, worst float64
		agree                    int // percent
	}{
		// The random tiny model amplifies the per-element KV rounding
		// error more than a trained model would; each bound is about
		// twice what correct rounding gives here. int8 (at most 1/254 of
		// each head's absmax per element) measured 0.054, 0.22, 0.65,
		// greedy 62/68, and truncating instead of rounding already
		// breaks its bounds (0.077 on average, greedy 52/68); float16
		// (within 2^-11 of each value) measured 0.0017, 0.0076, 0.026,
		// greedy 68/68.
		{16, 0.004, 0.016, 0.06, 95},
		{8, 0.1, 0.4, 1.2, 85},
	} {
		t.Run(fmt.Sprintf("%d-bit", tc.bits), func(t *testing.T) {
			sb := s
			sb.KVBits = tc.bits
			eb, wb := newTiny(t, sb)
			wb.force = force
			db := mustDone(t, await(t, eb, eb.Submit(Generate{Conversation: conv}), nil))
			if db.Tokens != d32.Tokens {
				t.Fatalf("%d-bit run made %d tokens, 32-bit %d", tc.bits, db.Tokens, d32.Tokens)
			}
			wb.mu.Lock()
			defer wb.mu.Unlock()
			if len(wb.last) != calls {
				t.Fatalf("%d-bit run made %d forward calls, 32-bit %d", tc.bits, len(wb.last), calls)
			}
			w32.mu.Lock()
			defer w32.mu.Unlock()
			worst, worstRMS, meanRMS, agree := 0.0, 0.0, 0.0, 0
			for i := 0; i < calls; i++ {
				a, b := w32.last[i], wb.last[i]
				mean, sq := 0.0, 0.0
				for _, v := range a {
					mean += float64(v)
				}
				mean /= float64(len(a))
				for _, v := range a {
					sq += (float64(v) - mean) * (float64(v) - mean)
				}
				std := math.Sqrt(sq / float64(len(a)))
				rel := maxDiff(a, b) / std
				d2 := 0.0
				for j := range a {
					d2 += (float64(a[j]) - float64(b[j])) * (float64(a[j]) - float64(b[j]))
				}
				rms := math.Sqrt(d2/float64(len(a))) / std
				worstRMS = max(worstRMS, rms)
				meanRMS += rms / float64(calls)
				worst = max(worst, rel)
				if tensor.ArgmaxF32(a) == tensor.ArgmaxF32(b) {
					agree++
				}
			}
			t.Logf("%d-bit KV over %d forward calls, in standard deviations of the logits: RMS Δlogit %.4f on average, %.4f at worst; max |Δlogit| %.4f; greedy choice agrees %d/%d",
				tc.bits, calls, meanRMS, worstRMS, worst, agree, calls)
			// Bit-identical logits would mean the storage is not used
			// at all, which the bounds alone let pass.
			if worst == 0 {
				t.Fatalf("%d-bit KV gives the very logits of float32 KV: the storage is not in use", tc.bits)
			}
			if meanRMS > tc.meanRMS || worstRMS > tc.worstRMS || worst > tc.worst || agree < calls*tc.agree/100 {
				t.Fatalf("%d-bit KV: RMS logit difference %.4f on average (bound %g), %.4f at worst (bound %g), max %.4f (bound %g) standard deviations, greedy agreement %d/%d (bound %d%%)",
					tc.bits, meanRMS, tc.meanRMS, worstRMS, tc.worstRMS, worst, tc.worst, agree, calls, tc.agree)
			}
		})
	}
}

// TestSummarizePiecesMatchAFreshCache: every map piece, answered after
// rewinding the cache to the anchored shared prefix, gets the very logits
// a fresh cache fed the prefix and that piece alone gives, at every
// prefill chunk and decode step: what earlier pieces left behind (rows,
// sliding-window keys, the rewound part) changes nothing.
func TestSummarizePiecesMatchAFreshCache(t *testing.T) {
	const maxKV = 256
	e, wm := newTiny(t, Settings{MaxKV: maxKV, PrefillChunk: 40, NoLoopDetect: true})
	// One forward call sequence per prefill (PrefillProgress Chunk 0
	// announces its chunks), then the piece's decode steps: every token
	// but the last is fed back when the piece ends at its answer room.
	type segment struct{ start, prefill, decode int }
	var segs []segment
	calls, mapping := 0, true
	r := await(t, e, e.Submit(Summarize{Document: document(10), AnswerTokens: 12}), func(ev Event) {
		switch v := ev.(type) {
		case SummarizeProgress:
			mapping = mapping && v.Phase == PhaseMap
		case PrefillProgress:
			if v.Chunk == 0 && mapping {
				segs = append(segs, segment{start: calls, prefill: v.Chunks})
				calls += v.Chunks
			}
		case PieceSummary:
			if mapping {
				d := v.Piece.Tokens
				if v.Piece.Reason == DoneMaxTokens {
					d--
				}
				segs[len(segs)-1].decode = d
				calls += d
			}
		}
	})
	d := mustDone(t, r)
	if len(d.Pieces) < 3 || len(segs) != len(d.Pieces)+1 {
		t.Fatalf("%d pieces, %d prefill runs in the map phase: want at least 3 pieces, each prefilled once after the shared prefix", len(d.Pieces), len(segs))
	}
	wm.mu.Lock()
	fed, last := wm.fed, wm.last
	wm.mu.Unlock()
	if len(fed) < calls || len(last) < calls {
		t.Fatalf("the model saw %d calls, the events account for %d", len(fed), calls)
	}
	b := tinyBundle(t, tinyModelDir(t))
	prefix := segs[0]
	for k, seg := range segs[1:] {
		c, err := b.Model.NewCache(kvcache.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetMaxKV(maxKV); err != nil {
			t.Fatal(err)
		}
		var idx []int
		for i := prefix.start; i < prefix.start+prefix.prefill; i++ {
			idx = append(idx, i)
		}
		for i := seg.start; i < seg.start+seg.prefill+seg.decode; i++ {
			idx = append(idx, i)
		}
		for _, i := range idx {
			logits, err := b.Model.Forward(c, fed[i], true)
			if err != nil {
				t.Fatal(err)
			}
			row := logits.F32()
			row = row[len(row)-len(last[i]):]
			if diff := maxDiff(row, last[i]); diff > 1e-5 {
				t.Fatalf("piece %d, forward call %d (%d tokens at offset %d): logits differ from a fresh cache by %g", k+1, i, len(fed[i]), c.Offset()-len(fed[i]), diff)
			}
		}
	}
}

// tinyWithContext is a copy of the tiny model whose config.json says
// max_position_embeddings is context.
func tinyWithContext(t *testing.T, context int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.CopyFS(dir, os.DirFS(tinyModelDir(t))); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["max_position_embeddings"] = context
	if tc, ok := cfg["text_config"].(map[string]any); ok {
		tc["max_position_embeddings"] = context
	}
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSummarizeCapIsTheContextLength: with no MaxKV the model's context
// length is the cap: a document over it is summarized in pieces and the
// cache never holds more.
func TestSummarizeCapIsTheContextLength(t *testing.T) {
	const context = 256
	b := tinyBundle(t, tinyWithContext(t, context))
	if b.Info.ContextLength != context {
		t.Fatalf("context length %d, want %d", b.Info.ContextLength, context)
	}
	e, err := FromBundle(b, Options{Settings: Settings{PrefillChunk: 64, NoLoopDetect: true}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(t.Context())
	t.Cleanup(e.Close)
	r := await(t, e, e.Submit(Summarize{Document: document(12), AnswerTokens: 12}), nil)
	d := mustDone(t, r)
	if len(d.Pieces) < 2 || len(r.trims) > 0 {
		t.Fatalf("%d pieces, %d trims: want a document over the context length in pieces, never trimmed", len(d.Pieces), len(r.trims))
	}
	for _, cs := range r.states {
		if cs.Seen > context || cs.Live > context {
			t.Fatalf("cache state %+v over the %d-token context length", cs, context)
		}
	}
}

// TestSummarizeAfterAChat: a Summarize whose conversation was just answered
// reuses the cache for it (nothing is fed from the first token again), and
// the chat continues after the summary.
func TestSummarizeAfterAChat(t *testing.T) {
	e, wm := newTiny(t, Settings{MaxKV: 256, PrefillChunk: 48, NoLoopDetect: true})
	conv := []Message{user("hello there")}
	d := mustDone(t, await(t, e, e.Submit(Generate{Conversation: conv, Settings: &Settings{MaxKV: 256, PrefillChunk: 48, NoLoopDetect: true, MaxTokens: 4}}), nil))
	conv = append(conv, assistant(d.Text))
	wm.mu.Lock()
	before := len(wm.fed)
	wm.mu.Unlock()
	sd := mustDone(t, await(t, e, e.Submit(Summarize{Conversation: conv, Document: document(12), AnswerTokens: 12}), nil))
	if len(sd.Pieces) < 2 {
		t.Fatalf("%d pieces: want the document in pieces", len(sd.Pieces))
	}
	wm.mu.Lock()
	for _, ids := range wm.fed[before:] {
		if ids[0] == enginetest.BOSID {
			wm.mu.Unlock()
			t.Fatal("the summary fed the conversation from its first token again")
		}
	}
	wm.mu.Unlock()
	conv = append(conv, user("thanks"))
	r := await(t, e, e.Submit(Generate{Conversation: conv, Settings: &Settings{MaxKV: 256, NoLoopDetect: true, MaxTokens: 3}}), nil)
	mustDone(t, r)
	// The cache (at most the 256-token cap past the conversation) is
	// rewound to where the summary's instruction began.
	summary := promptIDs(t, e, append(conv[:2:2], user(DefaultSummarizeInstruction+"\n\nThe")))
	shared := commonPrefix(promptIDs(t, e, conv), summary)
	if r.stats.CacheRestart != "" || r.stats.CacheRewind != RewindDiverged || r.stats.ReusedTokens != shared {
		t.Fatalf("the chat after the summary: stats %+v, want the %d tokens it shares with the summary's prompt reused", *r.stats, shared)
	}
}

// TestFitCheckDuringGenerate: fit checks are answered while a generation
// runs, not after it; each is answered exactly once, the newest with the
// numbers, older ones still waiting with Superseded. (Under -race this
// also checks that the tokenizer and the template are shared safely.)
func TestFitCheckDuringGenerate(t *testing.T) {
	e, wm := newTiny(t, Settings{MaxKV: 64, PrefillChunk: 16, NoLoopDetect: true})
	wm.mu.Lock()
	wm.delay = 5 * time.Millisecond
	wm.mu.Unlock()
	gen := e.Submit(Generate{Conversation: []Message{user("hello there")}, Settings: &Settings{MaxKV: 64, PrefillChunk: 16, NoLoopDetect: true, MaxTokens: 150}})
	var checks []RequestID
	for i := 1; i <= 4; i++ {
		draft := strings.Repeat("a draft that grows as it is typed. ", 4*i)
		checks = append(checks, e.Submit(FitCheck{Conversation: []Message{user("hello there"), assistant("hi"), user(draft)}}))
	}
	answered := map[RequestID]Fit{}
	timeout := time.After(awaitTimeout)
	for len(answered) < len(checks) {
		select {
		case ev := <-e.Events():
			switch v := ev.(type) {
			case Fit:
				if _, dup := answered[v.ID]; dup {
					t.Fatalf("fit check %d answered twice", v.ID)
				}
				answered[v.ID] = v
			case Done:
				if v.ID == gen {
					t.Fatalf("the generation ended (%s) before %d of %d fit checks were answered", v.Reason, len(checks)-len(answered), len(checks))
				}
			case Error:
				t.Fatalf("request %d: %v", v.ID, v.Err)
			}
		case <-timeout:
			t.Fatalf("%d of %d fit checks answered", len(answered), len(checks))
		}
	}
	last := answered[checks[len(checks)-1]]
	if last.Superseded || last.MessageTokens == 0 || last.Fits {
		t.Fatalf("newest fit check: %+v, want the numbers of a draft over the cap", last)
	}
	for _, id := range checks[:len(checks)-1] {
		if f := answered[id]; !f.Superseded && f.MessageTokens == 0 {
			t.Fatalf("fit check %d: %+v, neither superseded nor answered", id, f)
		}
	}
	e.Submit(Cancel{ID: gen})
	if r := await(t, e, gen, nil); r.done == nil {
		t.Fatalf("generation: %+v", r.err)
	}
}

// TestLayoutAnswerNotTrimmed: the answer's last token is sampled but
// never fed to the cache; the Layout after the answer does not count it
// as trimmed, with or without a cap the answer fits.
func TestLayoutAnswerNotTrimmed(t *testing.T) {
	for _, maxKV := range []int{0, 256} {
		e, _ := newTiny(t, Settings{MaxKV: maxKV, MaxTokens: 5, NoLoopDetect: true})
		r := await(t, e, e.Submit(Generate{Conversation: []Message{user("hello there")}}), nil)
		mustDone(t, r)
		l := lastLayout(t, r)
		for _, m := range l.Messages {
			if m.Trimmed != 0 || m.Live != m.Tokens.Len() || m.CutAt != 0 {
				t.Errorf("max-kv %d: message %d span %+v after an answer that fits, want nothing trimmed", maxKV, m.Index, m)
			}
		}
	}
}
