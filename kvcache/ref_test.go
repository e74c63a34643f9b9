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

// This file holds the brute-force reference the cache is checked against:
// it keeps every appended key and value by absolute position, tracks the set
// of live positions per layer with plain sorted slices (no rings, no spans),
// and computes attention in float64 over absolute positions.

// refCache mirrors the documented policy with the simplest possible data.
type refCache struct {
	specs    []LayerSpec
	maxKV    int
	sink     int
	didTrim  bool
	sinkKept int
	offset   int
	trimmed  int
	open     bool
	n        int
	live     [][]int       // per owning layer: sorted live positions
	keys     [][][]float32 // per owning layer: rotated K row by position
	vals     [][][]float32 // per owning layer: V row by position
	appended map[int]bool  // owning layers appended in the open chunk
	// capAtBegin is MaxKV as of the last accepted Begin (0 = unlimited):
	// SetMaxKV trims lazily, so live may exceed a new cap until then.
	capAtBegin int
	// slack is how many slid-out positions a sliding layer keeps for
	// rewinding; side holds them per layer (consecutive, oldest first).
	slack int
	side  [][]int
	// trimEnd is the offset at which the last trimming chunk ended
	// (lowered by abort and rewind).
	trimEnd int
	// pinned holds the pinned positions (never trimmed).
	pinned map[int]bool
	// anchor is the anchored offset (-1: none); anchorLive the live
	// positions each sliding layer had then (its newest window-1).
	anchor     int
	anchorLive [][]int
	// pinSaves counts keys that trims kept only because they were pinned.
	pinSaves int
}

func newRef(specs []LayerSpec, opts Options) *refCache {
	r := &refCache{specs: specs, maxKV: opts.MaxKV}
	switch {
	case opts.Sink == 0:
		r.sink = 4
	case opts.Sink > 0:
		r.sink = opts.Sink
	}
	switch {
	case opts.RewindSlack == 0:
		r.slack = 256
	case opts.RewindSlack > 0:
		r.slack = opts.RewindSlack
	}
	r.reset()
	return r
}

func (r *refCache) reset() {
	r.live = make([][]int, len(r.specs))
	r.keys = make([][][]float32, len(r.specs))
	r.vals = make([][][]float32, len(r.specs))
	r.side = make([][]int, len(r.specs))
	r.offset, r.trimmed, r.didTrim, r.sinkKept, r.open, r.n, r.capAtBegin, r.trimEnd = 0, 0, false, 0, false, 0, 0, 0
	r.pinned, r.anchor, r.anchorLive = map[int]bool{}, -1, nil
}

// sinkFor is the effective sink under cap maxKV for a requested sink.
func (r *refCache) sinkFor(maxKV, sink int) int {
	if maxKV > 0 {
		sink = min(sink, maxKV/2)
	}
	if r.didTrim {
		sink = min(sink, r.sinkKept)
	}
	return sink
}

// pinnedOutside counts pinned positions at or after sink.
func (r *refCache) pinnedOutside(pins map[int]bool, sink int) int {
	n := 0
	for p := range pins {
		if p >= sink {
			n++
		}
	}
	return n
}

// fits reports whether sink and pins use at most half of maxKV.
func (r *refCache) fits(maxKV, sink int, pins map[int]bool) bool {
	return maxKV == 0 || len(pins) == 0 || sink+r.pinnedOutside(pins, sink) <= maxKV/2
}

func (r *refCache) isFixed(p int) bool { return p < r.effSink() || r.pinned[p] }

// anchorRewind is the rewind that returns to the anchor, or -1.
func (r *refCache) anchorRewind() int {
	if r.anchor < 0 || r.open {
		return -1
	}
	n := r.offset - r.anchor
	for l, s := range r.specs {
		if s.SharedFrom >= 0 {
			continue
		}
		live := r.live[l]
		if s.Window == 0 {
			run := 0
			for run < len(live) && live[len(live)-1-run] == r.offset-1-run {
				run++
			}
			if run < n {
				return -1
			}
		} else if len(r.anchorLive[l]) < min(r.window(l)-1, r.anchor) {
			return -1
		}
	}
	return n
}

func (r *refCache) canRewind(n int) bool {
	return n >= 0 && (n <= r.maxRewind() || n == r.anchorRewind())
}

func (r *refCache) setAnchor() {
	r.anchor = r.offset
	r.anchorLive = make([][]int, len(r.specs))
	for l, s := range r.specs {
		if s.SharedFrom >= 0 || s.Window == 0 {
			continue
		}
		live := r.live[l]
		r.anchorLive[l] = slices.Clone(live[max(0, len(live)-(r.window(l)-1)):])
	}
}

func (r *refCache) owner(l int) int {
	if r.specs[l].SharedFrom >= 0 {
		return r.specs[l].SharedFrom
	}
	return l
}

func (r *refCache) hasGlobal() bool {
	for _, s := range r.specs {
		if s.SharedFrom < 0 && s.Window == 0 {
			return true
		}
	}
	return false
}

func (r *refCache) effSink() int {
	s := r.sink
	if r.maxKV > 0 {
		s = min(s, r.maxKV/2)
	}
	if r.didTrim {
		s = min(s, r.sinkKept)
	}
	return s
}

func (r *refCache) maxChunk() int {
	if r.maxKV == 0 || !r.hasGlobal() {
		return math.MaxInt
	}
	return r.maxKV - r.effSink() - r.pinnedOutside(r.pinned, r.effSink())
}

