package kvcache

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"mlxchat/tensor"
)

// store holds the keys and values of one layer that owns its cache.
//
// Physical layout, in rows of one token each (K and V alike):
//
//	[0, s)          kept rows (global layers only): the sink and pinned
//	                rows a trim has passed, at the ascending positions kept
//	[s, capRows)    a ring of R = capRows-s slots holding m "recent" rows;
//	                logical ring row i (0 = oldest) lives in slot s+(h+i)%R
//
// segs lists the absolute positions of the ring rows in logical order, as
// runs of consecutive positions (usually one run); every kept position is
// below every ring position, so kept then ring is ascending.
//
// A view hands out the physical prefix of the buffers, so it is only taken
// when the used slots are contiguous: h == 0 (rows [0, s+m)) or the ring is
// full (m == R, rows [0, capRows)). prepare arranges that for the state after
// an append; mask spans then follow the physical order.
type store struct {
	heads, dim int
	enc        encoding
	rowBytes   int // encoded bytes of one row (K or V of one token)
	step       int // capacity granularity in rows

	k, v    []byte
	kt, vt  *tensor.Tensor // owners of k and v when alloc made them (nil otherwise)
	capRows int
	s       int
	kept    []tensor.Span // positions of the s kept rows
	h, m    int
	segs    []tensor.Span

	// scr receives decoded rows when enc is not encF32 (see scratch); it may
	// be shared with other layers, and is counted by the cache, not here.
	scr *scratch

	// alloc, when set, provides the buffers (Options.Alloc).
	alloc func(shape ...int) *tensor.Tensor
	// copyRows, when set, records write's row copies (Options.Copy).
	copyRows func(dst, src *tensor.Tensor) error
	// decodeF16 and decodeI8 expand F16 and Q8 rows for views
	// (Options.DecodeF16 and DecodeInt8Rows, or the package's defaults).
	decodeF16 func(dst []float32, src []uint16)
	decodeI8  func(dst []float32, src []byte, rows, heads, dim int)

	// sl keeps the rows a sliding layer most recently dropped from its
	// window, so Rewind can put them back (empty for global layers).
	sl slack
	// an holds a copy of a sliding layer's rows at the cache's anchor
	// (Cache.Anchor), so Rewind can go back to it from any distance.
	an anchorRows

	// sliding marks a sliding layer's store. When a prompt chunk grows one
	// on the host (window-1 rows plus the chunk), its window-sized buffers
	// stay as spareK and spareV, and the shrink back to the window that
	// the next decoded token makes reuses them when they are exactly that
	// size (so Stats.Bytes still matches Footprint): memory already touched,
	// where fresh buffers cost page faults (~70-160 ms over Gemma 3n E2B's
	// 16 sliding layers, a slow first token). Counted by bytes.
	sliding        bool
	spareK, spareV []byte
}

// anchorRows is a copy of the m rows at consecutive positions
// [start, start+m) that a sliding layer held at the anchor.
type anchorRows struct {
	k, v     []byte
	start, m int
}

// slack is a ring of up to max rows (K and V, in the store's row format)
// at the consecutive absolute positions [start, start+m) that a sliding
// layer dropped, newest last. Its newest row is the position just before
// the store's oldest row. Go memory of max rows is allocated at the first
// drop and kept until reset.
type slack struct {
	max   int
	k, v  []byte
	h, m  int
	start int
}

// end is the position after the newest slack row.
func (sl *slack) end() int { return sl.start + sl.m }

// encoding is how a store keeps its rows.
type encoding int

const (
	encF32 encoding = iota // float32, the View format: views alias storage
	encF16                 // IEEE half floats, decoded into a scratch
	encQ8                  // int8 with a float32 absmax scale per head, decoded into a scratch
)

// rowBytes is the size of one row (K or V of one token) of heads x dim
// values in encoding e.
func (e encoding) rowBytes(heads, dim int) int {
	switch e {
	case encF16:
		return heads * dim * 2
	case encQ8:
		// One float32 absmax scale per head, then heads*dim int8.
		return heads*4 + heads*dim
	}
	return heads * dim * 4
}

