package cpu

import (
	"fmt"
	"math"
	"unsafe"

	"mlxchat/tensor"
)

// This file holds the ops Gemma 3n added to tensor.Backend: activation
// sparsity, AltUp's stream mixing and magnitude matching, and the axis swap
// that lays per-layer inputs out layer by layer.

// rowSplit runs fn over row ranges in parallel, aiming at about 16K
// values per task.
func (b *Backend) rowSplit(rows, rowLen int, fn func(lo, hi int)) {
	b.pool.split(rows, max(1, (1<<14)/max(rowLen, 1)), fn)
}

// GaussianTopK computes dst = max(0, x - (mean + multiplier·std)) per row,
// with the population standard deviation.
func (b *Backend) GaussianTopK(dst, x *tensor.Tensor, multiplier float32) error {
	n, err := checkSame("gaussian top-k", dst, x)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	d, v := dst.F32(), x.F32()
	b.rowSplit(len(v)/n, n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if b.simd {
				gaussianTopKRowSIMD(d[r*n:(r+1)*n], v[r*n:(r+1)*n], float64(multiplier))
				continue
			}
			gaussianTopKRow(d[r*n:(r+1)*n], v[r*n:(r+1)*n], float64(multiplier))
		}
	})
	return nil
}

func gaussianTopKRow(dst, x []float32, mult float64) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := sum / float64(len(x))
	var ss float64
	for _, v := range x {
		dv := float64(v) - mean
		ss += dv * dv
	}
	cut := float32(mean + math.Sqrt(ss/float64(len(x)))*mult)
	for i, v := range x {
		dst[i] = max(0, v-cut)
	}
}

// MatchRMS computes dst = x · rms(ref) / sqrt(max(mean(x²), eps)) per row.
func (b *Backend) MatchRMS(dst, x, ref *tensor.Tensor, eps float32) error {
	n, err := checkSame("match rms", dst, x)
	if err != nil {
		return err
	}
	if err := checkF32("match rms", "ref", ref); err != nil {
		return err
	}
	if ref.Len() != x.Len() || lastDim(ref) != n {
		return fmt.Errorf("cpu match rms: ref %s does not match x %s", ref, x)
	}
	if n == 0 {
		return nil
	}
	d, v, w := dst.F32(), x.F32(), ref.F32()
	b.rowSplit(len(v)/n, n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xs, rs := v[r*n:(r+1)*n], w[r*n:(r+1)*n]
			msX, msR := meanSquare(xs), meanSquare(rs)
			f := float32(math.Sqrt(msR) / math.Sqrt(max(msX, float64(eps))))
			ds := d[r*n : (r+1)*n]
			for i, xv := range xs {
				ds[i] = xv * f
			}
		}
	})
	return nil
}

func meanSquare(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return s / float64(len(x))
}

// streamDims checks a [S, n, N] stream tensor and returns S, n and N.
func streamDims(op, what string, t *tensor.Tensor) (s, n, width int, err error) {
	if err := checkF32(op, what, t); err != nil {
		return 0, 0, 0, err
	}
	if len(t.Shape) != 3 {
		return 0, 0, 0, fmt.Errorf("cpu %s: %s %s, want [streams, rows, width]", op, what, t)
	}
	return t.Shape[0], t.Shape[1], t.Shape[2], nil
}

// MixStreams computes dst[r, t, :] = Σ_k coef[t, r·S+k] · x[k, t, :].
func (b *Backend) MixStreams(dst, x, coef *tensor.Tensor) error {
	const op = "mix streams"
	s, n, width, err := streamDims(op, "x", x)
	if err != nil {
		return err
	}
	r, dn, dw, err := streamDims(op, "dst", dst)
	if err != nil {
		return err
	}
	if dn != n || dw != width {
		return fmt.Errorf("cpu %s: dst %s does not match x %s", op, dst, x)
	}
	if err := tensor.CheckShape("cpu "+op+": coef", coef, tensor.F32, n, r*s); err != nil {
		return err
	}
	if overlaps(dst.Data, x.Data) {
		return fmt.Errorf("cpu %s: dst must not alias x", op)
	}
	d, v, c := dst.F32(), x.F32(), coef.F32()
	axpy := b.axpy()
	b.rowSplit(n, width*(r+s), func(lo, hi int) {
		for t := lo; t < hi; t++ {
			for ri := 0; ri < r; ri++ {
				out := d[(ri*n+t)*width : (ri*n+t+1)*width]
				clear(out)
				for k, ck := range c[t*r*s+ri*s : t*r*s+(ri+1)*s] {
					axpy(out, v[(k*n+t)*width:(k*n+t+1)*width], ck)
				}
			}
		}
	})
	return nil
}

// axpy returns the backend's dst += a·src kernel.
func (b *Backend) axpy() func(dst, src []float32, a float32) {
	if b.simd {
		return axpySIMD
	}
	return axpyF32
}

// AddScaledStreams computes dst[s, t, :] = a[s, t, :] + coef[t, s] · b[t, :].
func (b *Backend) AddScaledStreams(dst, a, bt, coef *tensor.Tensor) error {
	const op = "add scaled streams"
	s, n, width, err := streamDims(op, "a", a)
	if err != nil {
		return err
	}
	if err := tensor.CheckShape("cpu "+op+": dst", dst, tensor.F32, s, n, width); err != nil {
		return err
	}
	if err := checkF32(op, "b", bt); err != nil {
		return err
	}
	if bt.Len() != n*width || lastDim(bt) != width {
		return fmt.Errorf("cpu %s: b %s, want [%d, %d]", op, bt, n, width)
	}
	if err := tensor.CheckShape("cpu "+op+": coef", coef, tensor.F32, n, s); err != nil {
		return err
	}
	d, x, y, c := dst.F32(), a.F32(), bt.F32(), coef.F32()
	axpy := b.axpy()
	b.rowSplit(n, width*s, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			in := y[t*width : (t+1)*width]
			for si := 0; si < s; si++ {
				off := (si*n + t) * width
				out := d[off : off+width]
				copy(out, x[off:off+width]) // nothing to do when dst is a
				axpy(out, in, c[t*s+si])
			}
		}
	})
	return nil
}

// SwapAxes01 writes x [A, B, N] as dst [B, A, N].
func (b *Backend) SwapAxes01(dst, x *tensor.Tensor) error {
	const op = "swap axes"
	a, bb, width, err := streamDims(op, "x", x)
	if err != nil {
		return err
	}
	if err := tensor.CheckShape("cpu "+op+": dst", dst, tensor.F32, bb, a, width); err != nil {
		return err
	}
	if overlaps(dst.Data, x.Data) {
		return fmt.Errorf("cpu %s: dst must not alias x", op)
	}
	d, v := dst.F32(), x.F32()
	b.rowSplit(a, width*bb, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			for j := 0; j < bb; j++ {
				copy(d[(j*a+i)*width:(j*a+i+1)*width], v[(i*bb+j)*width:(i*bb+j+1)*width])
			}
		}
	})
	return nil
}

// overlaps reports whether two byte slices share memory.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b)) && b0 < a0+uintptr(len(a))
}

var _ tensor.StreamOps = (*Backend)(nil)
