package engine

import (
	"context"
	"testing"

	"mlxchat/engine/enginetest"
	"mlxchat/kvcache"
	"mlxchat/models/synth"
	"mlxchat/tensor/cpu"
)

// familyDir writes the tiny 4-bit model of family into a test directory.
func familyDir(t *testing.T, family string) string {
	t.Helper()
	dir := t.TempDir()
	if err := enginetest.WriteTinyFamily(dir, family, 4, 11); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newFamily starts an engine on the tiny model of family in dir, on the CPU.
func newFamily(t *testing.T, dir, family string, s Settings) (*Engine, *watchModel) {
	t.Helper()
	be := cpu.New(2)
	t.Cleanup(be.Close)
	b, err := LoadBundle(dir, be, "tiny-"+family)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Model.Config().ModelType; got != family {
		t.Fatalf("loaded model_type %q, want %q", got, family)
	}
	wm := &watchModel{Model: b.Model}
	b.Model = wm
	e, err := FromBundle(b, Options{Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(context.Background())
	t.Cleanup(e.Close)
	return e, wm
}

// TestFamiliesTrimAndReuse runs, for every family, a prompt of more than
// three times MaxKV prefilled in chunks, trimming between chunks, the
// meter's live window never above the cap and seen = live + trimmed; then
// a second turn continues the trimmed cache, forwarding only the new
// suffix, and trims again while it decodes, with finite logits throughout.
func TestFamiliesTrimAndReuse(t *testing.T) {
	const maxKV, chunk = 40, 12
	for _, fam := range synth.Families {
		t.Run(fam, func(t *testing.T) {
			// Turn 1 samples one token, which is never fed: the cache holds
			// exactly the prompt, so any answer text continues it.
			s := Settings{MaxKV: maxKV, PrefillChunk: chunk, MaxTokens: 1, NoLoopDetect: true}
			e, wm := newFamily(t, familyDir(t, fam), fam, s)
			conv := []Message{user(longPrompt())}
			r := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
			mustDone(t, r)
			n := r.stats.PromptTokens
			if n < 3*maxKV {
				t.Fatalf("prompt has %d tokens, want more than %d", n, 3*maxKV)
			}
			wantChunks := (n + chunk - 1) / chunk
			if last := r.prefills[len(r.prefills)-1]; last.Chunks != wantChunks || last.Tokens != n {
				t.Fatalf("last prefill progress %+v, want %d chunks of %d tokens", last, wantChunks, n)
			}
			checkTrims(t, r.trims, "prefill")
			checkStates(t, r.states, maxKV)
			end1 := r.states[len(r.states)-1]
			if end1.Trimmed == 0 || end1.Seen != n {
				t.Fatalf("turn 1 ends at %+v, want trims and %d seen", end1, n)
			}

			conv2 := append(append([]Message(nil), conv...), assistant("it is happy."), user("why is it happy"))
			more := Settings{MaxKV: maxKV, PrefillChunk: chunk, MaxTokens: 20, NoLoopDetect: true}
			before := wm.count()
			r2 := await(t, e, e.Submit(Generate{Conversation: conv2, Settings: &more}), nil)
			d2 := mustDone(t, r2)
			st := r2.stats
			suffix := st.PromptTokens - st.ReusedTokens
			if st.CacheRestart != "" || st.ReusedTokens != end1.Seen || st.ReusedTrimmed != end1.Trimmed || st.PrefillTokens != suffix || suffix >= 40 {
				t.Fatalf("turn 2 stats %+v: want the trimmed cache of %+v continued with a short suffix", *st, end1)
			}
			if got := wm.count() - before; got != suffix+forwardedSteps(d2) {
				t.Fatalf("turn 2 forwarded %d tokens, want %d + %d", got, suffix, forwardedSteps(d2))
			}
			checkTrims(t, r2.trims, "")
			checkStates(t, r2.states, maxKV)
			decodeTrims := 0
			for _, tr := range r2.trims {
				if tr.Phase == "decode" {
					decodeTrims++
				}
			}
			if d2.Tokens > 2 && decodeTrims == 0 {
				t.Fatalf("%d tokens decoded at the cap but no trim during decode", d2.Tokens)
			}
			if d2.Tokens == 0 || wm.nonFiniteCalls() != 0 {
				t.Fatalf("turn 2 generated %d tokens; %d forward calls returned non-finite logits", d2.Tokens, wm.nonFiniteCalls())
			}
		})
	}
}

// checkTrims requires well-formed global trim events, at least one (of
// phase, when not "").
func checkTrims(t *testing.T, trims []Trim, phase string) {
	t.Helper()
	seen := 0
	for _, tr := range trims {
		if tr.Dropped <= 0 || tr.LiveAfter != tr.LiveBefore-tr.Dropped || tr.Kind != kvcache.TrimKindGlobal {
			t.Fatalf("bad trim event %+v", tr)
		}
		if phase == "" || tr.Phase == phase {
			seen++
		}
	}
	if seen == 0 {
		t.Fatalf("no %s trim in %+v", phase, trims)
	}
}

// checkStates requires every meter state under the cap with seen = live +
// trimmed.
func checkStates(t *testing.T, states []CacheState, maxKV int) {
	t.Helper()
	if len(states) == 0 {
		t.Fatal("no cache state events")
	}
	for _, cs := range states {
		if cs.Live > maxKV || cs.Max != maxKV || cs.Seen != cs.Live+cs.Trimmed {
			t.Fatalf("cache state %+v: want live <= %d and seen = live + trimmed", cs, maxKV)
		}
	}
}

// TestFamiliesPrefixReuseAndRewind checks, for every family, that a second
// turn reuses the first turn's prompt and that an edited history rewinds
// the cache (sliding layers included) to the common prefix, with the same
// answer a fresh engine gives.
func TestFamiliesPrefixReuseAndRewind(t *testing.T) {
	for _, fam := range synth.Families {
		t.Run(fam, func(t *testing.T) {
			s := Settings{MaxTokens: 6, PrefillChunk: 5, NoLoopDetect: true, Seed: 3}
			dir := familyDir(t, fam)
			e, _ := newFamily(t, dir, fam, s)
			conv := []Message{user("hello the world, how are you doing on this fine day")}
			r1 := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
			d1 := mustDone(t, r1)
			conv2 := append(append([]Message(nil), conv...), assistant(d1.Text), user("and is it going"))
			r2 := await(t, e, e.Submit(Generate{Conversation: conv2}), nil)
			mustDone(t, r2)
			if r2.stats.ReusedTokens < r1.stats.PromptTokens {
				t.Fatalf("second turn reused %d tokens, want at least turn 1's %d", r2.stats.ReusedTokens, r1.stats.PromptTokens)
			}
			edited := []Message{user("hello the world, how are they doing on this fine day"), assistant(d1.Text), user("and is it going")}
			fed := append([]int32(nil), e.w.cached...)
			common := commonPrefix(promptIDs(t, e, edited), fed)
			r3 := await(t, e, e.Submit(Generate{Conversation: edited}), nil)
			d3 := mustDone(t, r3)
			st := r3.stats
			if common < 8 || st.ReusedTokens != common || st.CacheRewind != RewindDiverged || st.RewoundTokens != len(fed)-common {
				t.Fatalf("edited history: stats %+v, want %d tokens kept and %d rewound", *st, common, len(fed)-common)
			}
			fresh, _ := newFamily(t, dir, fam, s)
			rf := await(t, fresh, fresh.Submit(Generate{Conversation: edited}), nil)
			if df := mustDone(t, rf); df.Text != d3.Text {
				t.Fatalf("rewound cache answered %q, a fresh engine %q", d3.Text, df.Text)
			}
		})
	}
}