func newStore(heads, dim int, enc encoding, step, slackRows int, scr *scratch, alloc func(shape ...int) *tensor.Tensor, copyRows func(dst, src *tensor.Tensor) error) *store {
	return &store{heads: heads, dim: dim, enc: enc, rowBytes: enc.rowBytes(heads, dim), step: step, alloc: alloc, copyRows: copyRows, sl: slack{max: slackRows}, scr: scr}
}

func (st *store) ring() int        { return st.capRows - st.s }
func (st *store) live() int        { return st.s + st.m }
func (st *store) contiguous() bool { return st.h == 0 || st.m == st.ring() }

// bytes is the memory held by the store, slack and anchor included (not
// the dequantization scratch, which the cache counts).
func (st *store) bytes() int64 {
	return int64(cap(st.k) + cap(st.v) + cap(st.sl.k) + cap(st.sl.v) + cap(st.an.k) + cap(st.an.v) + cap(st.spareK) + cap(st.spareV))
}

// saveAnchor copies the newest min(m, keep) rows of a sliding layer (whose
// ring rows are consecutive positions) as its anchor rows.
func (st *store) saveAnchor(keep int) {
	n := min(st.m, keep)
	rb, R := st.rowBytes, st.ring()
	st.an = anchorRows{k: make([]byte, n*rb), v: make([]byte, n*rb)}
	if n == 0 {
		return
	}
	last := st.segs[len(st.segs)-1]
	st.an.start, st.an.m = last.Start+last.Len-n, n
	for i := 0; i < n; i++ {
		src := (st.s + (st.h+st.m-n+i)%R) * rb
		copy(st.an.k[i*rb:(i+1)*rb], st.k[src:src+rb])
		copy(st.an.v[i*rb:(i+1)*rb], st.v[src:src+rb])
	}
}

// restoreAnchor makes a sliding layer hold exactly its anchor rows, in
// fresh linear buffers; the rewind slack keeps only rows that continue
// them (positions just before the anchor rows).
func (st *store) restoreAnchor() {
	rb, n := st.rowBytes, st.an.m
	newCap := max(roundUp(n, st.step), n)
	nk, nkt := st.newBuf(newCap * rb)
	nv, nvt := st.newBuf(newCap * rb)
	copy(nk, st.an.k[:n*rb])
	copy(nv, st.an.v[:n*rb])
	st.k, st.v, st.kt, st.vt, st.capRows, st.h, st.m = nk, nv, nkt, nvt, newCap, 0, n
	st.segs = nil
	if n > 0 {
		st.segs = []tensor.Span{{Start: st.an.start, Len: n}}
	}
	if sl := &st.sl; n > 0 && sl.m > 0 && sl.start < st.an.start && sl.end() >= st.an.start {
		sl.m = st.an.start - sl.start
	} else {
		sl.m = 0
	}
}

// reset drops every row and releases the memory.
func (st *store) reset() {
	*st = store{heads: st.heads, dim: st.dim, enc: st.enc, rowBytes: st.rowBytes, step: st.step, alloc: st.alloc, copyRows: st.copyRows, decodeF16: st.decodeF16, decodeI8: st.decodeI8, sl: slack{max: st.sl.max}, scr: st.scr, sliding: st.sliding}
}

// oldest is the absolute position of the oldest ring row (m > 0).
func (st *store) oldest() int { return st.segs[0].Start }

// slideOut drops the d oldest ring rows of a sliding layer, saving the
// newest of them in the slack ring first (when it has room for any).
func (st *store) slideOut(d int) {
	if d <= 0 {
		return
	}
	if st.sl.max > 0 {
		st.save(d)
	}
	st.dropOldest(d)
}

