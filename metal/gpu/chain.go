package gpu

import (
	"math"
	"slices"
	"unsafe"

	"mlxchat/metal/kernels"
)

// Chains (run at Sync when fusion is off, before barriers and plans).
//
// A decode step records long chains of small launches over single rows of
// a few thousand values, and each launch that depends on the one before it
// waits at a barrier (about 3 us on an H200) however little it does. chain
// folds row-local ops into the launch before them:
//
//   - epilogue: elementwise ops on the values that a matrix-vector
//     product of one row (qmv, or a small dense one: mm), a norm or an
//     elementwise op wrote, in place (add, mul, scale, softcap, GELU,
//     SiLU) or adding or multiplying those values into another tensor,
//     move into that launch (qmvx, mmx, normx, eltx), which applies them to
//     each value before storing it (src/epi.glsl);
//   - second norm: an RMSNorm of one row that a norm just wrote (the
//     pre-feed-forward norm of the attention block's output, AltUp's
//     router norm of the feed-forward output), with the scales of its own
//     output, moves into that norm's launch (normx), whose workgroup holds
//     the row already.
//
// An op moves only past launches it is independent of (no byte range that
// one of them writes and the other touches), and kept launches keep their
// order, so every launch reads the bytes it read before and every range
// ends up as it did; the barriers are then placed as for any step.
//
// Then schedule orders the launches by dependency depth: a model records
// in program order (q's projection, norm and rotation, then k's), so a
// launch that depends on nothing since the last barrier but comes after
// one that does waited at the next barrier anyway. Between volatile
// launches, each launch gets the level one above the highest level of an
// earlier launch it conflicts with, and the launches run sorted by level
// (stably): conflicting launches keep their order, independent ones share
// a barrier. An E2B decode step waits at 654 barriers instead of 814.
//
// The search costs a few tenths of a millisecond of host time per E2B
// step, so its result is kept per step shape (chainEntry) and later steps
// of the same shape, every decode step after the first, replay it.
//
// (Folding a norm into the products that read it instead, each
// workgroup normalizing x again while loading it, made those products
// two to three times slower on the H200: a workgroup of qmv reads 8 KB of
// x for 2 KB of weights, and the norm's second pass and weight tripled
// that.)

// How many launches after a producer of values are searched for ops to
// fold: elementwise ops follow what they apply to within a few.
const chainWindow = 8

// span is a byte range of a buffer.
type span struct {
	buf    Buf
	lo, hi int64
}

func (s span) meets(t span) bool { return s.buf == t.buf && s.lo < t.hi && t.lo < s.hi }

// spanOf is the n bytes of r's operand at slot.
func spanOf(r *launchRec, slot int, n int64) span {
	return span{r.binds[slot].Buf, r.boff[slot], r.boff[slot] + n}
}

// touches reports whether acc reads (unless writesOnly) or writes s.
func touches(acc []access, s span, writesOnly bool) bool {
	for _, a := range acc {
		if (a.write || !writesOnly) && a.buf == s.buf && a.lo < s.hi && s.lo < a.hi {
			return true
		}
	}
	return false
}

// member is an op folded into a chained launch: recorded launch k, an
// elementwise op, or a second norm with the product s2 of its scales.
type member struct {
	k     int32
	norm2 bool
	s2    float32
}

// chained is a launch being built from a recorded one (base) and the ops
// folded into it.
type chained struct {
	id    kernels.ID
	base  int32
	rec   launchRec // binds and groups; words and accesses are set at emit
	hdr   [kernels.ParamHeader]uint32
	words []uint32 // the scalar parameter words
	epi   [][4]uint32
	acc   []access
	// ro and rw are the slots the kernel reads and writes as float
	// arrays; free the slots no operand has claimed yet.
	ro, rw, free uint8
	out          span // the values the epilogue applies to
	nepiAt       int  // index in words of the epilogue's op count
	writes       []span
	reads        []span
	members      []member
}