// window is the effective window of layer l: min(Window, MaxKV).
func (r *refCache) window(l int) int {
	w := r.specs[l].Window
	if w > 0 && r.maxKV > 0 && r.maxKV < w {
		w = r.maxKV
	}
	return w
}

func (r *refCache) keepWindow() {
	for l, s := range r.specs {
		if s.SharedFrom >= 0 || s.Window == 0 {
			continue
		}
		if keep := r.window(l) - 1; len(r.live[l]) > keep {
			r.slide(l, r.live[l][:len(r.live[l])-keep])
			r.live[l] = r.live[l][len(r.live[l])-keep:]
		}
	}
}

// slide records positions dropped from sliding layer l's window: the side
// list keeps the last r.slack of them while they continue it.
func (r *refCache) slide(l int, dropped []int) {
	if r.slack == 0 {
		return
	}
	side := r.side[l]
	if len(side) > 0 && side[len(side)-1]+1 != dropped[0] {
		side = nil
	}
	side = append(slices.Clone(side), dropped...)
	r.side[l] = side[max(0, len(side)-r.slack):]
}

// maxRewind is the largest accepted rewind: global layers can drop only
// their trailing run of consecutive live positions; a sliding layer needs
// the window-1 positions before the new offset among its live and side
// positions.
func (r *refCache) maxRewind() int {
	if r.open {
		return 0
	}
	best := r.offset
	for l, s := range r.specs {
		if s.SharedFrom >= 0 {
			continue
		}
		live := r.live[l]
		n := 0
		if s.Window == 0 {
			for n < len(live) && live[len(live)-1-n] == r.offset-1-n {
				n++
			}
		} else {
			earliest := r.offset
			switch {
			case len(r.side[l]) > 0:
				earliest = r.side[l][0]
			case len(live) > 0:
				earliest = live[0]
			}
			n = math.MaxInt
			if w := r.window(l); earliest > 0 && w > 1 {
				n = max(0, r.offset-(earliest+w-1))
			}
		}
		best = min(best, n)
	}
	return best
}

func (r *refCache) exactRewind() int {
	return max(0, min(r.maxRewind(), r.offset-r.trimEnd))
}

// rewind drops positions >= offset-n and gives each sliding layer back the
// window-1 positions before the new offset from its side list.
func (r *refCache) rewind(n int) {
	if n == 0 {
		return
	}
	toAnchor := n > r.maxRewind() && n == r.anchorRewind()
	to := r.offset - n
	below := func(ps []int) []int {
		var out []int
		for _, p := range ps {
			if p < to {
				out = append(out, p)
			}
		}
		return out
	}
	for l, s := range r.specs {
		if s.SharedFrom >= 0 {
			continue
		}
		r.live[l] = below(r.live[l])
		if s.Window == 0 {
			continue
		}
		r.side[l] = below(r.side[l])
		if toAnchor {
			// The layer gets its anchor rows back; the slack keeps only
			// positions that continue them.
			a := r.anchorLive[l]
			r.live[l] = slices.Clone(a)
			side := r.side[l]
			if len(a) == 0 || len(side) == 0 || side[len(side)-1]+1 < a[0] {
				r.side[l] = nil
			} else {
				r.side[l] = below2(side, a[0])
			}
			continue
		}
		lo := max(0, to-(r.window(l)-1))
		front := to
		if len(r.live[l]) > 0 {
			front = r.live[l][0]
		}
		if front <= lo {
			continue
		}
		side := r.side[l]
		k := front - lo
		if len(side) < k || side[len(side)-k] != lo {
			panic(fmt.Sprintf("reference: layer %d cannot restore %d..%d from %v", l, lo, front, side))
		}
		r.live[l] = append(slices.Clone(side[len(side)-k:]), r.live[l]...)
		r.side[l] = side[:len(side)-k]
	}
	r.offset = to
	r.trimEnd = min(r.trimEnd, to)
	for p := range r.pinned {
		if p >= to {
			delete(r.pinned, p)
		}
	}
	if r.anchor > to {
		r.anchor, r.anchorLive = -1, nil
	}
}

// below2 returns the positions of ps below end.
func below2(ps []int, end int) []int {
	var out []int
	for _, p := range ps {
		if p < end {
			out = append(out, p)
		}
	}
	return out
}

// begin returns the expected trim (dropped, live before) and whether the
// chunk is accepted.
func (r *refCache) begin(n int) (TrimEvent, bool) {
	if n > r.maxChunk() {
		return TrimEvent{}, false
	}
	var ev TrimEvent
	if r.maxKV > 0 {
		sink := r.effSink()
		for l, s := range r.specs {
			if s.SharedFrom >= 0 || s.Window != 0 {
				continue
			}
			live := r.live[l]
			if len(live)+n <= r.maxKV {
				continue
			}
			for i := 0; i < sink; i++ {
				if live[i] != i {
					panic(fmt.Sprintf("reference: sink position %d missing from %v", i, live))
				}
			}
			d := len(live) + n - r.maxKV
			ev = TrimEvent{Dropped: d, LiveBefore: len(live), LiveAfter: len(live) - d, Kind: TrimKindGlobal}
			var kept []int
			for _, p := range live {
				if d > 0 && !r.isFixed(p) {
					d--
					continue
				}
				if d > 0 && p >= sink {
					r.pinSaves++ // a pin kept a key this trim would have dropped
				}
				kept = append(kept, p)
			}
			if d > 0 {
				panic(fmt.Sprintf("reference: cannot drop %d more keys from %v", d, live))
			}
			r.live[l] = kept
		}
		if ev.Dropped > 0 {
			r.trimmed += ev.Dropped
			r.didTrim = true
			r.sinkKept = sink
			r.trimEnd = r.offset + n
		}
	}
	r.keepWindow()
	r.capAtBegin = r.maxKV
	r.open, r.n = true, n
	r.appended = map[int]bool{}
	return ev, true
}