// save copies the d oldest ring rows (consecutive positions, as in a
// sliding layer) to the end of the slack ring, evicting its oldest rows
// when it is full. Only the last sl.max of them can be kept.
func (st *store) save(d int) {
	sl, rb := &st.sl, st.rowBytes
	pos0 := st.oldest()
	skip := max(0, d-sl.max)
	if sl.m > 0 && (skip > 0 || sl.end() != pos0) {
		// Everything held is evicted anyway, or (never expected) the
		// rows would not continue it: start over at the first kept row.
		sl.m = 0
	}
	if sl.m == 0 {
		sl.h, sl.start = 0, pos0+skip
	}
	if sl.k == nil {
		sl.k, sl.v = make([]byte, sl.max*rb), make([]byte, sl.max*rb)
	}
	R := st.ring()
	for i := skip; i < d; i++ {
		src := (st.s + (st.h+i)%R) * rb
		var slot int
		if sl.m < sl.max {
			slot = (sl.h + sl.m) % sl.max
			sl.m++
		} else {
			slot = sl.h
			sl.h = (sl.h + 1) % sl.max
			sl.start++
		}
		copy(sl.k[slot*rb:(slot+1)*rb], st.k[src:src+rb])
		copy(sl.v[slot*rb:(slot+1)*rb], st.v[src:src+rb])
	}
}

// earliest is the oldest position a sliding layer can still produce: the
// slack's first row, else its oldest ring row, else end (nothing held).
func (st *store) earliest(end int) int {
	switch {
	case st.sl.m > 0:
		return st.sl.start
	case st.m > 0:
		return st.oldest()
	}
	return end
}

// rewindSliding makes a sliding layer hold exactly the positions
// [min(lo, its oldest kept row), to): rows at positions >= to are dropped
// from the ring and the slack, then slack rows from lo on are put back in
// front of the ring. The caller has checked that earliest(...) <= lo or
// lo is not needed (the ring keeps rows older than lo).
func (st *store) rewindSliding(to, lo int) {
	if st.m > 0 {
		if drop := st.segs[len(st.segs)-1].Start + st.segs[len(st.segs)-1].Len - max(st.oldest(), to); drop > 0 {
			st.dropNewest(min(drop, st.m))
		}
	}
	sl := &st.sl
	if sl.m > 0 && sl.end() > to {
		sl.m = max(0, to-sl.start)
	}
	front := to
	if st.m > 0 {
		front = st.oldest()
	}
	if front <= lo || sl.m == 0 {
		return
	}
	k := min(front-max(lo, sl.start), sl.m)
	st.restore(k)
}

// restore moves the k newest slack rows in front of the ring (a sliding
// layer: no sink), into fresh linear buffers.
func (st *store) restore(k int) {
	rb, sl := st.rowBytes, &st.sl
	need := st.m + k
	newCap := max(roundUp(need, st.step), need)
	nk, nkt := st.newBuf(newCap * rb)
	nv, nvt := st.newBuf(newCap * rb)
	for i := 0; i < k; i++ {
		slot := (sl.h + sl.m - k + i) % sl.max
		copy(nk[i*rb:(i+1)*rb], sl.k[slot*rb:(slot+1)*rb])
		copy(nv[i*rb:(i+1)*rb], sl.v[slot*rb:(slot+1)*rb])
	}
	if st.m > 0 {
		R := st.ring()
		first := min(st.m, R-st.h)
		for _, p := range [2]struct{ dst, src []byte }{{nk, st.k}, {nv, st.v}} {
			copy(p.dst[k*rb:], p.src[(st.s+st.h)*rb:(st.s+st.h+first)*rb])
			copy(p.dst[(k+first)*rb:], p.src[st.s*rb:(st.s+st.m-first)*rb])
		}
	}
	sl.m -= k
	pos0 := sl.end()
	st.segs = append([]tensor.Span{{Start: pos0, Len: k}}, st.segs...)
	if len(st.segs) > 1 && st.segs[1].Start == pos0+k {
		st.segs = append([]tensor.Span{{Start: pos0, Len: k + st.segs[1].Len}}, st.segs[2:]...)
	}
	st.k, st.v, st.kt, st.vt, st.capRows, st.h, st.m = nk, nv, nkt, nvt, newCap, 0, need
}

