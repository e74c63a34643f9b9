package kvcache

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"mlxchat/tensor"
)

// TestRewindMatchesFreshCache: after Rewind(n) with n <= ExactRewind(),
// the cache goes on exactly like a fresh cache fed the same chunks up to
// the new offset (the chunk holding it cut there): the same stats, and for
// the chunks appended next the same key positions, rows, masks and
// attention outputs. Random configurations, schedules and rewinds (earlier
// rewinds in the schedule are checked against the reference).
func TestRewindMatchesFreshCache(t *testing.T) {
	seeds := int64(120)
	if testing.Short() {
		seeds = 40
	}
	compared := 0
	for seed := int64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			specs, hq, opts := randomConfig(rng, seed%5 == 0)
			h := newHarness(t, specs, hq, opts, seed)
			for step := 0; step < 25; step++ {
				if mc := min(h.ref.maxChunk(), 24); rng.Intn(3) == 0 {
					h.chunk(1+rng.Intn(mc), -1)
				} else {
					for i, k := 0, 1+rng.Intn(6); i < k; i++ {
						h.chunk(1, -1)
					}
				}
				if ex := h.c.ExactRewind(); ex > 0 && rng.Intn(4) == 0 {
					h.rewind(1 + rng.Intn(ex))
				}
			}
			ex := h.c.ExactRewind()
			if ex == 0 {
				return
			}
			h.rewind(1 + rng.Intn(ex))
			compareWithFresh(t, h, opts, rng)
			compared++
		})
	}
	if compared < int(seeds)/3 {
		t.Fatalf("only %d of %d schedules ended with an exact rewind to compare", compared, seeds)
	}
}

// compareWithFresh replays h's committed chunks (the reference's rows) into
// a fresh cache, then appends the same new chunks to both caches and
// compares every view.
func compareWithFresh(t *testing.T, h *harness, opts Options, rng *rand.Rand) {
	t.Helper()
	f, err := New(h.specs, opts)
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for _, n := range h.committed {
		appendRows(t, f, h.specs, n, func(l, i int) ([]float32, []float32) {
			return h.ref.keys[l][pos+i], h.ref.vals[l][pos+i]
		})
		pos += n
	}
	if pos != h.c.Offset() {
		t.Fatalf("replayed %d tokens, the rewound cache is at %d", pos, h.c.Offset())
	}
	a, b := h.c.Stats(), f.Stats()
	if a.Offset != b.Offset || a.Live != b.Live || a.Trimmed != b.Trimmed || a.Sink != b.Sink || h.c.MaxChunk() != f.MaxChunk() {
		t.Fatalf("rewound cache %+v differs from a fresh one fed the same chunks %+v", a, b)
	}
	for l := range a.Layers {
		if a.Layers[l].Live != b.Layers[l].Live {
			t.Fatalf("layer %d: %d live keys after the rewind, %d in a fresh cache", l, a.Layers[l].Live, b.Layers[l].Live)
		}
	}
	for c := 0; c < 3; c++ {
		n := 1
		if c == 0 {
			n = 1 + rng.Intn(min(f.MaxChunk(), 20))
		}
		rows := map[int][2][][]float32{}
		for l, sp := range h.specs {
			if sp.SharedFrom < 0 {
				rows[l] = [2][][]float32{h.randRows(n, sp.KVHeads*sp.HeadDim), h.randRows(n, sp.KVHeads*sp.HeadDim)}
			}
		}
		get := func(l, i int) ([]float32, []float32) { return rows[l][0][i], rows[l][1][i] }
		va := appendRows(t, h.c, h.specs, n, get)
		vb := appendRows(t, f, h.specs, n, get)
		for l, sp := range h.specs {
			q := h.randRows(n, hq(h, l)*sp.HeadDim)
			if err := sameView(va[l], vb[l], q, hq(h, l)); err != nil {
				t.Fatalf("chunk %d of %d tokens after the rewind, layer %d: %v", c, n, l, err)
			}
		}
	}
}