// claim returns the slot and float offset through which the kernel reaches
// span s of operand binding bd (write: it stores there), binding bd at a
// free slot if none covers s yet.
func (c *chained) claim(s span, bd Binding, write bool) (uint32, uint32, bool) {
	mask := c.ro | c.rw
	if write {
		mask = c.rw
	}
	for slot := 1; slot < 8; slot++ {
		b := c.rec.binds[slot]
		if mask&(1<<slot) == 0 || c.free&(1<<slot) != 0 || b.Buf != s.buf || s.lo < b.Offset || s.hi > b.Offset+b.Size {
			continue
		}
		if off := s.lo - b.Offset; off%4 == 0 && off/4 <= math.MaxUint32 {
			return uint32(slot), uint32(off / 4), true
		}
	}
	for slot := 1; slot < 8; slot++ {
		if c.free&(1<<slot) == 0 || mask&(1<<slot) == 0 || bd.Buf != s.buf || s.lo < bd.Offset || s.hi > bd.Offset+bd.Size {
			continue
		}
		off := s.lo - bd.Offset
		if off%4 != 0 || off/4 > math.MaxUint32 {
			return 0, 0, false
		}
		c.free &^= 1 << slot
		c.rec.binds[slot] = bd
		return uint32(slot), uint32(off / 4), true
	}
	return 0, 0, false
}

func (b *Backend) words(r *launchRec) []uint32 {
	return b.step.words[r.w0+kernels.ParamHeader : r.w1]
}

// chainState is chain's scratch, reused between steps, and the kept
// rewrites.
type chainState struct {
	cache []*chainEntry
	clock int64
	now   int64       // the born of the step's own allocations (bornNow)
	fresh []*bufState // shapeHash's allocations of the step being recorded
	dead  []bool
	ch    []*chained
	pool  []*chained
	used  int
	recs  []launchRec
	mid   []int
	spans [3]span
	subst []launchRec // replay's rebuilt launches
	level []int32     // schedule's levels
}

func (b *Backend) newChained(id kernels.ID, i int) *chained {
	cs := &b.chains
	if cs.used == len(cs.pool) {
		cs.pool = append(cs.pool, &chained{})
	}
	c := cs.pool[cs.used]
	cs.used++
	r := &b.step.recs[i]
	*c = chained{id: id, base: int32(i), rec: *r, words: c.words[:0], epi: c.epi[:0], acc: c.acc[:0],
		writes: c.writes[:0], reads: c.reads[:0], members: c.members[:0]}
	copy(c.hdr[:], b.step.words[r.w0:r.w0+kernels.ParamHeader])
	c.rec.id = id
	return c
}

// accOf is the accesses of launch i as the step stands.
func (b *Backend) accOf(i int) []access {
	if c := b.chains.ch[i]; c != nil {
		return c.acc
	}
	r := &b.step.recs[i]
	return b.step.acc[r.a0:r.a1]
}

// chain rewrites the step's launches (see the comment at the top).
func (b *Backend) chain() {
	st := &b.step
	n := len(st.recs)
	if n < 2 {
		return
	}
	cs := &b.chains
	h := b.shapeHash()
	cs.clock++
	for _, e := range cs.cache {
		if e.hash == h && e.nrecs == n && e.nwords == len(st.words) && e.nacc == len(st.acc) {
			if b.replay(e) {
				e.lastUse = cs.clock
				b.stats.ChainReplays++
				return
			}
			e.hash, e.nrecs = 0, -1
			break
		}
	}
	e := b.newChainEntry(h)
	cs.dead = slices.Grow(cs.dead[:0], n)[:n]
	cs.ch = slices.Grow(cs.ch[:0], n)[:n]
	clear(cs.dead)
	clear(cs.ch)
	cs.used = 0
	for i := range st.recs {
		if !cs.dead[i] {
			b.epilogue(i)
		}
	}
	for i := range st.recs {
		if !cs.dead[i] {
			b.secondNorm(i)
		}
	}
	for i := range st.recs {
		if cs.dead[i] {
			continue
		}
		c := cs.ch[i]
		if c == nil {
			e.out = append(e.out, int32(i))
			continue
		}
		r := b.emitChained(c)
		for _, a := range c.acc {
			if b.bornNow(a.st) {
				// It holds the place of an allocation that moves from
				// step to step: a replay builds it again.
				e.redo = append(e.redo, redo{pos: int32(len(e.recs)), base: c.base, members: append([]member(nil), c.members...)})
				break
			}
		}
		e.out = append(e.out, -1-int32(len(e.recs)))
		e.recs = append(e.recs, r)
	}
	clear(cs.ch)
	e.words = append(e.words, st.words[e.nwords:]...)
	e.acc = append(e.acc, st.acc[e.nacc:]...)
	b.setRecs(e, nil)
	if !b.noSchedule {
		e.order = b.schedule(e.order[:0])
		b.reorder(e.order)
	}
}

