package cpu

import (
	"fmt"
	"math"
	"sync/atomic"

	"mlxchat/tensor"
)

// Attention computes softmax(scale·q·kᵀ + mask)·v per head with grouped-
// query sharing. q and dst are [nq, hq, d]; k and v are [nk, hkv, d] with
// hq a multiple of hkv; dst must not overlap them. The mask gives absolute
// query and key positions; a masked key contributes nothing. Jobs are
// blocks of query rows (all heads) over the keys in blocks of attnBlock
// with an online softmax; a chunk of too few rows to give every thread a
// job (decode) splits its keys into contiguous ranges instead and merges
// their softmax states.
func (b *Backend) Attention(dst, q, k, v *tensor.Tensor, mask tensor.Mask, scale float32) error {
	shape, err := tensor.CheckAttention(dst, q, k, v, mask)
	if err != nil {
		return fmt.Errorf("cpu %w", err)
	}
	for _, c := range []struct {
		what string
		t    *tensor.Tensor
	}{{"q", q}, {"k", k}, {"v", v}, {"dst", dst}} {
		if err := checkF32("attention", c.what, c.t); err != nil {
			return err
		}
	}
	for _, in := range []*tensor.Tensor{q, k, v} {
		if overlaps(dst.Data, in.Data) {
			return fmt.Errorf("cpu attention: dst %s overlaps an input", dst)
		}
	}
	nq, hq, d := shape.Rows, shape.Heads, shape.HeadDim
	if nq == 0 || hq == 0 || d == 0 {
		return nil
	}
	// The key positions go in a pooled buffer: a decode step calls
	// Attention once per layer, and at 8192 keys a fresh slice was 64 KB.
	kp := b.keyPos.get(0)
	*kp = mask.AppendKeyPositions(*kp)
	defer b.keyPos.put(kp)
	c := attnCall{
		out: dst.F32(), qs: q.F32(), ks: k.F32(), vs: v.F32(),
		keyPos: *kp, mask: mask, shape: shape, scale: scale,
		kern: b.attnKernels(),
	}
	var blind atomic.Int64 // first row that saw no key, plus one
	c.blind = &blind
	b.attention(&c)
	if r := blind.Load(); r != 0 {
		return fmt.Errorf("cpu attention: query row %d (position %d) sees no key", r-1, mask.QueryStart+int(r-1))
	}
	return nil
}

// attnBlock is how many keys Attention scores before updating its running
// softmax state.
const attnBlock = 64

// attnQueries is how many query vectors of one KV head (rows × grouped
// heads) a job carries: each key and value row is read once per job
// instead of once per query vector, while their accumulators and scores
// stay in L1 and L2.
const attnQueries = 16

// attnSplitKeys is the fewest keys a job takes when Attention splits one
// row's keys between jobs (decode: one row, too few jobs for the threads
// otherwise).
const attnSplitKeys = 256

// attnTile is up to four query vectors of one KV head that are scored
// against a block of keys together and whose accumulators then take the
// block's value rows together, so the kernels read each key and value row
// once per tile.
type attnTile struct {
	n   int          // vectors in use (the rest are stale)
	q   [4][]float32 // query vectors, already scaled (d floats)
	s   [4][]float32 // the block's scores, then their weights (attnBlock floats)
	acc [4][]float32 // running Σ weight·value row (d floats)
}

// attnKernels are Attention's inner loops at one kernel level. Keys and
// values are rows stride floats apart (the cache's KV heads interleave).
type attnKernels struct {
	scores func(t *attnTile, k []float32, stride, bn int) // s_v[j] = q_v·k_j for j < bn
	pv     func(t *attnTile, v []float32, stride, bn int) // acc_v += Σ_{j<bn} s_v[j]·v_j
	exps   func(dst, src []float32, m float32)            // dst[i] = e^(src[i]-m)
}