func hq(h *harness, l int) int { return h.hq[l] }

// appendRows runs one chunk of n tokens through every layer of c, taking
// each owning layer's rows from get, and returns the views.
func appendRows(t *testing.T, c *Cache, specs []LayerSpec, n int, get func(l, i int) (k, v []float32)) []View {
	t.Helper()
	if _, err := c.Begin(n); err != nil {
		t.Fatal(err)
	}
	views := make([]View, len(specs))
	for l, sp := range specs {
		var err error
		if sp.SharedFrom >= 0 {
			views[l], err = c.Shared(l)
		} else {
			ks, vs := make([][]float32, n), make([][]float32, n)
			for i := range ks {
				ks[i], vs[i] = get(l, i)
			}
			views[l], err = c.Append(l, toTensor(ks, sp.KVHeads, sp.HeadDim), toTensor(vs, sp.KVHeads, sp.HeadDim))
		}
		if err != nil {
			t.Fatal(err)
		}
		// A view may alias a scratch the next layer's Append reuses
		// (Quantized8): keep a copy.
		views[l] = View{K: cloneTensor(views[l].K), V: cloneTensor(views[l].V), Mask: views[l].Mask}
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	return views
}

func cloneTensor(x *tensor.Tensor) *tensor.Tensor {
	y := tensor.New(x.DType, x.Shape...)
	copy(y.Data, x.Data)
	return y
}

// sameView says how two views differ: key positions, rows by position,
// mask, or attention output for the queries q (up to summation order).
func sameView(a, b View, q [][]float32, hq int) error {
	pa, pb := a.Mask.KeyPositions(), b.Mask.KeyPositions()
	sa, sb := slices.Sorted(slices.Values(pa)), slices.Sorted(slices.Values(pb))
	if !slices.Equal(sa, sb) {
		return fmt.Errorf("key positions %v, fresh cache %v", sa, sb)
	}
	if a.Mask.QueryStart != b.Mask.QueryStart || a.Mask.Rows != b.Mask.Rows || a.Mask.Window != b.Mask.Window {
		return fmt.Errorf("mask %+v, fresh cache %+v", a.Mask, b.Mask)
	}
	row := a.K.Shape[1] * a.K.Shape[2]
	at := map[int]int{}
	for j, p := range pb {
		at[p] = j
	}
	for j, p := range pa {
		k := at[p]
		if !slices.Equal(a.K.F32()[j*row:(j+1)*row], b.K.F32()[k*row:(k+1)*row]) ||
			!slices.Equal(a.V.F32()[j*row:(j+1)*row], b.V.F32()[k*row:(k+1)*row]) {
			return fmt.Errorf("rows of position %d differ", p)
		}
	}
	oa, ob := attendView(a, q, hq), attendView(b, q, hq)
	for i := range oa {
		for j := range oa[i] {
			if math.Abs(oa[i][j]-ob[i][j]) > 1e-12 {
				return fmt.Errorf("attention row %d: %v, fresh cache %v", i, oa[i][j], ob[i][j])
			}
		}
	}
	return nil
}

// TestRewindErrors: impossible rewinds fail with a message saying why and
// change nothing.
func TestRewindErrors(t *testing.T) {
	specs := []LayerSpec{global(1, 2), sliding(1, 2, 4)}
	mk := func(opts Options, tokens int) *Cache {
		c, err := New(specs, opts)
		if err != nil {
			t.Fatal(err)
		}
		feed(t, c, specs, tokens, 5)
		return c
	}
	cases := []struct {
		name    string
		c       *Cache
		n       int
		wantMax int
		want    string
	}{
		{"negative", mk(Options{}, 10), -1, 10, "want 0 to 10"},
		{"more than appended", mk(Options{}, 10), 11, 10, "want 0 to 10"},
		// Window 4 keeps 3 keys plus 2 of slack: back to offset 40-2.
		{"beyond the slack", mk(Options{RewindSlack: 2}, 40), 3, 2, "sliding layer 1 (window 4) keeps 2 keys beyond its window"},
		{"no slack", mk(Options{RewindSlack: NoRewindSlack}, 40), 1, 0, "keeps 0 keys beyond its window"},
		// Max-kv 12, sink 2: 10 recent keys live, the rest trimmed.
		{"into trimmed keys", mk(Options{MaxKV: 12, Sink: 2}, 40), 11, 10, "layer 0 has trimmed the tokens before the last 10 to fit max-kv-size 12"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.MaxRewind(); got != tc.wantMax {
				t.Fatalf("MaxRewind() = %d, want %d", got, tc.wantMax)
			}
			if tc.c.CanRewind(tc.n) {
				t.Fatalf("CanRewind(%d) = true", tc.n)
			}
			before := tc.c.Stats()
			err := tc.c.Rewind(tc.n)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "kvcache: cannot rewind") {
				t.Fatalf("Rewind(%d): error %v, want one containing %q", tc.n, err, tc.want)
			}
			if after := tc.c.Stats(); after.Offset != before.Offset || after.Live != before.Live || after.Layers[1].Live != before.Layers[1].Live || after.Layers[1].Slack != before.Layers[1].Slack {
				t.Fatalf("failed rewind changed the cache: %+v -> %+v", before, after)
			}
			if err := tc.c.Rewind(tc.wantMax); err != nil {
				t.Fatalf("Rewind(MaxRewind() = %d): %v", tc.wantMax, err)
			}
		})
	}
	c := mk(Options{}, 10)
	if _, err := c.Begin(1); err != nil {
		t.Fatal(err)
	}
	if c.MaxRewind() != 0 || c.CanRewind(1) {
		t.Fatalf("a rewind is offered while a chunk is open")
	}
	if err := c.Rewind(1); err == nil || !strings.Contains(err.Error(), "while a chunk of 1 tokens is open") {
		t.Fatalf("Rewind during a chunk: %v", err)
	}
}