// newestRun is how many of the newest ring rows hold consecutive
// positions ending at end-1: the rows a global layer can drop to rewind.
func (st *store) newestRun(end int) int {
	n := 0
	for i := len(st.segs) - 1; i >= 0; i-- {
		r := st.segs[i]
		if r.Start+r.Len != end-n {
			return n
		}
		n += r.Len
	}
	// The whole ring continues the run: so may the newest kept rows.
	for i := len(st.kept) - 1; i >= 0; i-- {
		r := st.kept[i]
		if r.Start+r.Len != end-n {
			break
		}
		n += r.Len
	}
	return n
}

// dropOldest removes the d oldest ring rows (never sink rows). d <= m.
func (st *store) dropOldest(d int) {
	if d <= 0 {
		return
	}
	st.h = (st.h + d) % st.ring()
	st.m -= d
	st.segs = spansDropFront(st.segs, d)
	if st.m == 0 {
		st.h = 0
	}
}

// dropNewestKept removes the d newest rows, ring rows first, then kept
// rows once the ring is empty (a rewind into pinned rows). d <= live().
func (st *store) dropNewestKept(d int) {
	r := min(d, st.m)
	st.dropNewest(r)
	if k := d - r; k > 0 {
		st.s -= k
		st.kept = spansDropBack(st.kept, k)
		if len(st.kept) == 0 {
			st.kept = nil
		}
	}
}

// dropNewest removes the d newest ring rows (used to roll back a chunk).
func (st *store) dropNewest(d int) {
	if d <= 0 {
		return
	}
	st.m -= d
	st.segs = spansDropBack(st.segs, d)
	if st.m == 0 {
		st.h = 0
	}
}

// realloc moves the rows into fresh buffers of newCap rows (>= live),
// linearizing the ring (h becomes 0).
func (st *store) realloc(newCap int) {
	rb := st.rowBytes
	var nk, nv []byte
	var nkt, nvt *tensor.Tensor
	if st.kt == nil && newCap*rb == cap(st.spareK) && newCap*rb == cap(st.spareV) && newCap < st.capRows {
		nk, nv = st.spareK[:newCap*rb], st.spareV[:newCap*rb]
		st.spareK, st.spareV = nil, nil
	} else {
		nk, nkt = st.newBuf(newCap * rb)
		nv, nvt = st.newBuf(newCap * rb)
		if st.sliding && nkt == nil && st.kt == nil && newCap > st.capRows && cap(st.k) > cap(st.spareK) {
			st.spareK, st.spareV = st.k, st.v // the largest outgrown buffers (see sliding)
		}
	}
	for _, p := range [2]struct{ dst, src []byte }{{nk, st.k}, {nv, st.v}} {
		copy(p.dst, p.src[:st.s*rb])
		if st.m > 0 {
			R := st.ring()
			first := min(st.m, R-st.h)
			copy(p.dst[st.s*rb:], p.src[(st.s+st.h)*rb:(st.s+st.h+first)*rb])
			copy(p.dst[(st.s+first)*rb:], p.src[st.s*rb:(st.s+st.m-first)*rb])
		}
	}
	st.k, st.v, st.kt, st.vt, st.capRows, st.h = nk, nv, nkt, nvt, newCap, 0
}

// dropSpare releases the spare buffers (see sliding) once decoding has
// begun: the first decoded token's shrink has used them or never will.
func (st *store) dropSpare() { st.spareK, st.spareV = nil, nil }