// attnKernels returns the backend's attention kernels.
func (b *Backend) attnKernels() attnKernels {
	switch {
	case b.avx512:
		return attnKernels{scores: scores512, pv: pv512, exps: expSubSIMD}
	case b.simd:
		return simdAttnKernels()
	}
	return dotAttnKernels(dot2F32, pvF32, expSubF32)
}

// dotAttnKernels are attention kernels built from a two-vector dot
// product and a one-vector pv.
func dotAttnKernels(dot2 func(q0, q1, k []float32) (float32, float32), pv func(dst, p, v []float32, stride int),
	exps func(dst, src []float32, m float32)) attnKernels {
	return attnKernels{
		scores: func(t *attnTile, k []float32, stride, bn int) { scoresDot2(dot2, t, k, stride, bn, 0) },
		pv:     func(t *attnTile, v []float32, stride, bn int) { pvEach(pv, t, v, stride, bn) },
		exps:   exps,
	}
}

// scoresDot2 writes the scores of keys from..bn-1 for the tile's vectors,
// two vectors per pass over the keys.
func scoresDot2(dot2 func(q0, q1, k []float32) (float32, float32), t *attnTile, k []float32, stride, bn, from int) {
	d := len(t.q[0])
	for v := 0; v < t.n; v += 2 {
		w := min(v+1, t.n-1) // an odd last vector pairs with itself
		q0, q1, s0, s1 := t.q[v], t.q[w], t.s[v], t.s[w]
		for j := from; j < bn; j++ {
			s0[j], s1[j] = dot2(q0, q1, k[j*stride:j*stride+d])
		}
	}
}

// pvEach adds the block's value rows to each of the tile's accumulators
// with pv, one vector at a time.
func pvEach(pv func(dst, p, v []float32, stride int), t *attnTile, v []float32, stride, bn int) {
	for i := 0; i < t.n; i++ {
		pv(t.acc[i], t.s[i][:bn], v, stride)
	}
}

// attnCall is one Attention call: its operands, the kernels, and how it
// is cut into jobs. A job is a block of rowsPer query rows, all heads, and
// one of ranges contiguous ranges of keys; with more than one range each
// job leaves its partial softmax state in parts and attention merges them.
type attnCall struct {
	out, qs, ks, vs []float32
	keyPos          []int
	mask            tensor.Mask
	shape           tensor.AttentionShape
	scale           float32
	kern            attnKernels
	blind           *atomic.Int64 // first row that saw no key, plus one

	rowsPer, ranges, rangeLen int
	parts                     []float32 // per (range, row, head): m, l, acc (d+2 floats)
}

// Visibility of a block of keys from one query row.
const (
	visNone = iota
	visAll
	visSome
)

// attention runs c: it sizes the jobs, runs them on the pool and merges
// split rows.
func (b *Backend) attention(c *attnCall) {
	nq, hq, d, nk, hkv := c.shape.Rows, c.shape.Heads, c.shape.HeadDim, c.shape.Keys, c.shape.KVHeads
	c.rowsPer = max(1, attnQueries/(hq/hkv))
	rowBlocks := (nq + c.rowsPer - 1) / c.rowsPer
	c.ranges = 1
	if rowBlocks < b.threads {
		c.ranges = max(1, min((b.threads+rowBlocks-1)/rowBlocks, nk/attnSplitKeys))
	}
	c.rangeLen = ((nk+c.ranges-1)/c.ranges + attnBlock - 1) / attnBlock * attnBlock
	c.ranges = (nk + c.rangeLen - 1) / c.rangeLen
	var parts *[]float32
	if c.ranges > 1 {
		parts = b.getBuf(c.ranges * nq * hq * (d + 2))
		c.parts = *parts
	}
	nv := c.rowsPer * hq
	// More parts than threads: later rows of a causal chunk see more keys,
	// and free threads claim the remaining ones.
	b.pool.splitParts(rowBlocks*c.ranges, 1, 4*(b.pool.helpers+1), func(lo, hi int) {
		buf := b.getBuf(2*nv*d + nv*attnBlock + 2*nv)
		defer b.putBuf(buf)
		vis := make([]int8, c.rowsPer)
		for job := lo; job < hi; job++ {
			c.run(job, *buf, vis)
		}
	})
	if c.ranges > 1 {
		c.merge()
		b.putBuf(parts)
	}
}

