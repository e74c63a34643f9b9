package gpu

import (
	"fmt"
	"unsafe"

	"mlxchat/metal/kernels"
	"mlxchat/tensor"
)

// The Gemma 3n ops of tensor.StreamOps.

var _ tensor.StreamOps = (*Backend)(nil)

// GaussianTopK sets dst = max(0, x - (mean + multiplier·std)) per row.
func (b *Backend) GaussianTopK(dst, x *tensor.Tensor, multiplier float32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.rowStat("gaussian top-k", 0, dst, x, x, multiplier))
}

// MatchRMS rescales each row of x to the RMS of the same row of ref.
func (b *Backend) MatchRMS(dst, x, ref *tensor.Tensor, eps float32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := checkF32("match rms ref", "", ref); err != nil {
		return b.fail(err)
	}
	if ref.Len() != x.Len() || lastDim(ref) != lastDim(x) {
		return b.fail(fmt.Errorf("match rms: ref %s does not match x %s", ref, x))
	}
	return b.fail(b.rowStat("match rms", 1, dst, x, ref, eps))
}

func (b *Backend) rowStat(what string, op uint32, dst, x, ref *tensor.Tensor, f float32) error {
	if err := checkF32(what, " x", x); err != nil {
		return err
	}
	if err := checkF32(what, " dst", dst); err != nil {
		return err
	}
	if dst.Len() != x.Len() || lastDim(dst) != lastDim(x) {
		return fmt.Errorf("%s: dst %s does not match x %s", what, dst, x)
	}
	rows := x.Rows()
	args := [8]arg{1: in(x), 2: in(ref), 3: out(dst)}
	return b.launch(kernels.RowStat, &args, []uint32{uint32(lastDim(x)), uint32(rows), op, f32w(f)}, gridRows(rows))
}

func streamDims(what string, t *tensor.Tensor) (s, n, w int, err error) {
	if err := checkF32(what, "", t); err != nil {
		return 0, 0, 0, err
	}
	if len(t.Shape) != 3 {
		return 0, 0, 0, fmt.Errorf("%s: got %s, want [streams, rows, width]", what, t)
	}
	return t.Shape[0], t.Shape[1], t.Shape[2], nil
}

func overlaps(a, b []byte) bool {
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

func (b *Backend) streams(op uint32, dst, x, coef, bt *tensor.Tensor, s, n, w, r, total int) error {
	args := [8]arg{1: in(x), 2: in(coef), 3: in(bt), 4: out(dst)}
	words := []uint32{op, uint32(s), uint32(n), uint32(w), uint32(r), uint32(total)}
	return b.launch(kernels.Streams, &args, words, grid1D(total, 256))
}

// MixStreams sets dst[r, t, :] = Σ_k coef[t, r·S+k] · x[k, t, :].
func (b *Backend) MixStreams(dst, x, coef *tensor.Tensor) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.mixStreams(dst, x, coef))
}

func (b *Backend) mixStreams(dst, x, coef *tensor.Tensor) error {
	s, n, w, err := streamDims("mix streams x", x)
	if err != nil {
		return err
	}
	r, dn, dw, err := streamDims("mix streams dst", dst)
	if err != nil {
		return err
	}
	if dn != n || dw != w {
		return fmt.Errorf("mix streams: dst %s does not match x %s", dst, x)
	}
	if err := tensor.CheckShape("mix streams coef", coef, tensor.F32, n, r*s); err != nil {
		return err
	}
	if overlaps(dst.Data, x.Data) {
		return fmt.Errorf("mix streams: dst must not alias x")
	}
	return b.streams(0, dst, x, coef, x, s, n, w, r, r*n*w)
}

// AddScaledStreams sets dst[s, t, :] = a[s, t, :] + coef[t, s] · bt[t, :].
func (b *Backend) AddScaledStreams(dst, a, bt, coef *tensor.Tensor) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.addScaledStreams(dst, a, bt, coef))
}

func (b *Backend) addScaledStreams(dst, a, bt, coef *tensor.Tensor) error {
	s, n, w, err := streamDims("add scaled streams a", a)
	if err != nil {
		return err
	}
	if err := tensor.CheckShape("add scaled streams dst", dst, tensor.F32, s, n, w); err != nil {
		return err
	}
	if err := tensor.CheckShape("add scaled streams b", bt, tensor.F32, n, w); err != nil {
		return err
	}
	if err := tensor.CheckShape("add scaled streams coef", coef, tensor.F32, n, s); err != nil {
		return err
	}
	return b.streams(1, dst, a, coef, bt, s, n, w, 0, s*n*w)
}

// SwapAxes01 transposes x [A, B, N] into dst [B, A, N].
func (b *Backend) SwapAxes01(dst, x *tensor.Tensor) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.swapAxes(dst, x))
}

func (b *Backend) swapAxes(dst, x *tensor.Tensor) error {
	a, bb, w, err := streamDims("swap axes x", x)
	if err != nil {
		return err
	}
	if err := tensor.CheckShape("swap axes dst", dst, tensor.F32, bb, a, w); err != nil {
		return err
	}
	if overlaps(dst.Data, x.Data) {
		return fmt.Errorf("swap axes: dst must not alias x")
	}
	return b.streams(2, dst, x, x, x, a, bb, w, 0, a*bb*w)
}