// trimFixed drops the d oldest rows of a global layer whose positions are
// not in fixed (sorted, merged runs: the sink and the pins), keeping every
// row in fixed. Rows older than the oldest row left in the ring that are
// fixed form the kept region; fixed rows still in the ring stay there,
// protected, until a later trim reaches them. When the kept region holds
// only fixed rows and the d oldest ring rows hold none, this is a plain
// dropOldest; otherwise (a pin or a grown sink is crossed, a pin was
// released, the sink shrank) the rows are rebuilt in new buffers once.
// d must not exceed the rows outside fixed.
func (st *store) trimFixed(d int, fixed []tensor.Span) {
	if d <= 0 {
		return
	}
	if spansWithin(st.kept, fixed) {
		// Fixed rows at the front of the ring join the kept region in
		// place (the sink on the first trim), then plain dropping works
		// unless another fixed row lies among the d oldest.
		for st.m > 0 {
			run := fixedPrefix(st.segs, fixed)
			if run == 0 {
				break
			}
			if st.h != 0 {
				st.realloc(st.capRows)
			}
			for _, r := range spansSlice(st.segs, 0, run) {
				st.kept = spansAppend(st.kept, r)
			}
			st.s += run
			st.m -= run
			st.segs = spansDropFront(st.segs, run)
		}
		if !spansMeet(spansSlice(st.segs, 0, d), fixed) {
			st.dropOldest(d)
			return
		}
	}
	type row struct{ pos, phys int }
	var kept, ring []row
	inRing := false
	budget := d
	f := 0 // index into fixed: runs ending at or before pos are passed
	visit := func(pos, phys int) {
		for f < len(fixed) && fixed[f].Start+fixed[f].Len <= pos {
			f++
		}
		isFixed := f < len(fixed) && fixed[f].Start <= pos
		switch {
		case isFixed && !inRing:
			kept = append(kept, row{pos, phys})
		case isFixed || budget == 0:
			inRing = true
			ring = append(ring, row{pos, phys})
		default:
			budget--
		}
	}
	phys := 0
	for _, r := range st.kept {
		for p := r.Start; p < r.Start+r.Len; p++ {
			visit(p, phys)
			phys++
		}
	}
	R := st.ring()
	i := 0
	for _, r := range st.segs {
		for p := r.Start; p < r.Start+r.Len; p++ {
			visit(p, st.s+(st.h+i)%R)
			i++
		}
	}
	rb := st.rowBytes
	nk, nkt := st.newBuf(st.capRows * rb)
	nv, nvt := st.newBuf(st.capRows * rb)
	st.kept, st.segs = nil, nil
	for j, r := range append(kept, ring...) {
		copy(nk[j*rb:(j+1)*rb], st.k[r.phys*rb:(r.phys+1)*rb])
		copy(nv[j*rb:(j+1)*rb], st.v[r.phys*rb:(r.phys+1)*rb])
		if j < len(kept) {
			st.kept = spansAppend(st.kept, tensor.Span{Start: r.pos, Len: 1})
		} else {
			st.segs = spansAppend(st.segs, tensor.Span{Start: r.pos, Len: 1})
		}
	}
	st.k, st.v, st.kt, st.vt = nk, nv, nkt, nvt
	st.s, st.m, st.h = len(kept), len(ring), 0
}

// positions returns the absolute positions the store holds, ascending, as
// merged runs (the kept region's positions all precede the ring's).
func (st *store) positions() []tensor.Span {
	out := make([]tensor.Span, 0, len(st.kept)+len(st.segs))
	for _, r := range st.kept {
		out = spansAppend(out, r)
	}
	for _, r := range st.segs {
		out = spansAppend(out, r)
	}
	return out
}

// prepare makes room for n more rows so that the store is contiguous after
// they are written. exact asks for capacity == live+n (a full ring, so the
// next steady-state trim-and-append cycles copy nothing); limit caps growth
// (0 = none); headroom rows are added to any growth that is not exact.
func (st *store) prepare(n int, exact bool, limit, headroom int) {
	need := st.live() + n
	target := st.capRows
	switch {
	case need > st.capRows:
		target = roundUp(need, st.step)
		if !exact {
			target += headroom
		}
		if limit > 0 && target > limit {
			target = max(limit, need)
		}
	case exact && st.capRows != need:
		target = need
	case st.capRows-need > max(2*st.step, need):
		// Much more room than needed (the window shrank): give memory back.
		target = roundUp(need, st.step)
	}
	if target != st.capRows {
		st.realloc(target)
	} else if st.h != 0 && st.m+n != st.ring() {
		st.realloc(st.capRows)
	}
}

// shrink releases memory after a trim when the capacity is far above live.
func (st *store) shrink() {
	need := st.live()
	if st.capRows-need > max(2*st.step, need) {
		st.realloc(roundUp(max(need, 1), st.step))
	}
}