// schedule returns the order (indices into the step's launches) in which
// launches run with the fewest barriers that keep every launch after the
// earlier ones it conflicts with (see the comment at the top), or nil when
// that is the recorded order. Volatile launches stay where they are, so the
// order depends only on what shapeHash covers and replays keep it.
func (b *Backend) schedule(order []int32) []int32 {
	st, cs := &b.step, &b.chains
	n := len(st.recs)
	cs.level = slices.Grow(cs.level[:0], n)[:n]
	order = slices.Grow(order[:0], n)[:n]
	moved := false
	for lo := 0; lo < n; {
		hi := lo
		for hi < n && !volatile(&st.recs[hi], b.words(&st.recs[hi])) {
			hi++
		}
		if hi == lo { // a volatile launch
			order[lo] = int32(lo)
			lo++
			continue
		}
		for i := lo; i < hi; i++ {
			l := int32(0)
			ai := st.acc[st.recs[i].a0:st.recs[i].a1]
			for j := i - 1; j >= lo; j-- {
				if cs.level[j] >= l && conflicts(ai, st.acc[st.recs[j].a0:st.recs[j].a1]) {
					l = cs.level[j] + 1
				}
			}
			cs.level[i] = l
			order[i] = int32(i)
		}
		run := order[lo:hi]
		slices.SortStableFunc(run, func(x, y int32) int { return int(cs.level[x] - cs.level[y]) })
		for k, v := range run {
			moved = moved || v != int32(lo+k)
		}
		lo = hi
	}
	if !moved {
		return order[:0]
	}
	return order
}

// reorder makes the step's launches run in order (from schedule; none
// when empty).
func (b *Backend) reorder(order []int32) {
	if len(order) == 0 {
		return
	}
	st, cs := &b.step, &b.chains
	recs := cs.recs[:0]
	for _, i := range order {
		recs = append(recs, st.recs[i])
	}
	st.recs, cs.recs = recs, st.recs[:0]
}

// emitChained appends c's parameter words and accesses to the step and
// returns its launch record.
func (b *Backend) emitChained(c *chained) launchRec {
	st := &b.step
	r := c.rec
	r.w0 = int32(len(st.words))
	c.words[c.nepiAt] = uint32(len(c.epi))
	st.words = append(st.words, c.hdr[:]...)
	st.words = append(st.words, c.words...)
	for k := 0; k < c.id.Info().MaxEpi; k++ {
		var ep [4]uint32
		if k < len(c.epi) {
			ep = c.epi[k]
		}
		st.words = append(st.words, ep[:]...)
	}
	r.w1 = int32(len(st.words))
	r.a0 = int32(len(st.acc))
	st.acc = append(st.acc, c.acc...)
	r.a1 = int32(len(st.acc))
	return r
}

// chainEntry is the rewrite of one step shape, kept for later steps of
// the same shape, which replay it instead of searching again: a decode
// step records the same launches on the same memory every time but for
// the volatile launches' parameters and ranges, which the rewrite does
// not depend on, and the allocations the model makes anew each step (its
// logits). out lists the rewritten step's launches: v >= 0 is recorded
// launch v kept as it is, v < 0 the chained launch recs[-1-v], whose
// parameter words and accesses (words, acc) were appended to the step's
// at nwords and nacc. A chained launch touching an allocation made in the
// step is built again from its members at each replay (redo).
type chainEntry struct {
	hash                uint64
	nrecs, nwords, nacc int
	out                 []int32
	recs                []launchRec
	words               []uint32
	acc                 []access
	redo                []redo
	// order is the launches' order after the rewrite (schedule), or
	// empty: as rewritten.
	order   []int32
	lastUse int64
}

// redo is a chained launch that a replay builds again: recs[pos] of its
// entry, from launch base and its members.
type redo struct {
	pos, base int32
	members   []member
}