// TestRewindSlackMemory: the slack is bounded by RewindSlack rows per
// sliding layer, counted in Stats.Bytes, absent for global layers and with
// NoRewindSlack, and freed by Reset.
func TestRewindSlackMemory(t *testing.T) {
	specs := []LayerSpec{global(2, 8), sliding(2, 8, 16), sharedOf(sliding(2, 8, 16), 1)}
	row := 2 * 8 * 4
	for _, tc := range []struct {
		slack, want int
	}{{0, DefaultRewindSlack}, {NoRewindSlack, 0}, {40, 40}} {
		c, err := New(specs, Options{MaxKV: 64, Step: 16, RewindSlack: tc.slack})
		if err != nil {
			t.Fatal(err)
		}
		feed(t, c, specs, 1000, 50)
		feed(t, c, specs, 500, 1)
		s := c.Stats()
		sl := s.Layers[1]
		if sl.Slack != tc.want || s.Layers[0].Slack != 0 || s.Layers[2].Slack != 0 {
			t.Fatalf("slack %d: layers hold %d, %d, %d slack keys, want 0, %d, 0", tc.slack, s.Layers[0].Slack, sl.Slack, s.Layers[2].Slack, tc.want)
		}
		if want := int64(2 * (sl.Capacity + tc.want) * row); sl.Bytes != want {
			t.Fatalf("slack %d: sliding layer holds %d bytes, want %d (window rows + slack)", tc.slack, sl.Bytes, want)
		}
		if got, want := c.MaxRewind(), min(tc.want, 64-DefaultSink); got != want {
			t.Fatalf("slack %d: MaxRewind() = %d, want %d", tc.slack, got, want)
		}
		c.Reset()
		if s := c.Stats(); s.Bytes != 0 || s.Layers[1].Slack != 0 {
			t.Fatalf("after Reset: %d bytes, %d slack keys", s.Bytes, s.Layers[1].Slack)
		}
	}
}