func (r *refCache) append(l int, k, v [][]float32) {
	for i := range k {
		p := r.offset + i
		r.live[l] = append(r.live[l], p)
		for len(r.keys[l]) <= p {
			r.keys[l] = append(r.keys[l], nil)
			r.vals[l] = append(r.vals[l], nil)
		}
		r.keys[l][p] = k[i] // an aborted chunk's position is overwritten later
		r.vals[l][p] = v[i]
	}
	r.appended[l] = true
}

func (r *refCache) commit() {
	r.offset += r.n
	r.open, r.n = false, 0
	r.keepWindow()
}

func (r *refCache) abort() {
	for l := range r.appended {
		r.live[l] = r.live[l][:len(r.live[l])-r.n]
	}
	r.trimEnd = min(r.trimEnd, r.offset)
	r.open, r.n = false, 0
}

// visible lists the positions query position qp of layer l may attend.
func (r *refCache) visible(l, qp int) []int {
	o := r.owner(l)
	w := r.window(l)
	var out []int
	for _, p := range r.live[o] {
		if p <= qp && (w == 0 || qp-p < w) {
			out = append(out, p)
		}
	}
	return out
}

// attend computes attention for rotated query rows q[i] (hq heads of d) at
// positions offset+i over the reference's live keys of layer l.
func (r *refCache) attend(l int, q [][]float32, hq int) [][]float64 {
	o := r.owner(l)
	spec := r.specs[o]
	d, hkv := spec.HeadDim, spec.KVHeads
	out := make([][]float64, len(q))
	for i := range q {
		qp := r.offset + i
		vis := r.visible(l, qp)
		out[i] = make([]float64, hq*d)
		for h := 0; h < hq; h++ {
			kh := h / (hq / hkv)
			scores := make([]float64, len(vis))
			best := math.Inf(-1)
			for j, p := range vis {
				s := 0.0
				for x := 0; x < d; x++ {
					s += float64(q[i][h*d+x]) * float64(r.keys[o][p][kh*d+x])
				}
				scores[j] = s / math.Sqrt(float64(d))
				best = max(best, scores[j])
			}
			sum := 0.0
			for j := range scores {
				scores[j] = math.Exp(scores[j] - best)
				sum += scores[j]
			}
			for j, p := range vis {
				for x := 0; x < d; x++ {
					out[i][h*d+x] += scores[j] / sum * float64(r.vals[o][p][kh*d+x])
				}
			}
		}
	}
	return out
}

// attendView computes the same attention from a cache View using only the
// view's tensors and mask.
func attendView(view View, q [][]float32, hq int) [][]float64 {
	hkv, d := view.K.Shape[1], view.K.Shape[2]
	kf, vf := view.K.F32(), view.V.F32()
	pos := view.Mask.KeyPositions()
	out := make([][]float64, len(q))
	for i := range q {
		qp := view.Mask.QueryStart + i
		out[i] = make([]float64, hq*d)
		for h := 0; h < hq; h++ {
			kh := h / (hq / hkv)
			scores := make([]float64, len(pos))
			best := math.Inf(-1)
			for j, p := range pos {
				if !view.Mask.Allowed(qp, p) {
					scores[j] = math.Inf(-1)
					continue
				}
				s := 0.0
				row := kf[(j*hkv+kh)*d:]
				for x := 0; x < d; x++ {
					s += float64(q[i][h*d+x]) * float64(row[x])
				}
				scores[j] = s / math.Sqrt(float64(d))
				best = max(best, scores[j])
			}
			sum := 0.0
			for j := range scores {
				scores[j] = math.Exp(scores[j] - best)
				sum += scores[j]
			}
			for j := range pos {
				if scores[j] == 0 {
					continue
				}
				row := vf[(j*hkv+kh)*d:]
				for x := 0; x < d; x++ {
					out[i][h*d+x] += scores[j] / sum * float64(row[x])
				}
			}
		}
	}
	return out
}

// rope rotates one token row (heads x dim, half-split convention, base 1e4)
// at absolute position pos, in float64, rounding the result to float32.
func rope(x []float32, pos, heads, dim int) []float32 {
	out := make([]float32, len(x))
	half := dim / 2
	for h := 0; h < heads; h++ {
		for i := 0; i < half; i++ {
			theta := float64(pos) * math.Pow(10000, -2*float64(i)/float64(dim))
			c, s := math.Cos(theta), math.Sin(theta)
			a, b := float64(x[h*dim+i]), float64(x[h*dim+half+i])
			out[h*dim+i] = float32(a*c - b*s)
			out[h*dim+half+i] = float32(a*s + b*c)
		}
	}
	return out
}

// chooser drives random schedules: *rand.Rand for seeded runs, byteChooser
// for the fuzzer.
type chooser interface{ Intn(n int) int }

type byteChooser struct {
	b []byte
	i int
}

func (c *byteChooser) Intn(n int) int {
	if n <= 1 || c.i >= len(c.b) {
		return 0
	}
	x := int(c.b[c.i])
	c.i++
	if n > 256 && c.i < len(c.b) {
		x = x<<8 | int(c.b[c.i])
		c.i++
	}
	return x % n
}

func (c *byteChooser) done() bool { return c.i >= len(c.b) }