// maxChainEntries bounds the kept rewrites (one per segment of a step
// shape: see step.go's early submits).
const maxChainEntries = 64

// newChainEntry returns an empty entry for the step's shape h, in place
// of the least recently used one when maxChainEntries are kept.
func (b *Backend) newChainEntry(h uint64) *chainEntry {
	cs, st := &b.chains, &b.step
	var e *chainEntry
	if len(cs.cache) < maxChainEntries {
		e = &chainEntry{}
		cs.cache = append(cs.cache, e)
	} else {
		e = cs.cache[0]
		for _, x := range cs.cache {
			if x.lastUse < e.lastUse {
				e = x
			}
		}
	}
	*e = chainEntry{hash: h, nrecs: len(st.recs), nwords: len(st.words), nacc: len(st.acc), lastUse: cs.clock,
		out: e.out[:0], recs: e.recs[:0], words: e.words[:0], acc: e.acc[:0], redo: e.redo[:0], order: e.order[:0]}
	return e
}

// replay rewrites the step as e says (the step has e's shape): its kept
// launches are its own records at the same indices, the chained ones e's,
// whose words and accesses land where they were, but for the redo ones,
// built again on the step's records. It reports false, leaving the step
// as it was, if one of those cannot be built as before.
func (b *Backend) replay(e *chainEntry) bool {
	st, cs := &b.step, &b.chains
	st.words = append(st.words, e.words...)
	st.acc = append(st.acc, e.acc...)
	subst := cs.subst[:0]
	cs.used = 0
	for _, rd := range e.redo {
		c, ok := b.rebuild(rd)
		if !ok {
			st.words, st.acc = st.words[:e.nwords], st.acc[:e.nacc]
			return false
		}
		subst = append(subst, b.emitChained(c))
	}
	cs.subst = subst[:0]
	b.setRecs(e, subst)
	b.reorder(e.order)
	return true
}

// rebuild builds redo's chained launch on the step's records.
func (b *Backend) rebuild(rd redo) (*chained, bool) {
	st := &b.step
	out, _, ok := b.producerOut(&st.recs[rd.base])
	if !ok {
		return nil, false
	}
	c := b.chainFrom(int(rd.base), out)
	if c == nil {
		return nil, false
	}
	for _, m := range rd.members {
		if m.norm2 {
			if !b.applyNorm2(c, int(m.k), m.s2) {
				return nil, false
			}
			continue
		}
		p, ok := b.epiPlan(&st.recs[m.k], out)
		if !ok || !b.applyEpi(c, int(m.k), p) {
			return nil, false
		}
	}
	return c, true
}

// setRecs makes e's launch list the step's, the redo launches replaced
// by subst (in e.redo's order) when given.
func (b *Backend) setRecs(e *chainEntry, subst []launchRec) {
	st, cs := &b.step, &b.chains
	recs := cs.recs[:0]
	for _, v := range e.out {
		if v >= 0 {
			recs = append(recs, st.recs[v])
		} else {
			recs = append(recs, e.recs[-1-v])
		}
	}
	if len(subst) > 0 {
		for i, v := range e.out {
			if v < 0 {
				for j, rd := range e.redo {
					if rd.pos == -1-v {
						recs[i] = subst[j]
					}
				}
			}
		}
	}
	// The old list is the next rewrite's scratch.
	st.recs, cs.recs = recs, st.recs[:0]
}

// producerOut returns the values launch r writes that ops may be folded
// into: a one-row matrix-vector product's outputs, a norm's rows, an
// elementwise op's values (not a copy: copies are volatile).
func (b *Backend) producerOut(r *launchRec) (out span, n uint32, ok bool) {
	w := b.words(r)
	switch r.id {
	case kernels.QMV4, kernels.QMV8, kernels.QMVW4, kernels.QMVW8: // n_in, n_out, ldd, out0, gs, sdt
		if r.groups[1] != 1 {
			return span{}, 0, false
		}
		n = w[1]
		return span{r.binds[5].Buf, r.boff[5] + 4*int64(w[3]), r.boff[5] + 4*int64(w[3]+w[1])}, n, true
	case kernels.MM: // n_in, n_out, n_rows, ldd, out0, gs, sdt, wdt
		if w[2] != 1 {
			return span{}, 0, false
		}
		n = w[1]
		return span{r.binds[5].Buf, r.boff[5] + 4*int64(w[4]), r.boff[5] + 4*int64(w[4]+w[1])}, n, true
	case kernels.RMSNorm: // n, rows, ...
		n = w[0] * w[1]
		return spanOf(r, 3, 4*int64(n)), n, true
	case kernels.Eltwise: // n, nb, op, f
		if w[2] == opCopy {
			return span{}, 0, false
		}
		return spanOf(r, 3, 4*int64(w[0])), w[0], true
	}
	return span{}, 0, false
}