// TestRewindPastWindowRestoresKeys: a sliding layer rewound further than
// its window gets back the exact keys that slid out, so decoding again
// attends exactly the last window keys (rows compared by value).
func TestRewindPastWindowRestoresKeys(t *testing.T) {
	specs := []LayerSpec{sliding(1, 2, 8)}
	c, err := New(specs, Options{RewindSlack: 30})
	if err != nil {
		t.Fatal(err)
	}
	val := func(p int) []float32 { return []float32{float32(p), -float32(p)} }
	for p := 0; p < 100; p++ {
		appendRows(t, c, specs, 1, func(int, int) ([]float32, []float32) { return val(p), val(p) })
	}
	if got := c.MaxRewind(); got != 30 {
		t.Fatalf("MaxRewind() = %d, want the 30-key slack", got)
	}
	if err := c.Rewind(25); err != nil {
		t.Fatal(err)
	}
	v := appendRows(t, c, specs, 1, func(int, int) ([]float32, []float32) { return val(1000), val(1000) })
	pos := v[0].Mask.KeyPositions()
	if want := []int{68, 69, 70, 71, 72, 73, 74, 75}; !slices.Equal(slices.Sorted(slices.Values(pos)), want) {
		t.Fatalf("after rewinding to 75 the next token sees %v, want %v", pos, want)
	}
	for j, p := range pos {
		want := val(p)
		if p == 75 {
			want = val(1000)
		}
		if got := v[0].K.F32()[2*j : 2*j+2]; !slices.Equal(got, want) {
			t.Fatalf("key at position %d is %v, want %v", p, got, want)
		}
	}
	// The slack kept 63..67 and got 68 back when the new token pushed it
	// out of the window: rewinding to 69 is the most it can do.
	if got := c.MaxRewind(); got != 6 {
		t.Fatalf("MaxRewind() = %d after using 25 of 30 slack keys and appending 1, want 6", got)
	}
}

// TestAnchorRewindMatchesFreshCache: a cache anchored after a prefix can
// rewind to it from far beyond the rewind slack (sliding windows full many
// times over), and then goes on exactly like a fresh cache fed only the
// prefix. No trims: the cap leaves room, as when a document is summarized
// in pieces that fit.
func TestAnchorRewindMatchesFreshCache(t *testing.T) {
	for seed := int64(1); seed <= 60; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			specs, hq, opts := randomConfig(rng, seed%4 == 0)
			specs = append(specs, sliding(1, 4, 2+rng.Intn(6))) // at least one sliding layer
			hq = append(hq, 1+rng.Intn(2))
			opts.MaxKV = 0
			opts.RewindSlack = []int{NoRewindSlack, 1, 3}[rng.Intn(3)]
			h := newHarness(t, specs, hq, opts, seed)
			for i, k := 0, 1+rng.Intn(4); i < k; i++ {
				h.chunk(1+rng.Intn(12), -1) // the shared prefix
			}
			h.anchor()
			for piece := 0; piece < 3; piece++ {
				for i, k := 0, 2+rng.Intn(4); i < k; i++ {
					h.chunk(1+rng.Intn(16), -1) // a piece
				}
				for i, k := 0, 1+rng.Intn(8); i < k; i++ {
					h.chunk(1, -1) // its answer
				}
				n := h.c.Offset() - h.ref.anchor
				if h.c.MaxRewind() >= n {
					t.Fatalf("max rewind %d already reaches the anchor %d back: the slack %d does not make the test", h.c.MaxRewind(), n, opts.RewindSlack)
				}
				if !h.c.CanRewind(n) {
					t.Fatalf("cannot rewind %d tokens to the anchor at %d", n, h.ref.anchor)
				}
				h.rewind(n)
			}
			if s := h.c.Stats(); s.Anchor != h.c.Offset() {
				t.Fatalf("anchor %d after rewinding to it at %d", s.Anchor, h.c.Offset())
			}
			compareWithFresh(t, h, opts, rng)
			// Rewinding before the anchor drops it.
			if n := h.c.Offset() - h.ref.anchor + 1; h.ref.anchor > 0 && h.c.MaxRewind() >= n {
				h.rewind(n)
				if s := h.c.Stats(); s.Anchor != -1 {
					t.Fatalf("anchor %d kept after rewinding before it", s.Anchor)
				}
			}
		})
	}
}

