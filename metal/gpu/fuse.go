package gpu

import (
	"math"

	"mlxchat/metal/kernels"
)

// Fusion of decode-sized launches (run at Sync, before barriers and plans).
//
// A decode step is a long chain of small launches: matrix-vector products
// over one x row and, between them, elementwise ops, norms, RoPE, AltUp
// stream ops and tiny matrix products over a few thousand values. Each
// launch costs a few microseconds of GPU time however little it does, so
// fuse rewrites the step into fused launches (kernels QMVT4/QMVT8/VChain,
// src/fused.comp):
//
//   - a "heavy" launch is a quantized matrix-vector product of one x row
//     with more than maxLightOut outputs. It joins an earlier fused launch
//     as another segment when nothing recorded in between touches what it
//     reads or writes (so q, k, v and LAuReL's left projection, which share
//     their input, or gate and up, become one launch), else it starts one;
//   - a "light" launch (every small op, matrix products with at most
//     maxLightOut outputs included) joins the tail of the last launch,
//     which the workgroup finishing last runs in order after the segments.
//
// Program order is kept: a tail runs after everything before it, and a
// segment moves up only past launches it is independent of. Launches that
// are neither (attention, gathers, prefill-sized ops) stay as they are.
// What a fused launch binds must fit its slots: the activation heap chunk
// (which holds its arrival counter), one weight buffer, and four more.

const (
	// maxLight is the most values a light op may touch (a decode step's
	// vectors; prefill chunks keep their parallel kernels).
	maxLight = 16384
	// maxLightOut is the most outputs of a matrix product run in a tail.
	maxLightOut = 64
	// maxLightMV bounds the weights of such a product (values).
	maxLightMV = 1 << 16
)

// fitem is one launch of the fused step: a recorded launch kept as it is
// (orig >= 0) or a fused one.
type fitem struct {
	orig  int
	fused *fusedLaunch
}

type fusedLaunch struct {
	segs, tail []int // recorded launches (indices into stepState.recs)
	bits       int
	gs, sdt    uint32
	// slots 1..7; slot 2 mirrors 3 (the weight buffer)
	slots [8]Buf
	acts  []access // the accesses of every member
}

// role of a recorded launch in fusion.
const (
	opaque = iota
	heavy
	light
)

func (b *Backend) classify(r *launchRec) int {
	w := b.step.words[r.w0+kernels.ParamHeader : r.w1]
	switch r.id {
	case kernels.QMV4, kernels.QMV8:
		// n_in, n_out, ldd, out0, gsize, sdt; grid y = rows.
		rows := r.groups[1]
		if rows <= 4 && w[1] <= maxLightOut && int(w[0])*int(w[1]) <= maxLightMV {
			return light
		}
		if rows == 1 {
			return heavy
		}
	case kernels.MM:
		// n_in, n_out, n_rows, ldd, out0, gs, sdt, wdt
		if w[2] <= 4 && w[1] <= maxLightOut && int(w[0])*int(w[1]) <= maxLightMV {
			return light
		}
	case kernels.Eltwise:
		if w[0] <= maxLight {
			return light
		}
	case kernels.RMSNorm, kernels.RowStat:
		if int(w[0])*int(w[1]) <= maxLight && w[1] <= 64 {
			return light
		}
	case kernels.Streams:
		if w[5] <= maxLight {
			return light
		}
	case kernels.RoPE:
		if int(w[0])*int(w[1])*int(w[3]) <= maxLight {
			return light
		}
	}
	return opaque
}

// conflicts reports whether two access lists touch the same bytes with at
// least one write.
func conflicts(a, c []access) bool {
	for _, x := range a {
		for _, y := range c {
			if (x.write || y.write) && x.buf == y.buf && x.lo < y.hi && y.lo < x.hi {
				return true
			}
		}
	}
	return false
}

// bufUse is a buffer a launch binds, whether it writes it and whether it
// holds weights.
type bufUse struct {
	buf           Buf
	write, weight bool
}

// bufsOf returns the distinct buffers a recorded launch binds.
func (b *Backend) bufsOf(r *launchRec) []bufUse {
	var out []bufUse
	for _, a := range b.step.acc[r.a0:r.a1] {
		dup := false
		for i := range out {
			if out[i].buf == a.buf {
				out[i].write = out[i].write || a.write
				out[i].weight = out[i].weight || a.weight
				dup = true
			}
		}
		if !dup {
			out = append(out, bufUse{a.buf, a.write, a.weight})
		}
	}
	return out
}

