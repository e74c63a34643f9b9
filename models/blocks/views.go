package blocks

import (
	"fmt"

	"mlxchat/tensor"
)

// Reshape returns a view of t with another shape of the same element
// count (sharing Data and Handle). It panics on a count mismatch, which is a
// programming error in model code, never input-dependent.
func Reshape(t *tensor.Tensor, shape ...int) *tensor.Tensor {
	if tensor.NumElements(shape) != t.Len() {
		panic(fmt.Sprintf("blocks: reshape %s to %v", t, shape))
	}
	return &tensor.Tensor{DType: t.DType, Shape: append([]int(nil), shape...), Data: t.Data, Handle: t.Handle}
}

// Rows returns rows [r0, r0+n) of t seen as a matrix over its last axis,
// as an [n, last] view sharing t's memory.
func Rows(t *tensor.Tensor, r0, n int) *tensor.Tensor {
	w := t.Dim(-1)
	es := t.DType.Size()
	if r0 < 0 || n < 0 || r0+n > t.Rows() {
		panic(fmt.Sprintf("blocks: rows [%d, %d) of %s", r0, r0+n, t))
	}
	return &tensor.Tensor{DType: t.DType, Shape: []int{n, w}, Data: t.Data[r0*w*es : (r0+n)*w*es], Handle: t.Handle}
}

// Stream returns stream s of a [S, n, N] tensor as an [n, N] view.
func Stream(t *tensor.Tensor, s int) *tensor.Tensor {
	n := t.Shape[1]
	return Rows(t, s*n, n)
}

// Arena hands out scratch activation tensors and takes them all back at
// Reset, so a forward pass reuses the same buffers layer after layer and
// token after token instead of allocating. Buffers are matched by element
// count and are not zeroed: every op overwrites its whole destination. An
// Arena is not safe for concurrent use.
type Arena struct {
	be   tensor.Backend
	free map[int][]*tensor.Tensor
	used []*tensor.Tensor
}

// NewArena returns an empty arena allocating from be.
func NewArena(be tensor.Backend) *Arena {
	return &Arena{be: be, free: map[int][]*tensor.Tensor{}}
}

// Get returns an F32 tensor of the given shape, valid until Reset.
func (a *Arena) Get(shape ...int) *tensor.Tensor {
	n := tensor.NumElements(shape)
	if l := a.free[n]; len(l) > 0 {
		t := l[len(l)-1]
		a.free[n] = l[:len(l)-1]
		a.used = append(a.used, t)
		return Reshape(t, shape...)
	}
	t := a.be.Alloc(shape...)
	a.used = append(a.used, t)
	return Reshape(t, shape...)
}

// Reset makes every tensor handed out since the last Reset available again,
// in an order that hands them out again in the same order: a pass that
// asks for the same shapes gets the same tensors each time (a GPU
// backend then sees every decode step on the same memory).
func (a *Arena) Reset() {
	for i := len(a.used) - 1; i >= 0; i-- {
		t := a.used[i]
		a.free[t.Len()] = append(a.free[t.Len()], t)
	}
	a.used = a.used[:0]
}

// Release drops every buffer, handed out or free, so they can be collected.
func (a *Arena) Release() {
	a.free = map[int][]*tensor.Tensor{}
	a.used = nil
}