// TestPins: pinned positions survive trims beside the sink, the live spans
// say so, pins that do not fit are refused with a clear error, and a rewind
// into a pinned run drops the pin with its tokens.
func TestPins(t *testing.T) {
	specs := []LayerSpec{global(1, 4), sliding(1, 4, 4), sharedOf(global(1, 4), 0)}
	h := newHarness(t, specs, []int{1, 1, 1}, Options{MaxKV: 24, Sink: 4}, 1)
	h.setPins([]tensor.Span{{Start: 10, Len: 6}})
	if err := h.c.SetSink(8); err == nil || !strings.Contains(err.Error(), "half of max-kv-size") {
		t.Fatalf("SetSink(8) with 6 pinned under max-kv-size 24: %v", err)
	}
	for i := 0; i < 5; i++ {
		h.chunk(8, -1) // 40 tokens under a cap of 24
	}
	s := h.c.Stats()
	want := []tensor.Span{{Start: 0, Len: 4}, {Start: 10, Len: 6}, {Start: 26, Len: 14}}
	if !slices.Equal(s.Spans, want) || s.Pinned != 6 || s.Live != 24 {
		t.Fatalf("after 40 tokens: spans %v pinned %d live %d; want %v, 6, 24", s.Spans, s.Pinned, s.Live, want)
	}
	if mc := h.c.MaxChunk(); mc != 24-4-6 {
		t.Fatalf("max chunk %d, want 14 (cap minus sink and pins)", mc)
	}
	// Sink + pins may use at most half the cap.
	err := h.c.SetPins([]tensor.Span{{Start: 10, Len: 6}, {Start: 30, Len: 3}})
	if err == nil || !strings.Contains(err.Error(), "9 pinned tokens and the 4-token sink need 13, more than half of max-kv-size 24") {
		t.Fatalf("SetPins beyond half the cap: %v", err)
	}
	if err := h.c.SetMaxKV(18); err == nil || !strings.Contains(err.Error(), "pinned") {
		t.Fatalf("SetMaxKV(18) with 6 pinned and a 4-token sink: %v", err)
	}
	if err := h.c.SetPins([]tensor.Span{{Start: -1, Len: 2}}); err == nil {
		t.Fatal("SetPins with a negative start: no error")
	}
	// Unpinned keys are the oldest: the next trim drops them first.
	h.setPins(nil)
	h.chunk(3, -1)
	if s := h.c.Stats(); !slices.Equal(s.Spans, []tensor.Span{{Start: 0, Len: 4}, {Start: 13, Len: 3}, {Start: 26, Len: 17}}) {
		t.Fatalf("after unpinning and 3 more tokens: spans %v", s.Spans)
	}
	// A rewind may go into a pinned run that the recent keys continue.
	h.reset()
	h.setPins([]tensor.Span{{Start: 6, Len: 8}})
	for i := 0; i < 4; i++ {
		h.chunk(6, -1)
	}
	h.chunk(1, -1)
	h.chunk(1, -1) // 26 tokens: [0,4) sink, 4 and 5 trimmed, [6,14) pinned, recent from 14 on
	s = h.c.Stats()
	if !slices.Equal(s.Spans, []tensor.Span{{Start: 0, Len: 4}, {Start: 6, Len: 20}}) {
		t.Fatalf("spans %v", s.Spans)
	}
	if m := h.c.MaxRewind(); m != 20 {
		t.Fatalf("max rewind %d, want 20 (back to position 6, into the pinned run)", m)
	}
	h.rewind(15) // to position 11: pinned positions 11..13 go
	if p := h.c.Pins(); !slices.Equal(p, []tensor.Span{{Start: 6, Len: 5}}) || h.c.Stats().Pinned != 5 {
		t.Fatalf("pins after rewinding into them: %v (pinned %d)", p, h.c.Stats().Pinned)
	}
	h.chunk(5, -1)
}
