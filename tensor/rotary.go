package tensor

import (
	"fmt"
	"math"
)

// Rotary is one rotary position embedding (RoPE) layout: which values of
// each head rotate, by how much per position, and how they pair up. A
// model builds one Rotary per kind of layer at load time (the table never
// changes afterwards, so GPU backends upload it once) and passes it to
// Backend.RoPE for every chunk.
//
// Pair i of a head turns by the angle position·InvFreq[i]. With the
// half-split convention (rotate_half: Llama, Gemma, Qwen, OLMo) pair i is
// the values (i, i+Dims/2); Interleaved pairs the neighbours (2i, 2i+1)
// (GPT-J style: Cohere). Values beyond Dims pass through unchanged.
type Rotary struct {
	// Dims is how many values at the front of each head rotate (even).
	Dims int
	// InvFreq is F32 [Dims/2]: the inverse frequency of each pair.
	InvFreq *Tensor
	// Interleaved selects (2i, 2i+1) pairs instead of (i, i+Dims/2).
	Interleaved bool
}

// NewRotary returns a Rotary over dims values with the given inverse
// frequencies (len(invFreq) == dims/2), or an error naming what is wrong.
func NewRotary(dims int, invFreq []float32, interleaved bool) (*Rotary, error) {
	if dims <= 0 || dims%2 != 0 {
		return nil, fmt.Errorf("rope: dims %d must be even and positive", dims)
	}
	if len(invFreq) != dims/2 {
		return nil, fmt.Errorf("rope: %d inverse frequencies for %d dims, want %d", len(invFreq), dims, dims/2)
	}
	for i, f := range invFreq {
		if !(f >= 0) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("rope: inverse frequency %d is %g, want a finite value >= 0", i, f)
		}
	}
	t, err := FromF32(invFreq, dims/2)
	if err != nil {
		return nil, err
	}
	return &Rotary{Dims: dims, InvFreq: t, Interleaved: interleaved}, nil
}

// DefaultInvFreq is the unscaled RoPE table base^(-2i/dims) for
// i = 0 .. dims/2-1, computed in float64 and rounded once to float32.
func DefaultInvFreq(dims int, base float64) []float32 {
	inv := make([]float32, dims/2)
	lb := math.Log2(base)
	for i := range inv {
		inv[i] = float32(math.Exp2(-float64(2*i) / float64(dims) * lb))
	}
	return inv
}

// DefaultRotary is NewRotary with DefaultInvFreq(dims, base), half-split.
func DefaultRotary(dims int, base float64) (*Rotary, error) {
	if !(base > 0) || math.IsInf(base, 0) {
		return nil, fmt.Errorf("rope: base %g must be positive and finite", base)
	}
	if dims <= 0 || dims%2 != 0 {
		return nil, fmt.Errorf("rope: dims %d must be even and positive", dims)
	}
	return NewRotary(dims, DefaultInvFreq(dims, base), false)
}

// CheckRoPE validates the arguments of Backend.RoPE the same way for every
// backend: x is [n, heads, headDim] F32, r a well-formed table with
// r.Dims <= headDim, and pos0 >= 0. It returns x's shape.
func CheckRoPE(x *Tensor, pos0 int, r *Rotary) (n, heads, headDim int, err error) {
	if x == nil {
		return 0, 0, 0, fmt.Errorf("rope: x is nil")
	}
	if len(x.Shape) != 3 {
		return 0, 0, 0, fmt.Errorf("rope: x %s, want [n, heads, headDim]", x)
	}
	n, heads, headDim = x.Shape[0], x.Shape[1], x.Shape[2]
	if r == nil {
		return 0, 0, 0, fmt.Errorf("rope: no table")
	}
	if r.Dims <= 0 || r.Dims%2 != 0 || r.Dims > headDim {
		return 0, 0, 0, fmt.Errorf("rope: dims %d must be even and in (0, %d]", r.Dims, headDim)
	}
	if err := CheckShape("rope inverse frequencies", r.InvFreq, F32, r.Dims/2); err != nil {
		return 0, 0, 0, err
	}
	if pos0 < 0 {
		return 0, 0, 0, fmt.Errorf("rope: negative position %d", pos0)
	}
	return n, heads, headDim, nil
}