// epilogue folds the elementwise ops after launch i that apply to the
// values it wrote into it.
func (b *Backend) epilogue(i int) {
	st, cs := &b.step, &b.chains
	out, n, ok := b.producerOut(&st.recs[i])
	if !ok {
		return
	}
	c := cs.ch[i]
	mid := cs.mid[:0]
	defer func() { cs.mid = mid[:0] }()
	for k := i + 1; k < len(st.recs) && k <= i+chainWindow; k++ {
		if cs.dead[k] {
			continue
		}
		rk := &st.recs[k]
		if volatile(rk, b.words(rk)) {
			return
		}
		if cs.ch[k] == nil && rk.id == kernels.Eltwise && b.words(rk)[0] == n && (c == nil || len(c.epi) < c.id.Info().MaxEpi) {
			if c2 := b.foldEpi(i, c, out, k, mid); c2 != nil {
				c = c2
				cs.ch[i] = c
				cs.dead[k] = true
				continue
			}
		}
		if touches(b.accOf(k), out, true) {
			return
		}
		mid = append(mid, k)
	}
}

// epiOp is an elementwise launch classified as an op on values out: a
// plain op (v = v op operand) or a side op (operand = operand op v).
type epiOp struct {
	op, nb, f    uint32
	binary, side bool
	opnd         span // the operand read (plain) or updated (side)
	obind        Binding
}

// epiPlan classifies elementwise launch rk as an op on the values out,
// or reports that it is none.
func (b *Backend) epiPlan(rk *launchRec, out span) (epiOp, bool) {
	wk := b.words(rk)
	n := int64(wk[0]) * 4
	p := epiOp{op: wk[2], nb: wk[1], f: wk[3]}
	a, bv, d := spanOf(rk, 1, n), spanOf(rk, 2, 4*int64(wk[1])), spanOf(rk, 3, n)
	p.binary = p.op == opAdd || p.op == opMul
	switch {
	case d == out && a == out:
		if p.op == opCopy || p.op > opSiLU {
			return p, false
		}
		if p.binary {
			p.opnd, p.obind = bv, rk.binds[2]
		}
	case d == out && p.binary && bv == out && wk[1] == wk[0]:
		p.opnd, p.obind = a, rk.binds[1] // a op v == v op a for add and mul
		p.nb = wk[0]
	case p.binary && wk[1] == wk[0] && d != out && !d.meets(out) && (a == d && bv == out || bv == d && a == out):
		p.side = true
		p.opnd, p.obind = d, rk.binds[3]
	default:
		return p, false
	}
	return p, !p.binary || !p.opnd.meets(out)
}

// foldEpi folds elementwise launch k into launch i (c, when it is chained
// already), whose output is out, if it qualifies; mid lists the launches
// kept between them. It returns the chained launch, or nil.
func (b *Backend) foldEpi(i int, c *chained, out span, k int, mid []int) *chained {
	st := &b.step
	rk := &st.recs[k]
	p, ok := b.epiPlan(rk, out)
	if !ok {
		return nil
	}
	eacc := st.acc[rk.a0:rk.a1]
	// Mapped weights may sit in read-only memory: never at a writable slot.
	for _, x := range eacc {
		if x.weight {
			return nil
		}
	}
	// It moves up past the launches in between.
	for _, m := range mid {
		if conflicts(eacc, b.accOf(m)) {
			return nil
		}
	}
	if p.binary {
		// The operand must not be a range the launch writes (its value
		// would depend on the order of workgroups), and a side op's
		// target nothing else it touches.
		reads, writes := b.baseSpans(i, out)
		if c != nil {
			reads, writes = c.reads, c.writes
		}
		for _, s := range writes {
			if s.meets(p.opnd) {
				return nil
			}
		}
		if p.side {
			for _, s := range reads {
				if s.meets(p.opnd) {
					return nil
				}
			}
		}
	}
	if c == nil {
		if c = b.chainFrom(i, out); c == nil {
			return nil
		}
		b.chains.ch[i] = c
	}
	if !b.applyEpi(c, k, p) {
		return nil
	}
	return c
}