// wholeBinds reports whether every binding of r covers its whole buffer
// from offset 0, so operands can be addressed by their byte offsets.
func (b *Backend) wholeBinds(r *launchRec) bool {
	for _, slot := range r.id.Info().Bindings {
		if r.binds[slot].Offset != 0 {
			return false
		}
	}
	return true
}

// place tries to give every buffer of r a slot of f. Slot 3 (read-only)
// takes mapped weights (MappedWeights: memory that may be a read-only file
// mapping, as Metal's no-copy buffers are) and nothing else, and they go
// nowhere else, since the other slots are writable. Every other buffer,
// uploaded weights included, takes slot 1 or 4..7, or slot 3 when it is
// read-only and slot 3 is free. It changes f only when everything fits.
func (f *fusedLaunch) place(bufs []bufUse) bool {
	slots := f.slots
	for _, u := range bufs {
		buf := u.buf
		found := false
		for s := 1; s < 8; s++ {
			if s != 2 && slots[s] == buf {
				if u.weight && s != 3 || s == 3 && u.write {
					return false
				}
				found = true
				break
			}
		}
		if found {
			continue
		}
		free := 0
		cands := []int{1, 3, 4, 5, 6, 7}
		if u.weight {
			cands = []int{3}
		}
		for _, s := range cands {
			if slots[s] == nil && !(s == 3 && u.write) {
				free = s
				break
			}
		}
		if free == 0 {
			return false
		}
		slots[free] = buf
		if free == 3 {
			slots[2] = buf
		}
	}
	f.slots = slots
	return true
}

// newFused returns an empty fused launch, reusing one of an earlier step
// (fusion runs every step, so its garbage would be a step's worth of
// allocations).
func (b *Backend) newFused() *fusedLaunch {
	st := &b.step
	if st.nfused == len(st.fpool) {
		st.fpool = append(st.fpool, &fusedLaunch{})
	}
	f := st.fpool[st.nfused]
	st.nfused++
	*f = fusedLaunch{segs: f.segs[:0], tail: f.tail[:0], acts: f.acts[:0]}
	return f
}

// fuse rewrites the step's launches (see the comment at the top).
func (b *Backend) fuse() {
	st := &b.step
	n := len(st.recs)
	if n < 2 {
		return
	}
	st.nfused = 0
	items := st.items[:0]
	defer func() { st.items = items[:0] }()
	acc := func(i int) []access { r := &st.recs[i]; return st.acc[r.a0:r.a1] }
	itemAcc := func(it *fitem) []access {
		if it.fused != nil {
			return it.fused.acts
		}
		return acc(it.orig)
	}
	for i := 0; i < n; i++ {
		r := &st.recs[i]
		kind := b.classify(r)
		if kind != opaque && !b.wholeBinds(r) || kind == light && b.fusion != FuseAll {
			kind = opaque
		}
		switch kind {
		case heavy:
			if b.joinHeavy(items, i, itemAcc) {
				continue
			}
			f := b.newFused()
			if b.addSeg(f, i) {
				items = append(items, fitem{orig: -1, fused: f})
				continue
			}
		case light:
			if k := len(items); k > 0 && items[k-1].fused != nil && b.addTail(items[k-1].fused, i) {
				continue
			}
			f := b.newFused()
			if b.addTail(f, i) {
				items = append(items, fitem{orig: -1, fused: f})
				continue
			}
		}
		items = append(items, fitem{orig: i})
	}
	fusedAny := false
	for _, it := range items {
		if it.fused != nil && len(it.fused.segs)+len(it.fused.tail) > 1 {
			fusedAny = true
		}
	}
	if !fusedAny {
		return
	}
	// Emit: fused launches get new records (words and accesses appended);
	// kept launches keep theirs.
	recs := st.frecs[:0]
	defer func() { st.frecs = recs[:0] }()
	counter := 0
	for _, it := range items {
		if it.fused == nil {
			recs = append(recs, st.recs[it.orig])
			continue
		}
		f := it.fused
		if len(f.segs)+len(f.tail) == 1 {
			// A lone launch gains nothing from the fused kernel.
			k := f.segs
			if len(k) == 0 {
				k = f.tail
			}
			recs = append(recs, st.recs[k[0]])
			continue
		}
		rec, ok := b.emit(f, &counter)
		if !ok {
			for _, k := range append(append([]int(nil), f.segs...), f.tail...) {
				recs = append(recs, st.recs[k])
			}
			continue
		}
		recs = append(recs, rec)
	}
	st.recs = append(st.recs[:0], recs...)
}

