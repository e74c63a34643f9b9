package cpu

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"mlxchat/tensor"
)

// Attention computes softmax(scale·q·kᵀ + mask)·v per head with grouped-
// query sharing. q and dst are [nq, hq, d]; k and v are [nk, hkv, d] with
// hq a multiple of hkv; dst must not overlap them. The mask gives absolute query and key positions;
// a masked key contributes nothing. Work is spread over (row, head) pairs;
// each pair makes one pass over its keys with an online softmax.
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
	keyPos := mask.KeyPositions()
	qs, ks, vs, out := q.F32(), k.F32(), v.F32(), dst.F32()
	dot, axpy, exps := dotF32, axpyF32, expSubF32
	if b.simd {
		dot, axpy, exps = dotSIMD, axpySIMD, expSubSIMD
	}
	var blind atomic.Int64 // first row that saw no key, plus one
	if nq >= attnBlockMinRows || b.blockedJobs(shape) >= b.threads {
		b.attentionBlocked(out, qs, ks, vs, keyPos, mask, shape, scale, dot, axpy, exps, &blind)
	} else {
		b.attentionRows(out, qs, ks, vs, keyPos, mask, shape, scale, dot, axpy, exps, &blind)
	}
	if r := blind.Load(); r != 0 {
		return fmt.Errorf("cpu attention: query row %d (position %d) sees no key", r-1, mask.QueryStart+int(r-1))
	}
	return nil
}

// attentionRows is the decode form of Attention: one job per (query row,
// head), each one pass over its keys with an online softmax.
func (b *Backend) attentionRows(out, qs, ks, vs []float32, keyPos []int, mask tensor.Mask, shape tensor.AttentionShape, scale float32,
	dot func(a, b []float32) float32, axpy func(dst, src []float32, a float32), exps func(dst, src []float32, m float32), blind *atomic.Int64) {
	nq, hq, d, nk, hkv := shape.Rows, shape.Heads, shape.HeadDim, shape.Keys, shape.KVHeads
	group := hq / hkv
	b.pool.split(nq*hq, 1, func(lo, hi int) {
		scores := make([]float32, attnBlock)
		ps := make([]float32, attnBlock)
		acc := make([]float32, d)
		for job := lo; job < hi; job++ {
			row, h := job/hq, job%hq
			kh := h / group
			qpos := mask.QueryStart + row
			qv := qs[(row*hq+h)*d : (row*hq+h+1)*d]
			o := out[(row*hq+h)*d : (row*hq+h+1)*d]
			// Online softmax over blocks of keys: m is the running max,
			// l the running sum of e^(s-m), acc the running Σ e^(s-m)·v.
			m, l := float32(math.Inf(-1)), float32(0)
			clear(acc)
			for j0 := 0; j0 < nk; j0 += attnBlock {
				blk := scores[:min(attnBlock, nk-j0)]
				bm := float32(math.Inf(-1))
				for jj := range blk {
					kp := keyPos[j0+jj]
					if kp > qpos || (mask.Window > 0 && qpos-kp >= mask.Window) {
						blk[jj] = float32(math.Inf(-1))
						continue
					}
					j := j0 + jj
					sc := scale * dot(qv, ks[(j*hkv+kh)*d:(j*hkv+kh+1)*d])
					blk[jj] = sc
					bm = max(bm, sc)
				}
				if math.IsInf(float64(bm), -1) {
					continue
				}
				if bm > m {
					if l != 0 {
						f := expf(m - bm)
						l *= f
						for i := range acc {
							acc[i] *= f
						}
					}
					m = bm
				}
				exps(ps[:len(blk)], scores, m)
				for jj, sc := range blk {
					if math.IsInf(float64(sc), -1) {
						continue
					}
					p := ps[jj]
					l += p
					j := j0 + jj
					axpy(acc, vs[(j*hkv+kh)*d:(j*hkv+kh+1)*d], p)
				}
			}
			if l == 0 {
				blind.CompareAndSwap(0, int64(row)+1)
				clear(o)
				continue
			}
			inv := 1 / l
			for i := range o {
				o[i] = acc[i] * inv
			}
		}
	})
}

// attnPrefetch is how many keys ahead the blocked form prefetches key rows.
const attnPrefetch = 8

// attnBlock is how many keys Attention scores before updating its running
// softmax state.
const attnBlock = 64

// attnBlockMinRows is the chunk length from which Attention always shares
// each key and value row between several query vectors (prefill). Shorter
// chunks (decode) do too when that still gives every thread a job (a KV
// head per thread: Gemma 3n's 2 KV heads on 2 threads), else they keep one
// job per (row, head) so every core has work.
const attnBlockMinRows = 4

// blockedJobs is the number of jobs attentionBlocked splits shape into.
func (b *Backend) blockedJobs(shape tensor.AttentionShape) int {
	rowsPer := max(1, attnQueries/(shape.Heads/shape.KVHeads))
	return (shape.Rows + rowsPer - 1) / rowsPer * shape.KVHeads
}

// attnQueries is how many query vectors (rows × heads of one KV group) a
// blocked attention job carries: their accumulators (attnQueries × d
// floats) and scores stay in L1 while each key and value row is read once
// per job instead of once per query vector.
const attnQueries = 16