// harness runs chunks through a Cache and the reference side by side and
// checks every view.
type harness struct {
	t      testing.TB
	c      *Cache
	ref    *refCache
	specs  []LayerSpec
	hq     []int // query heads per layer
	data   *rand.Rand
	tol    float64 // on attention outputs
	rowTol float64 // on stored K/V values (0: bit-exact)
	q8     bool
	f16    bool // stored values must be exactly the appended ones rounded to float16
	checks int  // views checked
	// backend, when set, also runs every view through a real
	// tensor.Backend's Attention, compared with backendTol.
	backend    tensor.Backend
	backendTol float64
	// committed lists the sizes of the chunks that make up the cache's
	// current offset (cut at a rewind's target), for replaying them.
	committed []int
	rewinds   int // successful rewinds with n > 0
	restored  int // of those, rewinds that put slid-out keys back
	pinSets   int // accepted SetPins calls
	toAnchor  int // rewinds that went back to the anchor beyond MaxRewind
}

func newHarness(t testing.TB, specs []LayerSpec, hq []int, opts Options, dataSeed int64) *harness {
	t.Helper()
	c, err := New(specs, opts)
	if err != nil {
		t.Fatalf("New(%+v, %+v): %v", specs, opts, err)
	}
	h := &harness{t: t, c: c, ref: newRef(specs, opts), specs: specs, hq: hq, data: rand.New(rand.NewSource(dataSeed)), tol: 1e-9, q8: opts.Quantized8, f16: opts.Float16}
	switch {
	case opts.Quantized8:
		h.tol, h.rowTol = 0.08, 1
	case opts.Float16:
		// Each value within 2^-11 of itself: outputs of unit-variance
		// data move by about 1e-3.
		h.tol = 0.01
	}
	return h
}

// checkSharedTail checks SharedTail for shared layer l in an open chunk of
// n rows at pos0, for a tail length drawn from [1, n]: the source's keys
// and values, queries at the chunk's last positions, and attention over
// it equal to the brute-force reference's rows for those positions.
func (h *harness) checkSharedTail(l, n, pos0 int, q [][]float32) {
	rows := 1 + h.data.Intn(n)
	tail, err := h.c.SharedTail(l, rows)
	if err != nil {
		h.t.Fatalf("SharedTail(%d, %d) of a %d-row chunk: %v", l, rows, n, err)
	}
	if tail.Mask.QueryStart != pos0+n-rows || tail.Mask.Rows != rows {
		h.t.Fatalf("SharedTail(%d, %d): queries from %d, %d rows; want from %d, %d rows", l, rows, tail.Mask.QueryStart, tail.Mask.Rows, pos0+n-rows, rows)
	}
	got := attendView(tail, q[n-rows:], h.hq[l])
	want := h.ref.attend(l, q, h.hq[l])[n-rows:]
	h.compare("shared tail", l, pos0+n-rows, got, want, h.tol, tail)
	for _, bad := range []int{0, n + 1} {
		if _, err := h.c.SharedTail(l, bad); err == nil || !strings.Contains(err.Error(), "want 1 to") {
			h.t.Fatalf("SharedTail(%d, %d) of a %d-row chunk: error %v, want one naming the range", l, bad, n, err)
		}
	}
}

func (h *harness) randRows(n, width int) [][]float32 {
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, width)
		for j := range rows[i] {
			rows[i][j] = float32(h.data.NormFloat64())
		}
	}
	return rows
}

func toTensor(rows [][]float32, heads, dim int) *tensor.Tensor {
	t := tensor.New(tensor.F32, len(rows), heads, dim)
	f := t.F32()
	for i, r := range rows {
		copy(f[i*heads*dim:], r)
	}
	return t
}