// write appends n rows of F32 k and v ([n, heads, dim] or longer) at
// absolute positions pos0..pos0+n-1. prepare(n) must precede it. With
// copyRows set the copies are recorded through it (storage must then come
// from alloc); otherwise the host copies the bytes. Nothing changes on an
// error.
func (st *store) write(k, v *tensor.Tensor, n, pos0 int) error {
	R := st.ring()
	start := (st.h + st.m) % R
	first := min(n, R-start)
	src := st.heads * st.dim * 4
	if st.copyRows != nil {
		if st.kt == nil || st.vt == nil {
			return fmt.Errorf("storage did not come from Options.Alloc, so rows cannot be copied through Options.Copy")
		}
		parts := [][3]int{{st.s + start, 0, first}} // storage row, source row, rows
		if first < n {
			parts = append(parts, [3]int{st.s, first, n - first})
		}
		for _, p := range parts {
			for _, t := range [2]struct {
				dst []byte
				own *tensor.Tensor
				src *tensor.Tensor
			}{{st.k, st.kt, k}, {st.v, st.vt, v}} {
				d := &tensor.Tensor{DType: tensor.F32, Shape: []int{p[2] * src / 4}, Data: t.dst[p[0]*src : (p[0]+p[2])*src], Handle: t.own.Handle}
				s := &tensor.Tensor{DType: tensor.F32, Shape: []int{p[2] * src / 4}, Data: t.src.Data[p[1]*src : (p[1]+p[2])*src], Handle: t.src.Handle}
				if err := st.copyRows(d, s); err != nil {
					return fmt.Errorf("copying %d rows into storage: %w", p[2], err)
				}
			}
		}
	} else {
		st.encode(st.k[(st.s+start)*st.rowBytes:], k.Data[:first*src], first)
		st.encode(st.v[(st.s+start)*st.rowBytes:], v.Data[:first*src], first)
		if first < n {
			st.encode(st.k[st.s*st.rowBytes:], k.Data[first*src:n*src], n-first)
			st.encode(st.v[st.s*st.rowBytes:], v.Data[first*src:n*src], n-first)
		}
	}
	st.m += n
	st.segs = spansAppend(st.segs, tensor.Span{Start: pos0, Len: n})
	return nil
}

// encode stores n F32 rows from src into dst in the store's row format.
func (st *store) encode(dst, src []byte, n int) {
	switch st.enc {
	case encF32:
		copy(dst, src)
		return
	case encF16:
		x := f32s(src[:n*st.heads*st.dim*4])
		h := u16s(dst[:len(x)*2])
		for i, v := range x {
			h[i] = tensor.F32ToF16(v)
		}
		return
	}
	rb, hd := st.rowBytes, st.heads*st.dim
	x := f32s(src[:n*hd*4])
	for r := 0; r < n; r++ {
		row := dst[r*rb : (r+1)*rb]
		scales := f32s(row[:st.heads*4])
		q := row[st.heads*4:]
		for h := 0; h < st.heads; h++ {
			xs := x[(r*st.heads+h)*st.dim : (r*st.heads+h+1)*st.dim]
			amax := float32(0)
			for _, v := range xs {
				amax = max(amax, v, -v)
			}
			scale := amax / 127
			scales[h] = scale
			qh := q[h*st.dim : (h+1)*st.dim]
			if scale == 0 || scale != scale {
				clear(qh)
				continue
			}
			inv := 1 / scale
			for i, v := range xs {
				qh[i] = byte(int8(max(-127, min(127, float32(math.Round(float64(v*inv)))))))
			}
		}
	}
}

// decode expands n stored rows of src into F32 bytes in dst, through the
// store's decoder for its format (Options.DecodeF16 or DecodeInt8Rows, or
// the package's own: decodeF16Table, decodeInt8RowsGo).
func (st *store) decode(dst, src []byte, n int) {
	out := f32s(dst[:n*st.heads*st.dim*4])
	if st.enc == encF16 {
		st.decodeF16(out, u16s(src[:len(out)*2]))
		return
	}
	st.decodeI8(out, src[:n*st.rowBytes], n, st.heads, st.dim)
}

// decodeF16Table is the default Options.DecodeF16: one table load per
// value on the calling goroutine.
func decodeF16Table(dst []float32, src []uint16) {
	tab := f16Table()
	for i, h := range src[:len(dst)] {
		dst[i] = tab[h]
	}
}