// attentionBlocked is the prefill form of Attention. A job is a block of
// query rows and one KV head; it walks the keys in blocks of attnBlock,
// scores every key against all the job's query vectors (the grouped heads
// of each row) while that key row is in L1, then adds each value row to
// all their accumulators. Every query vector sees exactly the arithmetic
// of the one-job-per-(row, head) form, in the same order (same dot and
// axpy kernels, same blocks, same running max and sum), so the results are
// bit-identical to it; only the memory traffic changes.
func (b *Backend) attentionBlocked(out, qs, ks, vs []float32, keyPos []int, mask tensor.Mask, shape tensor.AttentionShape, scale float32,
	dot func(a, b []float32) float32, axpy func(dst, src []float32, a float32), exps func(dst, src []float32, m float32), blind *atomic.Int64) {
	nq, hq, d, nk, hkv := shape.Rows, shape.Heads, shape.HeadDim, shape.Keys, shape.KVHeads
	group := hq / hkv
	pv, dot2 := pvF32, dot2F32
	if b.simd {
		pv, dot2 = pvSIMD, dot2SIMD
	}
	rowsPer := max(1, attnQueries/group)
	jobs := b.blockedJobs(shape)
	negInf := float32(math.Inf(-1))
	rowLines := (4*d + 63) / 64
	// More ranges than threads: later rows of a causal chunk see more keys,
	// and free threads claim the remaining ranges.
	b.pool.splitParts(jobs, 1, 4*(b.pool.helpers+1), func(lo, hi int) {
		nv := rowsPer * group
		scores := make([]float32, nv*attnBlock)
		acc := make([]float32, nv*d)
		ms := make([]float32, nv)
		ls := make([]float32, nv)
		bms := make([]float32, nv)
		qofs := make([]int, nv)
		ex := make([]float32, attnBlock)
		for job := lo; job < hi; job++ {
			r0, kh := (job/hkv)*rowsPer, job%hkv
			rows := min(rowsPer, nq-r0)
			nv := rows * group
			// Query vector i is row r0+i/group, head kh*group+i%group.
			for i := 0; i < nv; i++ {
				ms[i], ls[i] = negInf, 0
				qofs[i] = ((r0+i/group)*hq + kh*group + i%group) * d
			}
			clear(acc[:nv*d])
			for j0 := 0; j0 < nk; j0 += attnBlock {
				bn := min(attnBlock, nk-j0)
				for i := 0; i < nv; i++ {
					bms[i] = negInf
				}
				for jj := 0; jj < bn; jj++ {
					j := j0 + jj
					kp := keyPos[j]
					krow := ks[(j*hkv+kh)*d : (j*hkv+kh+1)*d]
					// A job reads one KV head's rows, every hkv-th of
					// the cache, too short a run each for the hardware
					// prefetchers: fetch the key row attnPrefetch ahead,
					// and this key's value row for the block's pv pass.
					if pf := j + attnPrefetch; pf < nk {
						prefetchLines((*byte)(unsafe.Pointer(&ks[(pf*hkv+kh)*d])), rowLines)
					}
					prefetchLines((*byte)(unsafe.Pointer(&vs[(j*hkv+kh)*d])), rowLines)
					for r := 0; r < rows; r++ {
						qpos := mask.QueryStart + r0 + r
						masked := kp > qpos || (mask.Window > 0 && qpos-kp >= mask.Window)
						if masked {
							for i := r * group; i < (r+1)*group; i++ {
								scores[i*attnBlock+jj] = negInf
							}
							continue
						}
						g := 0
						for ; g+2 <= group; g += 2 {
							i := r*group + g
							o0, o1 := qofs[i], qofs[i+1]
							d0, d1 := dot2(qs[o0:o0+d], qs[o1:o1+d], krow)
							s0, s1 := scale*d0, scale*d1
							scores[i*attnBlock+jj], scores[(i+1)*attnBlock+jj] = s0, s1
							bms[i], bms[i+1] = max(bms[i], s0), max(bms[i+1], s1)
						}
						for ; g < group; g++ {
							i := r*group + g
							o := qofs[i]
							sc := scale * dot(qs[o:o+d], krow)
							scores[i*attnBlock+jj] = sc
							bms[i] = max(bms[i], sc)
						}
					}
				}
				any := false
				for i := 0; i < nv; i++ {
					bm := bms[i]
					if math.IsInf(float64(bm), -1) {
						continue
					}
					any = true
					if bm > ms[i] {
						if ls[i] != 0 {
							f := expf(ms[i] - bm)
							ls[i] *= f
							a := acc[i*d : (i+1)*d]
							for x := range a {
								a[x] *= f
							}
						}
						ms[i] = bm
					}
				}
				if !any {
					continue
				}
				// Each query vector's weights for the block (zero where
				// masked) go to its accumulator in one pass over the value
				// rows, key by key as in the per-row form.
				vblk := vs[(j0*hkv+kh)*d:]
				for i := 0; i < nv; i++ {
					if math.IsInf(float64(bms[i]), -1) {
						continue
					}
					ps := scores[i*attnBlock : i*attnBlock+bn]
					exps(ex[:bn], scores[i*attnBlock:(i+1)*attnBlock], ms[i])
					for jj, sc := range ps {
						if math.IsInf(float64(sc), -1) {
							ps[jj] = 0
							continue
						}
						p := ex[jj]
						ls[i] += p
						ps[jj] = p
					}
					pv(acc[i*d:(i+1)*d], ps, vblk, hkv*d)
				}
			}
			for i := 0; i < nv; i++ {
				o := out[qofs[i] : qofs[i]+d]
				if ls[i] == 0 {
					blind.CompareAndSwap(0, int64(r0+i/group)+1)
					clear(o)
					continue
				}
				inv := 1 / ls[i]
				a := acc[i*d : (i+1)*d]
				for x := range o {
					o[x] = a[x] * inv
				}
			}
		}
	})
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