// joinHeavy adds heavy launch i as a segment of the latest fused launch it
// may move up to: scanning back over the launches after it, none may
// conflict with i.
func (b *Backend) joinHeavy(items []fitem, i int, itemAcc func(*fitem) []access) bool {
	st := &b.step
	ai := st.acc[st.recs[i].a0:st.recs[i].a1]
	for k := len(items) - 1; k >= 0 && k >= len(items)-8; k-- {
		it := &items[k]
		if it.fused != nil && len(it.fused.segs) > 0 && len(it.fused.segs) < kernels.MaxSegments {
			// It may join only if it does not depend on the fused launch
			// itself (its segments and tail) either.
			if !conflicts(ai, it.fused.acts) && b.addSeg(it.fused, i) {
				return true
			}
		}
		if conflicts(ai, itemAcc(it)) {
			return false
		}
	}
	return false
}

// addSeg adds heavy launch i to f's segments if compatible.
func (b *Backend) addSeg(f *fusedLaunch, i int) bool {
	st := &b.step
	r := &st.recs[i]
	w := st.words[r.w0+kernels.ParamHeader : r.w1]
	bits := 4
	if r.id == kernels.QMV8 {
		bits = 8
	}
	if len(f.segs) > 0 && (f.bits != bits || f.gs != w[4] || f.sdt != w[5]) {
		return false
	}
	x, wt, sc, bi, d := r.binds[1].Buf, r.binds[2].Buf, r.binds[3].Buf, r.binds[4].Buf, r.binds[5].Buf
	if x != d || wt != sc || wt != bi {
		return false
	}
	if _, ok := b.chunkOf[x]; !ok {
		return false // the arrival counter lives in a heap chunk
	}
	if f.slots[1] != nil && f.slots[1] != x || f.slots[3] != nil && f.slots[3] != wt {
		return false
	}
	slots := f.slots
	f.slots[1], f.slots[2], f.slots[3] = x, wt, wt
	if !f.place(b.bufsOf(r)) {
		f.slots = slots
		return false
	}
	f.segs = append(f.segs, i)
	f.bits, f.gs, f.sdt = bits, w[4], w[5]
	f.acts = append(f.acts, st.acc[r.a0:r.a1]...)
	return true
}

// addTail appends light launch i to f's tail if its buffers fit.
func (b *Backend) addTail(f *fusedLaunch, i int) bool {
	if len(f.tail) >= kernels.MaxOps {
		return false
	}
	st := &b.step
	r := &st.recs[i]
	if !f.place(b.bufsOf(r)) {
		return false
	}
	f.tail = append(f.tail, i)
	f.acts = append(f.acts, st.acc[r.a0:r.a1]...)
	return true
}

