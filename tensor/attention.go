package tensor

import "fmt"

// AttentionShape is the geometry of one Attention call: Rows query rows of
// Heads heads, Keys key rows of KVHeads heads, HeadDim values per head.
type AttentionShape struct {
	Rows, Heads, Keys, KVHeads, HeadDim int
}

// CheckAttention validates the arguments of Backend.Attention against each
// other and against the mask, so every backend refuses the same mistakes
// with the same message: q and dst [nq, hq, d], k and v [nk, hkv, d], hq a
// multiple of hkv, mask.Rows == nq, mask.KeyLen() == nk (the cache hands
// out keys and mask together, so this can only fail on a programming
// error), and a well-formed mask. Dtypes and storage are the backend's to
// check.
func CheckAttention(dst, q, k, v *Tensor, mask Mask) (AttentionShape, error) {
	for _, c := range []struct {
		what string
		t    *Tensor
	}{{"q", q}, {"k", k}, {"v", v}, {"dst", dst}} {
		if c.t == nil {
			return AttentionShape{}, fmt.Errorf("attention: %s is nil", c.what)
		}
		if len(c.t.Shape) != 3 {
			return AttentionShape{}, fmt.Errorf("attention: %s is %s, want 3 axes", c.what, c.t)
		}
	}
	s := AttentionShape{Rows: q.Shape[0], Heads: q.Shape[1], HeadDim: q.Shape[2], Keys: k.Shape[0], KVHeads: k.Shape[1]}
	if k.Shape[2] != s.HeadDim || v.Shape[0] != s.Keys || v.Shape[1] != s.KVHeads || v.Shape[2] != s.HeadDim {
		return s, fmt.Errorf("attention: k %s and v %s disagree with q %s", k, v, q)
	}
	if s.KVHeads == 0 || s.Heads%s.KVHeads != 0 {
		return s, fmt.Errorf("attention: %d query heads not a multiple of %d kv heads", s.Heads, s.KVHeads)
	}
	if dst.Shape[0] != s.Rows || dst.Shape[1] != s.Heads || dst.Shape[2] != s.HeadDim {
		return s, fmt.Errorf("attention: dst %s, want [%d %d %d]", dst, s.Rows, s.Heads, s.HeadDim)
	}
	if mask.Rows != s.Rows {
		return s, fmt.Errorf("attention: mask has %d rows, q has %d", mask.Rows, s.Rows)
	}
	if kl := mask.KeyLen(); kl != s.Keys {
		return s, fmt.Errorf("attention: mask covers %d keys, k has %d", kl, s.Keys)
	}
	if err := mask.Validate(); err != nil {
		return s, fmt.Errorf("attention: %w", err)
	}
	return s, nil
}