// chunk runs one chunk of n tokens. abortAt >= 0 aborts the chunk before
// layer abortAt. It returns false when Begin refused the chunk (as the
// reference predicted).
func (h *harness) chunk(n, abortAt int) bool {
	h.t.Helper()
	t := h.t
	wantEv, ok := h.ref.begin(n)
	ev, err := h.c.Begin(n)
	if !ok {
		if err == nil {
			t.Fatalf("Begin(%d) with max chunk %d: want an error, got none", n, h.ref.maxChunk())
		}
		if !strings.Contains(err.Error(), "cannot fit") {
			t.Fatalf("Begin(%d): unexpected error %v", n, err)
		}
		if mc := h.c.MaxChunk(); mc != h.ref.maxChunk() {
			t.Fatalf("MaxChunk() = %d, reference %d", mc, h.ref.maxChunk())
		}
		return false
	}
	if err != nil {
		t.Fatalf("Begin(%d) at offset %d, max-kv %d, max chunk %d: %v", n, h.ref.offset, h.ref.maxKV, h.ref.maxChunk(), err)
	}
	if ev != wantEv {
		t.Fatalf("Begin(%d) at offset %d: trim %+v, reference %+v", n, h.ref.offset, ev, wantEv)
	}
	pos0 := h.c.Offset()
	if pos0 != h.ref.offset {
		t.Fatalf("Offset() = %d, reference %d", pos0, h.ref.offset)
	}
	views := make([]View, len(h.specs))
	for l, spec := range h.specs {
		if l == abortAt {
			h.c.Abort()
			h.ref.abort()
			h.checkStats()
			return true
		}
		hkv, d := spec.KVHeads, spec.HeadDim
		rawQ := h.randRows(n, h.hq[l]*d)
		q := make([][]float32, n)
		for i := range rawQ {
			q[i] = rope(rawQ[i], pos0+i, h.hq[l], d)
		}
		var view View
		if spec.SharedFrom < 0 {
			rawK, v := h.randRows(n, hkv*d), h.randRows(n, hkv*d)
			kc, kr := make([][]float32, n), make([][]float32, n)
			for i := range rawK {
				kc[i] = rope(rawK[i], pos0+i, hkv, d)         // positions from Offset()
				kr[i] = rope(rawK[i], h.ref.offset+i, hkv, d) // the reference's own count
			}
			view, err = h.c.Append(l, toTensor(kc, hkv, d), toTensor(v, hkv, d))
			if err != nil {
				t.Fatalf("Append(layer %d, %d tokens) at offset %d: %v", l, n, pos0, err)
			}
			h.ref.append(l, kr, v)
		} else {
			view, err = h.c.Shared(l)
			if err != nil {
				t.Fatalf("Shared(%d): %v", l, err)
			}
			src := views[spec.SharedFrom]
			if view.K != src.K || view.V != src.V || !slices.Equal(view.Mask.Keys, src.Mask.Keys) || view.Mask.Window != src.Mask.Window {
				t.Fatalf("Shared(%d) differs from source layer %d's view", l, spec.SharedFrom)
			}
			h.checkSharedTail(l, n, pos0, q)
		}
		views[l] = view
		h.checkView(l, n, view)
		if spec.SharedFrom >= 0 {
			continue // the very same tensors and mask as its source, checked above
		}
		got := attendView(view, q, h.hq[l])
		want := h.ref.attend(l, q, h.hq[l])
		h.compare("cache", l, pos0, got, want, h.tol, view)
		if h.backend != nil {
			qt := toTensor(q, h.hq[l], d)
			dst := h.backend.Alloc(n, h.hq[l], d)
			if err := h.backend.Attention(dst, qt, view.K, view.V, view.Mask, float32(1/math.Sqrt(float64(d)))); err != nil {
				t.Fatalf("layer %d: %s attention: %v", l, h.backend.Name(), err)
			}
			if err := h.backend.Sync(); err != nil {
				t.Fatalf("layer %d: %s sync: %v", l, h.backend.Name(), err)
			}
			f := dst.F32()
			bo := make([][]float64, n)
			for i := range bo {
				bo[i] = make([]float64, h.hq[l]*d)
				for j := range bo[i] {
					bo[i][j] = float64(f[i*h.hq[l]*d+j])
				}
			}
			h.compare(h.backend.Name()+" backend", l, pos0, bo, want, h.backendTol, view)
		}
	}
	if err := h.c.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	h.ref.commit()
	h.committed = append(h.committed, n)
	h.checkStats()
	return true
}

// rewind asks the cache to rewind n tokens and checks MaxRewind,
// ExactRewind, CanRewind and the outcome against the reference.
func (h *harness) rewind(n int) bool {
	h.t.Helper()
	t := h.t
	want := h.ref.maxRewind()
	if got := h.c.MaxRewind(); got != want {
		t.Fatalf("MaxRewind() = %d at offset %d, reference %d (live %v, side %v)", got, h.ref.offset, want, h.ref.live, h.ref.side)
	}
	if got, want := h.c.ExactRewind(), h.ref.exactRewind(); got != want {
		t.Fatalf("ExactRewind() = %d at offset %d, reference %d", got, h.ref.offset, want)
	}
	if got, want := h.c.AnchorRewind(), h.ref.anchorRewind(); got != want {
		t.Fatalf("AnchorRewind() = %d at offset %d, reference %d (anchor %d)", got, h.ref.offset, want, h.ref.anchor)
	}
	ok := h.ref.canRewind(n)
	if h.c.CanRewind(n) != ok {
		t.Fatalf("CanRewind(%d) = %v with max rewind %d, anchor rewind %d", n, !ok, want, h.ref.anchorRewind())
	}
	before := h.c.Stats()
	err := h.c.Rewind(n)
	if ok != (err == nil) {
		t.Fatalf("Rewind(%d) with max rewind %d at offset %d: error %v", n, want, h.ref.offset, err)
	}
	if !ok {
		if !strings.Contains(err.Error(), "cannot rewind") {
			t.Fatalf("Rewind(%d): error %q does not say what failed", n, err)
		}
		if after := h.c.Stats(); after.Offset != before.Offset || after.Live != before.Live || after.Bytes != before.Bytes {
			t.Fatalf("failed Rewind(%d) changed the cache: %+v -> %+v", n, before, after)
		}
		h.checkStats()
		return false
	}
	sideBefore := 0
	for _, side := range h.ref.side {
		sideBefore += len(side)
	}
	if n > want {
		h.toAnchor++
	}
	h.ref.rewind(n)
	if n > 0 {
		h.rewinds++
		sideAfter := 0
		for _, side := range h.ref.side {
			sideAfter += len(side)
		}
		if sideAfter < sideBefore {
			h.restored++
		}
	}
	for to, i := h.ref.offset, 0; i < len(h.committed); i++ {
		if to -= h.committed[i]; to <= 0 {
			h.committed[i] += to
			h.committed = h.committed[:i+1]
			if h.committed[i] == 0 {
				h.committed = h.committed[:i]
			}
			break
		}
	}
	if h.ref.offset == 0 {
		h.committed = nil
	}
	h.checkStats()
	return true
}

// randomRewind picks a rewind length: mostly within MaxRewind, sometimes
// just beyond it or beyond the offset (refused).
func (h *harness) randomRewind(ch chooser) {
	m := h.c.MaxRewind()
	if a := h.ref.anchorRewind(); a > 0 && ch.Intn(3) == 0 {
		h.rewind(a)
		return
	}
	switch k := ch.Intn(8); {
	case k < 4 && m > 0:
		h.rewind(1 + ch.Intn(min(m, 12)))
	case k < 6 && m > 0:
		h.rewind(1 + ch.Intn(m))
	case k == 6:
		h.rewind(m + 1 + ch.Intn(3))
	default:
		h.rewind([]int{0, -1, h.ref.offset + 1}[ch.Intn(3)])
	}
}