// run computes job: the online softmax over its keys in blocks of
// attnBlock, for every query vector of its rows (scratch holds their
// scaled copies, accumulators, scores, running maxima and sums).
func (c *attnCall) run(job int, scratch []float32, vis []int8) {
	nq, hq, d, nk, hkv := c.shape.Rows, c.shape.Heads, c.shape.HeadDim, c.shape.Keys, c.shape.KVHeads
	group := hq / hkv
	r0, rg := job/c.ranges*c.rowsPer, job%c.ranges
	rows := min(c.rowsPer, nq-r0)
	k0, k1 := rg*c.rangeLen, min(nk, (rg+1)*c.rangeLen)
	nvh := rows * group // vectors per KV head
	nv := nvh * hkv
	qv, acc := scratch[:nv*d], scratch[nv*d:2*nv*d]
	sc := scratch[2*nv*d : 2*nv*d+nv*attnBlock]
	ms, ls := scratch[2*nv*d+nv*attnBlock:][:nv], scratch[2*nv*d+nv*attnBlock+nv:][:nv]
	// Slot kh·nvh + i holds row r0 + i/group, head kh·group + i%group.
	head := func(slot int) (row, h int) {
		kh, i := slot/nvh, slot%nvh
		return r0 + i/group, kh*group + i%group
	}
	for slot := range nv {
		row, h := head(slot)
		src := c.qs[(row*hq+h)*d:][:d]
		dst := qv[slot*d:][:d]
		for i, x := range src {
			dst[i] = c.scale * x
		}
		ms[slot], ls[slot] = float32(math.Inf(-1)), 0
	}
	clear(acc)
	stride := hkv * d
	var t attnTile
	for j0 := k0; j0 < k1; j0 += attnBlock {
		bn := min(attnBlock, k1-j0)
		kpos := c.keyPos[j0 : j0+bn]
		if !c.visibility(vis[:rows], kpos, r0) {
			continue
		}
		for kh := range hkv {
			kb, vb := c.ks[(j0*hkv+kh)*d:], c.vs[(j0*hkv+kh)*d:]
			for s0 := kh * nvh; s0 < (kh+1)*nvh; s0 += 4 {
				t.n = min(4, (kh+1)*nvh-s0)
				for i := range t.n {
					slot := s0 + i
					t.q[i], t.acc[i] = qv[slot*d:][:d], acc[slot*d:][:d]
					t.s[i] = sc[slot*attnBlock:][:attnBlock]
				}
				c.kern.scores(&t, kb, stride, bn)
				for i := range t.n {
					slot := s0 + i
					r := (slot % nvh) / group
					c.weigh(t.s[i][:bn], vis[r], kpos, c.mask.QueryStart+r0+r, &ms[slot], &ls[slot], t.acc[i])
				}
				c.kern.pv(&t, vb, stride, bn)
			}
		}
	}
	for slot := range nv {
		row, h := head(slot)
		a := acc[slot*d:][:d]
		if c.ranges > 1 {
			p := c.parts[((rg*nq+row)*hq+h)*(d+2):][:d+2]
			p[0], p[1] = ms[slot], ls[slot]
			copy(p[2:], a)
			continue
		}
		o := c.out[(row*hq+h)*d:][:d]
		if ls[slot] == 0 {
			c.blind.CompareAndSwap(0, int64(row)+1)
			clear(o)
			continue
		}
		inv := 1 / ls[slot]
		for x := range o {
			o[x] = a[x] * inv
		}
	}
}