// emit builds the fused launch record of f, appending its parameter words
// and accesses to the step. counter numbers the arrival counters.
func (b *Backend) emit(f *fusedLaunch, counter *int) (launchRec, bool) {
	st := &b.step
	slotOf := func(buf Buf) uint32 {
		for s := 1; s < 8; s++ {
			if s != 2 && f.slots[s] == buf {
				return uint32(s)
			}
		}
		return 0
	}
	// Workgroups of the segment phase.
	type segw struct{ a, c [4]uint32 }
	var segs []segw
	nwg := 0
	for _, k := range f.segs {
		r := &st.recs[k]
		w := st.words[r.w0+kernels.ParamHeader : r.w1]
		unit := int64(2)
		if f.sdt == 0 {
			unit = 4
		}
		segs = append(segs, segw{
			a: [4]uint32{w[0], uint32(r.boff[1] / 4), uint32(r.boff[2] / 16), uint32(r.boff[3] / unit)},
			c: [4]uint32{uint32(r.boff[4] / unit), w[1], uint32(r.boff[5]/4) + w[3], uint32(nwg)},
		})
		nwg += (int(w[1]) + 31) / 32
	}
	if nwg == 0 {
		nwg = 1
	}
	var ops [][16]uint32
	for _, k := range f.tail {
		op, ok := b.tailOp(&st.recs[k], slotOf)
		if !ok {
			return launchRec{}, false
		}
		ops = append(ops, op)
	}
	b.elideSyncs(f, ops)
	id := kernels.VChain
	switch {
	case len(f.segs) > 0 && f.bits == 4:
		id = kernels.QMVT4
	case len(f.segs) > 0:
		id = kernels.QMVT8
	}
	if f.slots[1] == nil {
		// A tail-only launch: any buffer can take slot 1.
		for s := 4; s < 8; s++ {
			if f.slots[s] != nil {
				f.slots[1] = f.slots[s]
				break
			}
		}
	}
	var ctr uint32
	acts := f.acts
	if nwg > 1 && len(ops) > 0 {
		ch := b.chunkOf[f.slots[1]]
		if ch == nil {
			return launchRec{}, false
		}
		cst, err := b.counters(ch)
		if err != nil || *counter >= cst.size/4 {
			return launchRec{}, false
		}
		ctr = uint32(cst.off/4) + uint32(*counter)
		*counter++
		lo := int64(ctr) * 4
		acts = append(acts, access{buf: f.slots[1], lo: lo, hi: lo + 4, st: cst}, access{buf: f.slots[1], lo: lo, hi: lo + 4, write: true, st: cst})
		if cst.fresh && b.remote != nil {
			cst.fresh = false
			st.uploads = append(st.uploads, cst)
		}
	}
	rec := launchRec{id: id, groups: gridRows(nwg)}
	for s := 1; s < 8; s++ {
		buf := f.slots[s]
		if buf == nil {
			buf = f.slots[1]
		}
		rec.binds[s] = Binding{Buf: buf, Size: b.bufSize(f, buf)}
		if rec.binds[s].Size <= 0 || rec.binds[s].Size > b.lim.MaxRange {
			return launchRec{}, false
		}
	}
	if id == kernels.VChain {
		rec.binds[2] = Binding{}
	}
	rec.w0 = int32(len(st.words))
	var hdr [kernels.ParamHeader]uint32
	st.words = append(st.words, hdr[:]...)
	st.words = append(st.words, uint32(len(segs)), uint32(len(ops)), ctr, uint32(nwg), f.gs, f.sdt, 0, 0)
	for i := range kernels.MaxSegments {
		if i < len(segs) {
			st.words = append(st.words, segs[i].a[:]...)
			st.words = append(st.words, segs[i].c[:]...)
		} else {
			st.words = append(st.words, 0, 0, 0, 0, 0, 0, 0, 0)
		}
	}
	for _, op := range ops {
		st.words = append(st.words, op[:]...)
	}
	rec.w1 = int32(len(st.words))
	rec.a0 = int32(len(st.acc))
	st.acc = append(st.acc, acts...)
	rec.a1 = int32(len(st.acc))
	return rec, true
}

// bufSize is the size of a buffer that f's members bind whole.
func (b *Backend) bufSize(f *fusedLaunch, buf Buf) int64 {
	st := &b.step
	for _, list := range [2][]int{f.segs, f.tail} {
		for _, k := range list {
			r := &st.recs[k]
			for s := 1; s < 8; s++ {
				if bd := r.binds[s]; bd.Buf == buf && bd.Offset == 0 {
					return bd.Size
				}
			}
		}
	}
	return 0
}

// counters returns ch's arrival counters (1024 words, zero between runs),
// carving them on first use.
func (b *Backend) counters(ch *chunk) (*bufState, error) {
	if ch.counters != nil {
		return ch.counters, nil
	}
	const size = 4096
	align := max(b.lim.OffsetAlign, 256)
	off := (ch.used + align - 1) &^ (align - 1)
	if off+size > ch.size {
		return nil, errNoCounters
	}
	ch.used = off + size
	mem := ch.mem[off : off+size : off+size]
	clear(mem)
	st := &bufState{ch: ch, off: off, mem: mem, base: dataPtr(mem), size: size, n: size, internal: true, fresh: true}
	ch.counters = st
	return st, nil
}

type fuseError string

func (e fuseError) Error() string { return string(e) }

const errNoCounters = fuseError("no room for arrival counters")