func (h *harness) compare(what string, l, pos0 int, got, want [][]float64, tol float64, view View) {
	h.t.Helper()
	for i := range got {
		for j := range got[i] {
			if diff := math.Abs(got[i][j] - want[i][j]); diff > tol || math.IsNaN(got[i][j]) {
				h.t.Fatalf("layer %d row %d (position %d) value %d: %s %v, reference %v (keys %v)", l, i, pos0+i, j, what, got[i][j], want[i][j], view.Mask.Keys)
			}
		}
	}
}

// checkView asserts the structural invariants of one view.
func (h *harness) checkView(l, n int, view View) {
	h.t.Helper()
	t := h.t
	h.checks++
	o := h.ref.owner(l)
	spec := h.specs[o]
	m := view.Mask
	keys := m.KeyLen()
	if err := tensor.CheckShape("K", view.K, tensor.F32, keys, spec.KVHeads, spec.HeadDim); err != nil {
		t.Fatalf("layer %d: %v (mask keys %d)", l, err, keys)
	}
	if err := tensor.CheckShape("V", view.V, tensor.F32, keys, spec.KVHeads, spec.HeadDim); err != nil {
		t.Fatalf("layer %d: %v", l, err)
	}
	if m.QueryStart != h.ref.offset || m.Rows != n || m.Window != h.ref.window(l) {
		t.Fatalf("layer %d: mask query %d rows %d window %d; want %d, %d, %d", l, m.QueryStart, m.Rows, m.Window, h.ref.offset, n, h.ref.window(l))
	}
	pos := m.KeyPositions()
	sorted := slices.Clone(pos)
	slices.Sort(sorted)
	if !slices.Equal(sorted, h.ref.live[o]) {
		t.Fatalf("layer %d: view positions %v, reference live %v", l, sorted, h.ref.live[o])
	}
	if spec.Window == 0 && h.ref.maxKV > 0 && keys > h.ref.maxKV {
		t.Fatalf("layer %d: global view has %d keys over max-kv %d", l, keys, h.ref.maxKV)
	}
	// Every row sees at least one key (its own: the chunk's positions are in
	// the set checked above), and sampled rows see exactly the reference's set.
	for _, q := range []int{0, 1, 2, n / 3, n / 2, n - 3, n - 2, n - 1} {
		if q < 0 || q >= n {
			continue
		}
		qp := m.QueryStart + q
		var seen []int
		for _, p := range pos {
			if m.Allowed(qp, p) {
				seen = append(seen, p)
			}
		}
		if len(seen) == 0 {
			t.Fatalf("layer %d: row %d (position %d) fully masked", l, q, qp)
		}
		if w := m.Window; w > 0 && len(seen) > w {
			t.Fatalf("layer %d: row %d sees %d keys, window %d", l, q, len(seen), w)
		}
		slices.Sort(seen)
		if !slices.Equal(seen, h.ref.visible(l, qp)) {
			t.Fatalf("layer %d: row %d sees %v, reference %v", l, q, seen, h.ref.visible(l, qp))
		}
	}
	// Every stored row is the one appended at its position.
	row := spec.KVHeads * spec.HeadDim
	kf, vf := view.K.F32(), view.V.F32()
	for j, p := range pos {
		for x := 0; x < row; x++ {
			gk, wk := kf[j*row+x], h.ref.keys[o][p][x]
			gv, wv := vf[j*row+x], h.ref.vals[o][p][x]
			if h.f16 {
				wk, wv = tensor.F16ToF32(tensor.F32ToF16(wk)), tensor.F16ToF32(tensor.F32ToF16(wv))
			}
			if h.rowTol == 0 {
				if gk != wk || gv != wv {
					t.Fatalf("layer %d key %d (position %d) elem %d: K %v V %v, appended K %v V %v", l, j, p, x, gk, gv, wk, wv)
				}
				continue
			}
			hd := x / spec.HeadDim * spec.HeadDim
			if math.Abs(float64(gk-wk)) > absmax(h.ref.keys[o][p][hd:hd+spec.HeadDim])/127*0.5001 ||
				math.Abs(float64(gv-wv)) > absmax(h.ref.vals[o][p][hd:hd+spec.HeadDim])/127*0.5001 {
				t.Fatalf("layer %d key %d (position %d) elem %d: K %v V %v, appended K %v V %v (beyond 8-bit rounding)", l, j, p, x, gk, gv, wk, wv)
			}
		}
	}
}

func absmax(x []float32) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, math.Abs(float64(v)))
	}
	return m
}