// applyEpi adds op p, elementwise launch k, to c's epilogue.
func (b *Backend) applyEpi(c *chained, k int, p epiOp) bool {
	if len(c.epi) >= c.id.Info().MaxEpi {
		return false
	}
	var slot, off uint32
	if p.binary {
		var ok bool
		if slot, off, ok = c.claim(p.opnd, p.obind, p.side); !ok {
			return false
		}
	}
	code := p.op | slot<<8
	if p.side {
		code |= 1 << 16
		c.writes = append(c.writes, p.opnd)
	} else if p.binary {
		c.reads = append(c.reads, p.opnd)
	}
	c.epi = append(c.epi, [4]uint32{code, off, p.nb, p.f})
	rk := &b.step.recs[k]
	for _, x := range b.step.acc[rk.a0:rk.a1] {
		if !x.write && x.buf == c.out.buf && x.lo == c.out.lo && x.hi == c.out.hi {
			continue // the value itself
		}
		if x.write && !p.side {
			continue // out, written by the launch already
		}
		c.acc = append(c.acc, x)
	}
	c.members = append(c.members, member{k: int32(k)})
	return true
}

// chainFrom turns launch i (a one-row QMV or MM, an RMSNorm or an
// elementwise op) whose output is out into its chained kernel with an
// empty epilogue.
func (b *Backend) chainFrom(i int, out span) *chained {
	st := &b.step
	r := &st.recs[i]
	w := b.words(r)
	var c *chained
	switch r.id {
	case kernels.QMV4, kernels.QMV8, kernels.QMVW4, kernels.QMVW8:
		id := kernels.QMVX4
		switch r.id {
		case kernels.QMV8:
			id = kernels.QMVX8
		case kernels.QMVW4:
			id = kernels.QMVXW4
		case kernels.QMVW8:
			id = kernels.QMVXW8
		}
		c = b.newChained(id, i)
		c.rec.binds[6], c.rec.binds[7] = r.binds[5], r.binds[5]
		c.hdr[6], c.hdr[7] = 0, 0
		c.ro, c.rw, c.free = 1<<1|1<<5|1<<6|1<<7, 1<<5|1<<6|1<<7, 1<<6|1<<7
		c.words = append(c.words, w...)
		c.nepiAt = len(c.words)
		c.words = append(c.words, 0, 0)
	case kernels.MM:
		c = b.newChained(kernels.MMX, i)
		c.rec.binds[6], c.rec.binds[7] = r.binds[5], r.binds[5]
		c.hdr[6], c.hdr[7] = 0, 0
		c.ro, c.rw, c.free = 1<<1|1<<5|1<<6|1<<7, 1<<5|1<<6|1<<7, 1<<6|1<<7
		c.words = append(c.words, w...)
		c.nepiAt = len(c.words)
		c.words = append(c.words, 0, 0, 0, 0)
	case kernels.RMSNorm:
		c = b.newChained(kernels.NormX, i)
		c.rec.binds[5], c.rec.binds[6], c.rec.binds[7] = r.binds[3], r.binds[3], r.binds[3]
		c.hdr[5], c.hdr[6], c.hdr[7] = 0, 0, 0
		c.ro, c.rw, c.free = 1<<1|1<<3|1<<5|1<<6|1<<7, 1<<3|1<<5|1<<6|1<<7, 1<<5|1<<6|1<<7
		c.words = append(c.words, w...)
		c.nepiAt = len(c.words)
		c.words = append(c.words, 0, 0, 0, 0, math.Float32bits(1), 0, 0, 0)
	case kernels.Eltwise:
		c = b.newChained(kernels.EltX, i)
		for s := 4; s < 8; s++ {
			c.rec.binds[s] = r.binds[3]
			c.hdr[s] = 0
		}
		c.ro, c.rw, c.free = 1<<1|1<<2|1<<3|1<<4|1<<5|1<<6|1<<7, 1<<3|1<<4|1<<5|1<<6|1<<7, 1<<4|1<<5|1<<6|1<<7
		c.words = append(c.words, w...)
		c.nepiAt = len(c.words)
		c.words = append(c.words, 0, 0, 0, 0)
	default:
		return nil
	}
	c.out = out
	reads, writes := b.baseSpans(i, out)
	c.reads = append(c.reads, reads...)
	c.writes = append(c.writes, writes...)
	c.acc = append(c.acc, st.acc[r.a0:r.a1]...)
	return c
}