// visibility sets vis[r] to whether query row r0+r sees all, none or
// some of the keys at positions kpos, and reports whether any row sees
// one.
func (c *attnCall) visibility(vis []int8, kpos []int, r0 int) bool {
	kmin, kmax := kpos[0], kpos[0]
	for _, kp := range kpos[1:] {
		kmin, kmax = min(kmin, kp), max(kmax, kp)
	}
	window, any := c.mask.Window, false
	for r := range vis {
		q := c.mask.QueryStart + r0 + r
		switch {
		case kmax <= q && (window == 0 || q-kmin < window):
			vis[r] = visAll
		case kmin > q || (window > 0 && q-kmax >= window):
			vis[r] = visNone
		default:
			vis[r] = visSome
		}
		any = any || vis[r] != visNone
	}
	return any
}

// weigh turns one query vector's scores s of a block of keys (positions
// kpos, seen as vis says from query position qpos) into its softmax
// weights against the running maximum m and sum l, rescaling the
// accumulator acc when the maximum grows. Masked keys weigh 0.
func (c *attnCall) weigh(s []float32, vis int8, kpos []int, qpos int, m, l *float32, acc []float32) {
	negInf := float32(math.Inf(-1))
	masked := func(kp int) bool { return !c.mask.Allowed(qpos, kp) }
	switch vis {
	case visNone:
		clear(s)
		return
	case visSome:
		for jj, kp := range kpos {
			if masked(kp) {
				s[jj] = negInf
			}
		}
	}
	bm := maxF32(s)
	if bm == negInf {
		clear(s)
		return
	}
	if bm > *m {
		if *l != 0 {
			f := expf(*m - bm)
			*l *= f
			for x := range acc {
				acc[x] *= f
			}
		}
		*m = bm
	}
	c.kern.exps(s, s, *m)
	if vis == visSome {
		for jj, kp := range kpos {
			if masked(kp) {
				s[jj] = 0
			}
		}
	}
	var sum float32
	for _, p := range s {
		sum += p
	}
	*l += sum
}

// merge combines the ranges' partial states of every (row, head) into
// the output: each range's sum and accumulator are rescaled to the
// largest of their maxima.
func (c *attnCall) merge() {
	nq, hq, d := c.shape.Rows, c.shape.Heads, c.shape.HeadDim
	for row := range nq {
		for h := range hq {
			part := func(rg int) []float32 { return c.parts[((rg*nq+row)*hq+h)*(d+2):][:d+2] }
			m := float32(math.Inf(-1))
			for rg := range c.ranges {
				if p := part(rg); p[1] != 0 {
					m = max(m, p[0])
				}
			}
			o := c.out[(row*hq+h)*d:][:d]
			clear(o)
			if math.IsInf(float64(m), -1) {
				c.blind.CompareAndSwap(0, int64(row)+1)
				continue
			}
			var l float32
			for rg := range c.ranges {
				p := part(rg)
				if p[1] == 0 {
					continue
				}
				f := expf(p[0] - m)
				l += f * p[1]
				for x, a := range p[2:] {
					o[x] += f * a
				}
			}
			inv := 1 / l
			for x := range o {
				o[x] *= inv
			}
		}
	}
}

// pvF32 computes dst += Σ_j p[j]·v[j*stride:][:len(dst)] with one axpyF32
// per nonzero p[j], in order (the portable form of pvSIMD).
func pvF32(dst, p, v []float32, stride int) {
	for j, pj := range p {
		if pj != 0 {
			axpyF32(dst, v[j*stride:j*stride+len(dst)], pj)
		}
	}
}

// dot2F32 returns dotF32(q0, k) and dotF32(q1, k) (the portable form of
// dot2SIMD).
func dot2F32(q0, q1, k []float32) (float32, float32) {
	return dotF32(q0, k), dotF32(q1, k)
}

// expSubF32 writes dst[i] = expf(src[i]-m) (the portable form of
// expSubSIMD).
func expSubF32(dst, src []float32, m float32) {
	src = src[:len(dst)]
	for i, x := range src {
		dst[i] = expf(x - m)
	}
}