// checkStats compares Stats with the reference between chunks.
func (h *harness) checkStats() {
	h.t.Helper()
	t := h.t
	s := h.c.Stats()
	if s.Offset != h.ref.offset || s.Trimmed != h.ref.trimmed || s.MaxKV != h.ref.maxKV || s.Sink != h.ref.effSink() {
		t.Fatalf("stats %+v; reference offset %d trimmed %d max-kv %d sink %d", s, h.ref.offset, h.ref.trimmed, h.ref.maxKV, h.ref.effSink())
	}
	if h.c.MaxChunk() != h.ref.maxChunk() {
		t.Fatalf("MaxChunk() = %d, reference %d", h.c.MaxChunk(), h.ref.maxChunk())
	}
	var total int64
	for l, ls := range s.Layers {
		o := h.ref.owner(l)
		if ls.Live != len(h.ref.live[o]) {
			t.Fatalf("layer %d: stats live %d, reference %d", l, ls.Live, len(h.ref.live[o]))
		}
		if h.specs[l].SharedFrom < 0 {
			if ls.Capacity < ls.Live {
				t.Fatalf("layer %d: capacity %d below live %d", l, ls.Capacity, ls.Live)
			}
			total += ls.Bytes
		}
		if h.specs[o].Window == 0 && h.ref.capAtBegin > 0 && ls.Live > h.ref.capAtBegin {
			t.Fatalf("layer %d: %d live keys over the max-kv %d of the last chunk", l, ls.Live, h.ref.capAtBegin)
		}
	}
	wantLive := -1
	for l, sp := range h.specs {
		if sp.SharedFrom < 0 && sp.Window == 0 {
			wantLive = len(h.ref.live[l])
			break
		}
	}
	if wantLive < 0 {
		wantLive = len(h.ref.live[0])
	}
	if s.Live != wantLive {
		t.Fatalf("stats live %d, reference %d", s.Live, wantLive)
	}
	if h.c.Live() != s.Live {
		t.Fatalf("Live() = %d, stats %d", h.c.Live(), s.Live)
	}
	for l, ls := range s.Layers {
		if h.specs[l].SharedFrom >= 0 {
			continue
		}
		if ls.Slack != len(h.ref.side[l]) {
			t.Fatalf("layer %d: %d slack keys, reference %d", l, ls.Slack, len(h.ref.side[l]))
		}
		// Memory stays bounded: the slack ring is at most RewindSlack rows.
		spec := h.specs[l]
		if st := h.c.layers[l].st; int64(cap(st.sl.k)+cap(st.sl.v)) > int64(2*h.ref.slack*st.rowBytes) || (spec.Window == 0 && cap(st.sl.k) > 0) {
			t.Fatalf("layer %d: slack holds %d bytes, want at most %d rows of K and V", l, cap(st.sl.k)+cap(st.sl.v), h.ref.slack)
		}
	}
	if total+s.ScratchBytes != s.Bytes {
		t.Fatalf("stats bytes %d, sum of layers %d", s.Bytes, total)
	}
	// Live spans, pinned count and anchor.
	ownerLayer := -1
	for l, sp := range h.specs {
		if sp.SharedFrom < 0 && (sp.Window == 0 || !h.ref.hasGlobal()) {
			ownerLayer = l
			break
		}
	}
	var wantSpans []tensor.Span
	wantPinned := 0
	for _, p := range h.ref.live[ownerLayer] {
		wantSpans = spansAppend(wantSpans, tensor.Span{Start: p, Len: 1})
		if h.ref.pinned[p] && p >= h.ref.effSink() {
			wantPinned++
		}
	}
	if !slices.Equal(s.Spans, wantSpans) {
		t.Fatalf("stats spans %v, reference live %v", s.Spans, h.ref.live[ownerLayer])
	}
	if s.Pinned != wantPinned || s.Anchor != h.ref.anchor {
		t.Fatalf("stats pinned %d anchor %d, reference %d and %d", s.Pinned, s.Anchor, wantPinned, h.ref.anchor)
	}
	if got, want := h.c.Pinned(), h.ref.pinnedOutside(h.ref.pinned, h.ref.effSink()); got != want {
		t.Fatalf("Pinned() = %d, reference %d", got, want)
	}
	if h.ref.offset != s.Offset {
		t.Fatalf("offset %d, reference %d", s.Offset, h.ref.offset)
	}
}

func (h *harness) setMaxKV(n int) {
	h.t.Helper()
	ok := h.ref.fits(n, h.ref.sinkFor(n, h.ref.sink), h.ref.pinned)
	if err := h.c.SetMaxKV(n); (err == nil) != ok {
		h.t.Fatalf("SetMaxKV(%d) with %d pinned: error %v, want one: %v", n, len(h.ref.pinned), err, !ok)
	} else if err != nil && !strings.Contains(err.Error(), "pinned") {
		h.t.Fatalf("SetMaxKV(%d): error %q does not name the pins", n, err)
	}
	if ok {
		h.ref.maxKV = n
	}
	h.checkStats()
}

func (h *harness) setSink(n int) {
	h.t.Helper()
	ok := h.ref.fits(h.ref.maxKV, h.ref.sinkFor(h.ref.maxKV, n), h.ref.pinned)
	if err := h.c.SetSink(n); (err == nil) != ok {
		h.t.Fatalf("SetSink(%d) with %d pinned: error %v, want one: %v", n, len(h.ref.pinned), err, !ok)
	}
	if ok {
		h.ref.sink = n
	}
	h.checkStats()
}

// setPins pins the given runs (replacing earlier pins); a set that does not
// fit beside the sink in half of MaxKV must be refused, changing nothing.
func (h *harness) setPins(spans []tensor.Span) {
	h.t.Helper()
	pins := map[int]bool{}
	for _, r := range spans {
		for p := r.Start; p < r.Start+r.Len; p++ {
			pins[p] = true
		}
	}
	ok := h.ref.fits(h.ref.maxKV, h.ref.effSink(), pins)
	err := h.c.SetPins(spans)
	if (err == nil) != ok {
		h.t.Fatalf("SetPins(%v) with sink %d, max-kv %d: error %v, want one: %v", spans, h.ref.effSink(), h.ref.maxKV, err, !ok)
	}
	if err != nil && !strings.Contains(err.Error(), "half of max-kv-size") {
		h.t.Fatalf("SetPins(%v): error %q does not say what limits it", spans, err)
	}
	if ok {
		h.ref.pinned = pins
		h.pinSets++
	}
	h.checkStats()
}