// tailOp encodes recorded light launch r as a tail op (4 uvec4; see
// src/fused.comp), its operands addressed by slot and word offset.
func (b *Backend) tailOp(r *launchRec, slotOf func(Buf) uint32) (op [16]uint32, ok bool) {
	w := b.step.words[r.w0+kernels.ParamHeader : r.w1]
	sl := func(slot int) uint32 { return slotOf(r.binds[slot].Buf) }
	w4 := func(slot int) uint32 { return uint32(r.boff[slot] / 4) }
	// units of a float operand of dtype code dt (16-bit types count
	// 16-bit elements)
	wu := func(slot int, dt uint32) uint32 {
		if dt == 0 {
			return uint32(r.boff[slot] / 4)
		}
		return uint32(r.boff[slot] / 2)
	}
	for _, slot := range r.id.Info().Bindings {
		if sl(slot) == 0 || r.boff[slot]/2 > math.MaxUint32 {
			return op, false
		}
	}
	switch r.id {
	case kernels.Eltwise: // n, nb, op, f; a 1, b 2, dst 3
		op = [16]uint32{1, w[0], w[1], w[2], sl(1), w4(1), sl(2), w4(2), sl(3), w4(3), w[3]}
	case kernels.RMSNorm: // n, rows, hasW, wdt, eps, center, hasB, bdt; x 1, w 2, dst 3, bias 4
		flags := w[2] | w[5]<<1 | w[6]<<2
		op = [16]uint32{2, w[0], w[1], flags, sl(1), w4(1), sl(2), wu(2, w[3]), sl(3), w4(3), sl(4), wu(4, w[7]), w[3], w[7], w[4]}
	case kernels.RowStat: // n, rows, op, f; x 1, ref 2, dst 3
		op = [16]uint32{3, w[0], w[1], w[2], sl(1), w4(1), sl(2), w4(2), sl(3), w4(3), w[3]}
	case kernels.Streams: // op, S, n, N, R, total; x 1, coef 2, b 3, dst 4
		op = [16]uint32{4, w[0], w[1], w[2], w[3], w[4], w[5], 0, sl(1), w4(1), sl(2), w4(2), sl(3), w4(3), sl(4), w4(4)}
	case kernels.RoPE: // rows, heads, hd, half, pos0, inter; x 1, invf 2
		op = [16]uint32{5, w[0], w[1], w[2], w[3], w[4], w[5], 0, sl(1), w4(1), sl(2), w4(2)}
	case kernels.MM: // n_in, n_out, n_rows, ldd, out0, gs, sdt, wdt; x 1, W 2, dst 5
		op = [16]uint32{6, w[0], w[1], 0 | w[2]<<8, sl(1), w4(1), sl(2), wu(2, w[7]), 0, 0, 0, 0, sl(5), w4(5) + w[4], w[7] << 16, w[3]}
	case kernels.QMV4, kernels.QMV8: // n_in, n_out, ldd, out0, gs, sdt; x 1, W 2, S 3, B 4, D 5
		bits := uint32(4)
		if r.id == kernels.QMV8 {
			bits = 8
		}
		op = [16]uint32{6, w[0], w[1], bits | uint32(r.groups[1])<<8, sl(1), w4(1), sl(2), w4(2), sl(3), wu(3, w[5]), sl(4), wu(4, w[5]), sl(5), w4(5) + w[3], w[4] | w[5]<<16, w[2]}
	default:
		return op, false
	}
	return op, true
}

// elideSyncs marks tail ops after which no barrier is needed: an
// elementwise op followed by another over the same number of values whose
// accesses that meet its own do so at the same indices (each invocation
// then reads only what it wrote itself).
func (b *Backend) elideSyncs(f *fusedLaunch, ops [][16]uint32) {
	st := &b.step
	type rng struct {
		buf     Buf
		lo, hi  int64
		write   bool
		indexed bool // accessed at the op's own index
	}
	ranges := func(k int) []rng {
		r := &st.recs[f.tail[k]]
		w := st.words[r.w0+kernels.ParamHeader : r.w1]
		n := int64(w[0]) * 4
		bcast := w[1] != w[0]
		return []rng{
			{r.binds[1].Buf, r.boff[1], r.boff[1] + n, false, true},
			{r.binds[2].Buf, r.boff[2], r.boff[2] + int64(w[1])*4, false, !bcast},
			{r.binds[3].Buf, r.boff[3], r.boff[3] + n, true, true},
		}
	}
	for k := 0; k+1 < len(ops); k++ {
		ri, rj := &st.recs[f.tail[k]], &st.recs[f.tail[k+1]]
		if ri.id != kernels.Eltwise || rj.id != kernels.Eltwise {
			continue
		}
		if st.words[ri.w0+kernels.ParamHeader] != st.words[rj.w0+kernels.ParamHeader] {
			continue
		}
		safe := true
		for _, x := range ranges(k) {
			for _, y := range ranges(k + 1) {
				if !(x.write || y.write) || x.buf != y.buf || x.hi <= y.lo || y.hi <= x.lo {
					continue
				}
				if !(x.indexed && y.indexed && x.lo == y.lo) {
					safe = false
				}
			}
		}
		if safe {
			ops[k][0] |= 0x100
		}
	}
}