// decodeInt8RowsGo is the default Options.DecodeInt8Rows: a Go loop on the
// calling goroutine over rows of heads float32 scales then heads x dim
// int8 values.
func decodeInt8RowsGo(dst []float32, src []byte, rows, heads, dim int) {
	rb := heads*4 + heads*dim
	for r := 0; r < rows; r++ {
		row := src[r*rb : (r+1)*rb]
		scales := f32s(row[:heads*4])
		q := row[heads*4:]
		for h, scale := range scales {
			o := dst[(r*heads+h)*dim : (r*heads+h+1)*dim]
			for i, b := range q[h*dim : (h+1)*dim] {
				o[i] = scale * float32(int8(b))
			}
		}
	}
}

// f16Table maps every half-float bit pattern to its float32 value, built
// on first use (256 KiB, read-only afterwards): decoding a Float16 view at
// every step is one load per value instead of tensor.F16ToF32's branches.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = tensor.F16ToF32(uint16(i))
	}
	return &t
})

// u16s views little-endian uint16 bytes as []uint16 without copying (see
// f32s).
func u16s(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}

// f32s views little-endian float32 bytes as []float32 without copying
// (the host is little-endian; buffers come from make and are 4-aligned).
func f32s(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// view returns the F32 bytes of every live row in physical order and the
// spans of their absolute positions in the same order. The store must be
// contiguous. For F16 and Q8 stores the bytes are a decoded scratch copy.
func (st *store) view() (k, v []byte, spans []tensor.Span) {
	rows := st.live()
	spans = append(spans, st.kept...)
	if st.h == 0 {
		spans = append(spans, st.segs...)
	} else {
		R := st.ring()
		spans = append(spans, spansSlice(st.segs, R-st.h, R)...)
		spans = append(spans, spansSlice(st.segs, 0, R-st.h)...)
	}
	k, v = st.k[:rows*st.rowBytes], st.v[:rows*st.rowBytes]
	if st.enc != encF32 {
		width := st.heads * st.dim * 4
		// The scratch never needs more rows than the store can hold.
		sk, sv := st.scr.get(rows*width, st.capRows*width, st.newBuf)
		st.decode(sk, k, rows)
		st.decode(sv, v, rows)
		k, v = sk, sv
	}
	return k, v, spans
}

// scratch is the F32 buffer pair that Float16 and Quantized8 views are
// decoded into. The layers whose views no other layer reads share one (a
// view is used before the next layer appends); a layer that others share
// from has its own, since its view is read again later in the chunk. Its
// capacity is the largest view since the last release, rounded up to step
// bytes but never beyond what the store asking holds (so a cache capped
// at 24 tokens gets a 24-row scratch, not a step of 256), so it does not
// depend on the order the layers used it in.
type scratch struct {
	k, v   []byte
	kt, vt *tensor.Tensor // owners when alloc made them
	step   int            // capacity granularity in bytes (> 0)
	used   int            // largest view in bytes since the last release
}

// get returns f bytes of K and V scratch, growing it when needed to f
// rounded up to the step, but at most limit (>= f) bytes.
func (sc *scratch) get(f, limit int, newBuf func(int) ([]byte, *tensor.Tensor)) (k, v []byte) {
	if cap(sc.k) < f {
		c := max(f, min(roundUp(f, sc.step), limit))
		sc.k, sc.kt = newBuf(c)
		sc.v, sc.vt = newBuf(c)
	}
	sc.used = max(sc.used, f)
	return sc.k[:f], sc.v[:f]
}

// release frees the scratch when it is more than twice as large as the
// views since the last release needed (a store that has shrunk, e.g. a
// sliding layer settling at its window), so the next get sizes it again.
func (sc *scratch) release() {
	if sc.used > 0 && cap(sc.k) > 2*sc.used {
		sc.free()
	}
	sc.used = 0
}

func (sc *scratch) free() {
	sc.k, sc.v, sc.kt, sc.vt, sc.used = nil, nil, nil, nil, 0
}

func (sc *scratch) bytes() int64 { return int64(cap(sc.k) + cap(sc.v)) }

// newBuf returns n bytes for storage, from alloc when set (the tensor it
// came from is returned so its handle stays reachable), else from make.
func (st *store) newBuf(n int) ([]byte, *tensor.Tensor) {
	if st.alloc != nil && n > 0 {
		if t := st.alloc((n + 3) / 4); t != nil && len(t.Data) >= n {
			return t.Data[:n:n], t
		}
	}
	return make([]byte, n), nil
}

// handles returns the owners of the bytes view() hands out (nil when they
// came from make), so views can carry the backend handle.
func (st *store) handles() (k, v *tensor.Tensor) {
	if st.enc != encF32 {
		return st.scr.kt, st.scr.vt
	}
	return st.kt, st.vt
}

func roundUp(n, step int) int {
	if step <= 1 {
		return n
	}
	return (n + step - 1) / step * step
}

// spansDropFront removes the first d positions from a run list.
func spansDropFront(s []tensor.Span, d int) []tensor.Span {
	for d > 0 && len(s) > 0 {
		if s[0].Len <= d {
			d -= s[0].Len
			s = s[1:]
			continue
		}
		s[0] = tensor.Span{Start: s[0].Start + d, Len: s[0].Len - d}
		d = 0
	}
	if len(s) == 0 {
		return nil
	}
	return s
}

// spansDropBack removes the last d positions from a run list.
func spansDropBack(s []tensor.Span, d int) []tensor.Span {
	for d > 0 && len(s) > 0 {
		last := len(s) - 1
		if s[last].Len <= d {
			d -= s[last].Len
			s = s[:last]
			continue
		}
		s[last].Len -= d
		d = 0
	}
	return s
}

// spansAppend adds a run, merging it with the last one when contiguous.
func spansAppend(s []tensor.Span, r tensor.Span) []tensor.Span {
	if r.Len == 0 {
		return s
	}
	if n := len(s); n > 0 && s[n-1].Start+s[n-1].Len == r.Start {
		s[n-1].Len += r.Len
		return s
	}
	return append(s, r)
}

// fixedPrefix is how many of the first positions of runs (in order) lie
// in fixed (sorted, merged) without a break.
func fixedPrefix(runs, fixed []tensor.Span) int {
	n := 0
	for _, r := range runs {
		for p := r.Start; p < r.Start+r.Len; {
			j, ok := slices.BinarySearchFunc(fixed, p, func(f tensor.Span, p int) int {
				switch {
				case f.Start+f.Len <= p:
					return -1
				case f.Start > p:
					return 1
				}
				return 0
			})
			if !ok {
				return n
			}
			take := min(r.Start+r.Len, fixed[j].Start+fixed[j].Len) - p
			n += take
			p += take
		}
	}
	return n
}

// spansWithin reports whether every position of a (sorted runs) lies in
// b (sorted, merged runs).
func spansWithin(a, b []tensor.Span) bool {
	j := 0
	for _, r := range a {
		for j < len(b) && b[j].Start+b[j].Len <= r.Start {
			j++
		}
		if j == len(b) || b[j].Start > r.Start || b[j].Start+b[j].Len < r.Start+r.Len {
			return false
		}
	}
	return true
}

// spansMeet reports whether two lists of sorted runs share a position.
func spansMeet(a, b []tensor.Span) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ae, be := a[i].Start+a[i].Len, b[j].Start+b[j].Len
		if a[i].Start < be && b[j].Start < ae {
			return true
		}
		if ae <= be {
			i++
		} else {
			j++
		}
	}
	return false
}

// spansSlice returns the runs covering logical indices [a, b) of a run list.
func spansSlice(s []tensor.Span, a, b int) []tensor.Span {
	var out []tensor.Span
	idx := 0
	for _, r := range s {
		lo, hi := max(a, idx), min(b, idx+r.Len)
		if lo < hi {
			out = append(out, tensor.Span{Start: r.Start + lo - idx, Len: hi - lo})
		}
		idx += r.Len
		if idx >= b {
			break
		}
	}
	return out
}