// randomPins pins a few random runs around the positions seen so far
// (sometimes none, sometimes too many to fit).
func (h *harness) randomPins(ch chooser) {
	var spans []tensor.Span
	for i, k := 0, ch.Intn(4); i < k; i++ {
		spans = append(spans, tensor.Span{Start: ch.Intn(h.ref.offset + 8), Len: 1 + ch.Intn(12)})
	}
	h.setPins(spans)
}

func (h *harness) anchor() {
	h.t.Helper()
	if err := h.c.Anchor(); err != nil {
		h.t.Fatalf("Anchor at offset %d: %v", h.ref.offset, err)
	}
	h.ref.setAnchor()
	h.checkStats()
}

func (h *harness) reset() {
	h.c.Reset()
	h.ref.reset()
	h.committed = nil
	h.checkStats()
	if s := h.c.Stats(); s.Bytes != 0 {
		h.t.Fatalf("Reset kept %d bytes", s.Bytes)
	}
}

// randomConfig draws layer specs, query heads and options.
func randomConfig(ch chooser, q8 bool) ([]LayerSpec, []int, Options) {
	nOwn := 1 + ch.Intn(4)
	var specs []LayerSpec
	var hq []int
	for i := 0; i < nOwn; i++ {
		sp := LayerSpec{KVHeads: 1 + ch.Intn(2), HeadDim: 2 * (1 + ch.Intn(4)), SharedFrom: -1}
		if ch.Intn(2) == 1 {
			sp.Window = 1 + ch.Intn(24)
		}
		specs = append(specs, sp)
		hq = append(hq, sp.KVHeads*(1+ch.Intn(2)))
	}
	for i, nShared := 0, ch.Intn(3); i < nShared; i++ {
		src := ch.Intn(nOwn)
		sp := specs[src]
		sp.SharedFrom = src
		specs = append(specs, sp)
		hq = append(hq, sp.KVHeads*(1+ch.Intn(2)))
	}
	opts := Options{Quantized8: q8}
	if ch.Intn(3) > 0 {
		opts.MaxKV = 2 + ch.Intn(60)
	}
	switch ch.Intn(3) {
	case 1:
		opts.Sink = NoSink
	case 2:
		opts.Sink = 1 + ch.Intn(10)
	}
	opts.Step = []int{0, 1, 2, 3, 8}[ch.Intn(5)]
	opts.RewindSlack = []int{0, 0, NoRewindSlack, 1, 5, 17}[ch.Intn(6)]
	return specs, hq, opts
}

// runSchedule plays a random schedule of prefill chunks, decode steps,
// max-kv changes (raised and lowered), sink changes, refused chunks, aborts,
// rewinds (accepted and refused) and resets, checking every view against
// the reference.
func runSchedule(t testing.TB, ch chooser, steps int, q8 bool, dataSeed int64) *harness {
	return runScheduleWith(t, ch, steps, q8, dataSeed, nil, nil)
}

// runSchedulePins is runSchedule with pins and anchors among the
// operations.
func runSchedulePins(t testing.TB, ch chooser, steps int, q8 bool, dataSeed int64) *harness {
	return runScheduleOps(t, ch, steps, q8, dataSeed, nil, nil, true)
}

// runScheduleWith is runSchedule with hooks to adjust the options and to
// configure the harness.
func runScheduleWith(t testing.TB, ch chooser, steps int, q8 bool, dataSeed int64, optsHook func(*Options), setup func(*harness)) *harness {
	return runScheduleOps(t, ch, steps, q8, dataSeed, optsHook, setup, false)
}

// runScheduleOps is runScheduleWith, with pins and anchors among the
// operations when pins is set.
func runScheduleOps(t testing.TB, ch chooser, steps int, q8 bool, dataSeed int64, optsHook func(*Options), setup func(*harness), pins bool) *harness {
	specs, hq, opts := randomConfig(ch, q8)
	if optsHook != nil {
		optsHook(&opts)
	}
	h := newHarness(t, specs, hq, opts, dataSeed)
	if setup != nil {
		setup(h)
	}
	for s := 0; s < steps; s++ {
		if bc, ok := ch.(*byteChooser); ok && bc.done() {
			break
		}
		mc := min(h.ref.maxChunk(), 40)
		switch op := ch.Intn(14); {
		case op < 4:
			h.chunk(1+ch.Intn(mc), -1)
		case op < 7:
			for i, k := 0, 1+ch.Intn(12); i < k; i++ {
				h.chunk(1, -1)
			}
		case op == 7:
			if ch.Intn(4) == 0 {
				h.setMaxKV(0)
			} else {
				h.setMaxKV(1 + ch.Intn(64))
			}
		case op == 8:
			h.setSink(ch.Intn(12))
		case op == 9:
			if h.ref.maxChunk() < math.MaxInt {
				h.chunk(h.ref.maxChunk()+1+ch.Intn(5), -1) // refused
			}
		case op == 10:
			h.chunk(1+ch.Intn(mc), ch.Intn(len(specs)))
		case op == 12 && pins:
			switch ch.Intn(3) {
			case 0:
				h.randomPins(ch)
			case 1:
				h.anchor()
			default:
				h.randomRewind(ch)
			}
		case op >= 12:
			h.randomRewind(ch)
		default:
			if ch.Intn(6) == 0 {
				h.reset()
			} else {
				h.chunk(1+ch.Intn(mc), -1)
			}
		}
	}
	return h
}
