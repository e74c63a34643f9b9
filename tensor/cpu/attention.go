package cpu

import (
	"fmt"
	"math"
	"sync/atomic"

	"mlxchat/tensor"
)

// Attention computes softmax(scale·q·kᵀ + mask)·v per head with grouped-
// query sharing. q and dst are [nq, hq, d]; k and v are [nk, hkv, d] with
// hq a multiple of hkv. The mask gives absolute query and key positions;
// a masked key contributes nothing. Work is spread over (row, head) pairs.
func (b *Backend) Attention(dst, q, k, v *tensor.Tensor, mask tensor.Mask, scale float32) error {
	for _, c := range []struct {
		what string
		t    *tensor.Tensor
	}{{"q", q}, {"k", k}, {"v", v}, {"dst", dst}} {
		if err := checkF32("attention", c.what, c.t); err != nil {
			return err
		}
		if len(c.t.Shape) != 3 {
			return fmt.Errorf("cpu attention: %s is %s, want 3 axes", c.what, c.t)
		}
	}
	nq, hq, d := q.Shape[0], q.Shape[1], q.Shape[2]
	nk, hkv := k.Shape[0], k.Shape[1]
	if k.Shape[2] != d || v.Shape[0] != nk || v.Shape[1] != hkv || v.Shape[2] != d {
		return fmt.Errorf("cpu attention: k %s and v %s disagree with q %s", k, v, q)
	}
	if hkv == 0 || hq%hkv != 0 {
		return fmt.Errorf("cpu attention: %d query heads not a multiple of %d kv heads", hq, hkv)
	}
	if dst.Shape[0] != nq || dst.Shape[1] != hq || dst.Shape[2] != d {
		return fmt.Errorf("cpu attention: dst %s, want [%d %d %d]", dst, nq, hq, d)
	}
	if mask.Rows != nq {
		return fmt.Errorf("cpu attention: mask has %d rows, q has %d", mask.Rows, nq)
	}
	if kl := mask.KeyLen(); kl != nk {
		return fmt.Errorf("cpu attention: mask covers %d keys, k has %d", kl, nk)
	}
	if err := mask.Validate(); err != nil {
		return fmt.Errorf("cpu attention: %w", err)
	}
	if nq == 0 || hq == 0 || d == 0 {
		return nil
	}
	keyPos := mask.KeyPositions()
	group := hq / hkv
	qs, ks, vs, out := q.F32(), k.F32(), v.F32(), dst.F32()
	var blind atomic.Int64 // first row that saw no key, plus one
	b.pool.split(nq*hq, 1, func(lo, hi int) {
		scores := make([]float32, nk)
		acc := make([]float32, d)
		for job := lo; job < hi; job++ {
			row, h := job/hq, job%hq
			kh := h / group
			qpos := mask.QueryStart + row
			qv := qs[(row*hq+h)*d : (row*hq+h+1)*d]
			m := float32(math.Inf(-1))
			for j, kp := range keyPos {
				if !mask.Allowed(qpos, kp) {
					scores[j] = float32(math.Inf(-1))
					continue
				}
				s := scale * dotF32(qv, ks[(j*hkv+kh)*d:(j*hkv+kh+1)*d])
				scores[j] = s
				m = max(m, s)
			}
			o := out[(row*hq+h)*d : (row*hq+h+1)*d]
			if math.IsInf(float64(m), -1) {
				blind.CompareAndSwap(0, int64(row)+1)
				clear(o)
				continue
			}
			clear(acc)
			var sum float32
			for j, s := range scores {
				if math.IsInf(float64(s), -1) {
					continue
				}
				p := float32(math.Exp(float64(s - m)))
				sum += p
				vv := vs[(j*hkv+kh)*d : (j*hkv+kh+1)*d]
				for i := range acc {
					acc[i] += p * vv[i]
				}
			}
			inv := 1 / sum
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
