package engine

import (
	"math"
	"slices"
	"testing"

	"mlxchat/models/tokenizer"
)

// TestRewindOnDivergedHistory runs real conversations on the tiny model
// whose re-rendered history parts from the tokens the cache was fed inside
// the last answer: turn 2 must forward only the tokens from the divergence
// on (by the model's own count), and, where the rewind undoes no trim, give
// the logits and greedy answer of a fresh engine prefilling everything.
func TestRewindOnDivergedHistory(t *testing.T) {
	tk, err := tokenizer.LoadDir(tinyModelDir(t))
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int32 {
		ids := tk.Encode(s, false)
		if len(ids) != 1 {
			t.Fatalf("%q encodes to %v, want one token", s, ids)
		}
		return ids[0]
	}
	// force makes answer token i the forced[i] (0-based) after a prompt of
	// n tokens prefilled in chunks of chunk: its logits come from Forward
	// call ceil(n/chunk)+i (1-based).
	force := func(n, chunk int, forced ...int32) map[int]int32 {
		m := map[int]int32{}
		for i, f := range forced {
			m[(n+chunk-1)/chunk+i] = f
		}
		return m
	}
	hello := []Message{user("hello the world, how are you")}
	tests := []struct {
		name   string
		s      Settings
		conv   []Message
		forced []int32
		// wantKept is the number of prompt tokens the cache keeps, given
		// turn 1's prompt length; wantRewound the tokens it drops.
		wantKept    func(p1 int) int
		wantRewound int
		fresh       bool   // compare with a fresh engine's full prefill
		restart     string // turn 2 cannot rewind: the reset reason
	}{{
		// The template trims the answer: its leading newline, fed to the
		// cache, is gone from the re-rendered history, so the whole
		// answer (19 fed tokens, past the 8-key window) is rewound and
		// the sliding layers get their window back from the slack.
		name:        "template trims the answer",
		s:           Settings{PrefillChunk: 16, MaxTokens: 20, NoLoopDetect: true},
		conv:        hello,
		forced:      []int32{id("\n")},
		wantKept:    func(p1 int) int { return p1 },
		wantRewound: 19,
		fresh:       true,
	}, {
		// A stop string cut the answer after "abc": its first token "y"
		// was fed (it might have been text), "z" completed the stop.
		name:        "stop string cut the answer",
		s:           Settings{PrefillChunk: 16, MaxTokens: 20, NoLoopDetect: true, StopStrings: []string{"yz"}},
		conv:        hello,
		forced:      []int32{id("a"), id("b"), id("c"), id("y"), id("z")},
		wantKept:    func(p1 int) int { return p1 + 3 },
		wantRewound: 1,
		fresh:       true,
	}, {
		// Under a cap the cache trimmed during prefill and at every
		// decode step; the answer's tokens are still live, so it is
		// rewound (the trimmed tokens stay trimmed).
		name:        "trimmed cache",
		s:           Settings{MaxKV: 40, PrefillChunk: 12, MaxTokens: 12, NoLoopDetect: true},
		conv:        []Message{user(longPrompt())},
		forced:      []int32{id("\n")},
		wantKept:    func(p1 int) int { return p1 },
		wantRewound: 11,
	}, {
		// An answer longer than the 256-token rewind slack: the sliding
		// layers cannot get their window back, so the cache starts over.
		name:    "beyond the rewind slack",
		s:       Settings{PrefillChunk: 16, MaxTokens: 280, NoLoopDetect: true},
		conv:    hello,
		forced:  append([]int32{id("\n")}, slices.Repeat([]int32{id("a")}, 278)...),
		restart: RestartBeyondRewind,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, wm := newTiny(t, tc.s)
			p1 := len(promptIDs(t, e, tc.conv))
			wm.force = force(p1, tc.s.PrefillChunk, tc.forced...)
			d1 := mustDone(t, await(t, e, e.Submit(Generate{Conversation: tc.conv}), nil))
			end1 := e.w.cacheState()
			fed := append([]int32(nil), e.w.cached...)
			if len(fed) != p1+forwardedSteps(d1) {
				t.Fatalf("turn 1 fed %d tokens, want %d prompt + %d answer", len(fed), p1, forwardedSteps(d1))
			}
			conv2 := append(append([]Message(nil), tc.conv...), assistant(d1.Text), user("and is it going"))
			ids2 := promptIDs(t, e, conv2)
			common := commonPrefix(ids2, fed)

			// Turn 2 (and the fresh engine) answer briefly.
			s2 := tc.s
			s2.MaxTokens = 8
			calls, before := wm.callCount(), wm.count()
			r2 := await(t, e, e.Submit(Generate{Conversation: conv2, Settings: &s2}), nil)
			d2 := mustDone(t, r2)
			st := r2.stats
			if tc.restart != "" {
				if len(fed)-common <= 256 || st.CacheRestart != tc.restart || st.ReusedTokens != 0 || st.RewoundTokens != 0 || st.PrefillTokens != len(ids2) {
					t.Fatalf("turn 2 after %d fed tokens, %d in common: stats %+v, want a full prefill because %q", len(fed), common, *st, tc.restart)
				}
				return
			}
			if want := tc.wantKept(p1); common != want || len(fed)-common != tc.wantRewound {
				t.Fatalf("the re-rendered prompt shares %d of %d fed tokens, want %d shared and %d to rewind (answer %q)", common, len(fed), want, tc.wantRewound, d1.Text)
			}
			if st.ReusedTokens != common || st.RewoundTokens != len(fed)-common || st.CacheRewind != RewindDiverged || st.CacheRestart != "" ||
				st.PrefillTokens != len(ids2)-common || st.ReusedTrimmed != end1.Trimmed {
				t.Fatalf("turn 2 stats %+v: want %d reused (%d trimmed), %d rewound because %q, %d prefilled", *st, common, end1.Trimmed, len(fed)-common, RewindDiverged, len(ids2)-common)
			}
			if got := wm.count() - before; got != st.PrefillTokens+forwardedSteps(d2) {
				t.Fatalf("turn 2 forwarded %d tokens, want %d prefilled + %d decoded", got, st.PrefillTokens, forwardedSteps(d2))
			}
			if first := wm.fedAt(calls); first[0] != ids2[common] {
				t.Fatalf("turn 2 starts forwarding with %v, want the divergent token %d", first, ids2[common])
			}
			if p := r2.prefills[0]; p.Reused != common || p.Total != len(ids2)-common {
				t.Fatalf("prefill progress %+v, want %d reused and %d to prefill", p, common, len(ids2)-common)
			}
			for _, cs := range r2.states {
				if tc.s.MaxKV > 0 && cs.Live > tc.s.MaxKV || cs.Seen != cs.Live+cs.Trimmed {
					t.Fatalf("turn 2 cache state %+v: want live <= %d and seen = live + trimmed", cs, tc.s.MaxKV)
				}
			}
			if wm.nonFiniteCalls() != 0 {
				t.Fatalf("%d forward calls returned non-finite logits", wm.nonFiniteCalls())
			}
			if !tc.fresh {
				return
			}
			// A fresh engine prefilling the whole conversation gives the
			// same logits (up to the summation order of keys stored in
			// another order: differences ~1e-4, against ~1 for a wrong
			// cache) and the same greedy answer.
			f, fwm := newTiny(t, tc.s)
			rf := await(t, f, f.Submit(Generate{Conversation: conv2, Settings: &s2}), nil)
			df := mustDone(t, rf)
			chunk := tc.s.PrefillChunk
			got := wm.logitsOf(calls + (len(ids2)-common+chunk-1)/chunk - 1)
			want := fwm.logitsOf((len(ids2)+chunk-1)/chunk - 1)
			if d := maxDiff(got, want); d > 1e-2 {
				t.Fatalf("next-token logits after the rewind differ from a fresh full prefill by %g", d)
			}
			if d2.Text != df.Text || d2.Reason != df.Reason {
				t.Fatalf("answer after the rewind %q (%s), fresh engine %q (%s)", d2.Text, d2.Reason, df.Text, df.Reason)
			}
		})
	}
}

// maxDiff is the largest absolute difference between two logit rows.
func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// logitsOf returns the last logits row of Forward call i (0-based).
func (w *watchModel) logitsOf(i int) []float32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last[i]
}

// fedAt returns the ids of Forward call i (0-based).
func (w *watchModel) fedAt(i int) []int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fed[i]
}

// callCount is the number of Forward calls so far.
func (w *watchModel) callCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls
}
