package cpu

import (
	"fmt"

	"mlxchat/tensor"
)

// MatMul computes dst[n, w.Out] = x[n, w.In] · wᵀ for dense (F32, F16,
// BF16) or affine-quantized w. Work is split over output rows, so each
// weight row is read once for all n rows of x.
func (b *Backend) MatMul(dst, x *tensor.Tensor, w *tensor.Matrix) error {
	if w == nil {
		return fmt.Errorf("cpu matmul: nil matrix")
	}
	if err := w.Validate("cpu matmul"); err != nil {
		return err
	}
	if err := checkF32("matmul", "x", x); err != nil {
		return err
	}
	if err := checkF32("matmul", "dst", dst); err != nil {
		return err
	}
	if lastDim(x) != w.In {
		return fmt.Errorf("cpu matmul: x %s has rows of %d, matrix %dx%d wants %d", x, lastDim(x), w.Out, w.In, w.In)
	}
	n := x.Rows()
	if lastDim(dst) != w.Out || dst.Rows() != n {
		return fmt.Errorf("cpu matmul: dst %s, want %d rows of %d", dst, n, w.Out)
	}
	if n == 0 {
		return nil
	}
	if w.Quantized() {
		return b.matmulQuant(dst.F32(), x.F32(), n, w)
	}
	return b.matmulDense(dst.F32(), x.F32(), n, w)
}

// matmulDense converts one weight row at a time to float32 (F32 rows are
// used in place) and dots it with every row of x.
func (b *Backend) matmulDense(dst, x []float32, n int, w *tensor.Matrix) error {
	in, out := w.In, w.Out
	dt := w.W.DType
	size := dt.Size()
	b.pool.split(out, 4, func(lo, hi int) {
		var buf []float32
		if dt != tensor.F32 {
			buf = make([]float32, in)
		}
		all := w.W.Data
		for o := lo; o < hi; o++ {
			var row []float32
			if dt == tensor.F32 {
				row = w.W.F32()[o*in : (o+1)*in]
			} else {
				// Validate admits float dtypes only, which always convert.
				_ = tensor.DecodeF32(buf, dt, all[o*in*size:(o+1)*in*size])
				row = buf
			}
			for r := 0; r < n; r++ {
				dst[r*out+o] = dotF32(row, x[r*in:(r+1)*in])
			}
		}
	})
	return nil
}

// dotF32 is a portable dot product with four partial sums.
func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// groupSums returns, per row of x, the sum of x over each quantization
// group: the Σx term of Σ_g (s·Σq·x + b·Σx).
func groupSums(x []float32, n, in, gs int) []float32 {
	groups := in / gs
	sums := make([]float32, n*groups)
	for r := 0; r < n; r++ {
		for g := 0; g < groups; g++ {
			var s float32
			for _, v := range x[r*in+g*gs : r*in+(g+1)*gs] {
				s += v
			}
			sums[r*groups+g] = s
		}
	}
	return sums
}

// matmulQuant multiplies by an affine-quantized matrix. Each output row's
// scales and biases are converted once; each group's codes are unpacked
// once and dotted with every row of x.
func (b *Backend) matmulQuant(dst, x []float32, n int, w *tensor.Matrix) error {
	in, out, gs := w.In, w.Out, w.GroupSize
	groups := in / gs
	xs := groupSums(x, n, in, gs)
	if b.simd && quantSIMDOK(w) {
		b.matmulQuantSIMD(dst, x, xs, n, w)
		return nil
	}
	b.pool.split(out, 4, func(lo, hi int) {
		sb := make([]float32, 2*groups)
		q := make([]float32, gs)
		for o := lo; o < hi; o++ {
			rowScales(sb, w, o)
			for r := 0; r < n; r++ {
				dst[r*out+o] = 0
			}
			for g := 0; g < groups; g++ {
				unpackGroup(q, w, o, g)
				s, bias := sb[g], sb[groups+g]
				for r := 0; r < n; r++ {
					d := dotF32(q, x[r*in+g*gs:r*in+(g+1)*gs])
					dst[r*out+o] += s*d + bias*xs[r*groups+g]
				}
			}
		}
	})
	return nil
}

// rowScales decodes row o's scales into sb[:groups] and biases into
// sb[groups:].
func rowScales(sb []float32, w *tensor.Matrix, o int) {
	groups := w.In / w.GroupSize
	decodeScales(sb[:groups], w.Scales, o*groups)
	decodeScales(sb[groups:], w.Biases, o*groups)
}

// decodeScales converts len(dst) elements of t starting at element off.
func decodeScales(dst []float32, t *tensor.Tensor, off int) {
	switch t.DType {
	case tensor.BF16:
		src := t.U16()[off : off+len(dst)]
		for i, v := range src {
			dst[i] = tensor.BF16ToF32(v)
		}
	case tensor.F16:
		src := t.U16()[off : off+len(dst)]
		for i, v := range src {
			dst[i] = tensor.F16ToF32(v)
		}
	case tensor.F32:
		copy(dst, t.F32()[off:off+len(dst)])
	default:
		size := t.DType.Size()
		_ = tensor.DecodeF32(dst, t.DType, t.Data[off*size:]) // Validate allows floats only
	}
}

// unpackGroup writes the codes of group g of row o as float32.
func unpackGroup(q []float32, w *tensor.Matrix, o, g int) {
	bits, gs := w.Bits, w.GroupSize
	per := 32 / bits
	wpr := w.In / per
	words := w.W.U32()[o*wpr+g*gs/per : o*wpr+(g+1)*gs/per]
	mask := uint32(1)<<bits - 1
	for j, word := range words {
		for k := 0; k < per; k++ {
			q[j*per+k] = float32(word >> (bits * k) & mask)
		}
	}
}