// baseSpans returns the spans that launch i (a producer chain folds ops
// into) reads and writes, out being its output, in chain's scratch.
func (b *Backend) baseSpans(i int, out span) (reads, writes []span) {
	r := &b.step.recs[i]
	w := b.words(r)
	cs := &b.chains
	cs.spans[2] = out
	switch r.id {
	case kernels.Eltwise:
		cs.spans[0], cs.spans[1] = spanOf(r, 1, 4*int64(w[0])), spanOf(r, 2, 4*int64(w[1]))
		return cs.spans[:2], cs.spans[2:3]
	case kernels.RMSNorm:
		cs.spans[0] = spanOf(r, 1, 4*int64(w[0])*int64(w[1]))
	default: // QMV, MM: x of one row
		cs.spans[0] = spanOf(r, 1, 4*int64(w[0]))
	}
	return cs.spans[:1], cs.spans[2:3]
}

// secondNorm folds into norm i (one row, no bias: slot 4 takes the second
// weight) the RMSNorm that next reads the row it wrote, with the scales
// of that norm's output already folded into it, when nothing in between
// writes the row or touches the second norm's output.
func (b *Backend) secondNorm(i int) {
	st, cs := &b.step, &b.chains
	r := &st.recs[i]
	if r.id != kernels.RMSNorm {
		return
	}
	w := b.words(r)
	if w[1] != 1 || w[6] != 0 {
		return
	}
	out := spanOf(r, 3, 4*int64(w[0]))
	mid := cs.mid[:0]
	defer func() { cs.mid = mid[:0] }()
	for k := i + 1; k < len(st.recs) && k <= i+chainWindow; k++ {
		if cs.dead[k] {
			continue
		}
		rk := &st.recs[k]
		if volatile(rk, b.words(rk)) {
			return
		}
		if rk.id == kernels.RMSNorm && spanOf(rk, 1, out.hi-out.lo) == out {
			b.foldNorm(i, out, k, mid)
			return
		}
		if touches(b.accOf(k), out, true) {
			return
		}
		mid = append(mid, k)
	}
}

// foldNorm folds RMSNorm k, which reads out, the row norm i wrote, into i
// as its second norm if it qualifies; mid lists the launches kept between
// them.
func (b *Backend) foldNorm(i int, out span, k int, mid []int) {
	st, cs := &b.step, &b.chains
	rk := &st.recs[k]
	wk := b.words(rk)
	n := out.hi - out.lo
	if wk[1] != 1 || 4*int64(wk[0]) != n || wk[5] != 0 || wk[6] != 0 {
		return
	}
	d2 := spanOf(rk, 3, n)
	if d2.meets(out) {
		return
	}
	s2 := float32(1)
	if ck := cs.ch[k]; ck != nil {
		for _, e := range ck.epi {
			if e[0] != opScale {
				return
			}
			s2 *= math.Float32frombits(e[3])
		}
	}
	acc := b.accOf(k)
	for _, m := range mid {
		if conflicts(acc, b.accOf(m)) {
			return
		}
	}
	c := cs.ch[i]
	reads, writes := b.baseSpans(i, out)
	if c != nil {
		if c.words[c.nepiAt+1] != 0 {
			return
		}
		reads, writes = c.reads, c.writes
	}
	for _, s := range reads {
		if s.meets(d2) {
			return
		}
	}
	for _, s := range writes {
		if s.meets(d2) {
			return
		}
	}
	if c == nil {
		if c = b.chainFrom(i, out); c == nil {
			return
		}
		cs.ch[i] = c
	}
	// The scales folded into k become s2 (their accesses, of d2 only,
	// are covered by k's write of it).
	if b.applyNorm2(c, k, s2) {
		cs.dead[k] = true
	}
}

