package cpu

import (
	"fmt"
	"math"
	"sync/atomic"

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
	nq, hq, d, nk, hkv := shape.Rows, shape.Heads, shape.HeadDim, shape.Keys, shape.KVHeads
	if nq == 0 || hq == 0 || d == 0 {
		return nil
	}
	keyPos := mask.KeyPositions()
	group := hq / hkv
	qs, ks, vs, out := q.F32(), k.F32(), v.F32(), dst.F32()
	dot, axpy := dotF32, axpyF32
	if b.simd {
		dot, axpy = dotSIMD, axpySIMD
	}
	var blind atomic.Int64 // first row that saw no key, plus one
	b.pool.split(nq*hq, 1, func(lo, hi int) {
		scores := make([]float32, attnBlock)
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
				for jj, sc := range blk {
					if math.IsInf(float64(sc), -1) {
						continue
					}
					p := expf(sc - m)
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
	if r := blind.Load(); r != 0 {
		return fmt.Errorf("cpu attention: query row %d (position %d) sees no key", r-1, mask.QueryStart+int(r-1))
	}
	return nil
}

// attnBlock is how many keys Attention scores before updating its running
// softmax state.
const attnBlock = 64