// applyNorm2 makes RMSNorm k, scaled by s2, c's second norm.
func (b *Backend) applyNorm2(c *chained, k int, s2 float32) bool {
	st := &b.step
	rk := &st.recs[k]
	wk := b.words(rk)
	d2 := spanOf(rk, 3, 4*int64(wk[0]))
	slot, off, ok := c.claim(d2, rk.binds[3], true)
	if !ok {
		return false
	}
	flags := uint32(1)
	if wk[2] != 0 {
		flags |= 2
		c.rec.binds[4] = rk.binds[2]
		c.hdr[4] = st.words[int(rk.w0)+2]
	}
	copy(c.words[c.nepiAt+1:], []uint32{flags, wk[3], wk[4], math.Float32bits(s2), slot, off})
	c.writes = append(c.writes, d2)
	c.acc = append(c.acc, st.acc[rk.a0:rk.a1]...)
	c.members = append(c.members, member{k: int32(k), norm2: true, s2: s2})
	return true
}

// shapeHash hashes what chain's rewrite depends on: every launch's
// kernel and, but for volatile launches, its grid, bindings and accesses
// (with the activation allocations they lie in), and the parameter words
// of the kernels chain reads or folds. An allocation made while this
// step was recorded (the logits a model hands its caller each step) lands
// somewhere else every step: it enters by its order of appearance and its
// ranges relative to it (a chained launch touching one is built again at
// each replay).
func (b *Backend) shapeHash() (h uint64) {
	st, cs := &b.step, &b.chains
	h = 14695981039346656037
	mix := func(v uint64) { h = (h ^ v) * 1099511628211 }
	cs.fresh = cs.fresh[:0]
	for i := range st.recs {
		r := &st.recs[i]
		w := b.words(r)
		mix(uint64(r.id))
		if volatile(r, w) {
			continue
		}
		mix(uint64(r.groups[0]) | uint64(r.groups[1])<<21 | uint64(r.groups[2])<<42)
		for s := 1; s < 8; s++ {
			if bd := r.binds[s]; bd.Buf != nil {
				mix(uint64(bufOrder(bd.Buf)))
				mix(uint64(bd.Offset))
				mix(uint64(bd.Size))
			}
		}
		switch r.id {
		case kernels.QMV4, kernels.QMV8, kernels.QMVW4, kernels.QMVW8, kernels.MM, kernels.RMSNorm, kernels.Eltwise:
			for _, x := range w {
				mix(uint64(x))
			}
		}
		for _, a := range st.acc[r.a0:r.a1] {
			f := uint64(0)
			if a.write {
				f |= 1
			}
			if a.weight {
				f |= 2
			}
			if b.bornNow(a.st) {
				k := slices.Index(cs.fresh, a.st)
				if k < 0 {
					k = len(cs.fresh)
					cs.fresh = append(cs.fresh, a.st)
				}
				mix(uint64(k)<<3 | 4 | f)
				mix(uint64(a.lo - a.st.off))
				mix(uint64(a.hi - a.st.off))
				continue
			}
			mix(uint64(bufOrder(a.buf)))
			mix(uint64(a.lo))
			mix(uint64(a.hi))
			mix(uint64(uintptr(unsafe.Pointer(a.st)))<<3 | f)
		}
	}
	return h
}

// bornNow reports an allocation made while the step being run was
// recorded: its born is chainState.now (Sync counts itself before it runs
// the step's last segment, an early submit runs before that).
func (b *Backend) bornNow(st *bufState) bool {
	return st != nil && st.born == b.chains.now
}

// volatile reports launches whose ranges change from one decode step to
// the next, attention (the keys it reads grow) and copies (K/V rows
// appended at the next position): chain never folds into one or moves an
// op past one, so its rewrite does not depend on their ranges and
// shapeHash can leave them out.
func volatile(r *launchRec, w []uint32) bool {
	switch r.id {
	case kernels.Attn, kernels.AttnD, kernels.AttnMerge:
		return true
	case kernels.Eltwise:
		return w[2] == opCopy
	}
	return false
}
