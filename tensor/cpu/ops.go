package cpu

import (
	"fmt"
	"math"

	"mlxchat/tensor"
)

// GeluTanh computes dst = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func (b *Backend) GeluTanh(dst, x *tensor.Tensor) error {
	if _, err := checkSame("gelu", dst, x); err != nil {
		return err
	}
	d, s := dst.F32(), x.F32()
	b.elementwiseHeavy(len(s), func(lo, hi int) {
		if b.simd {
			geluSIMD(d[lo:hi], s[lo:hi])
			return
		}
		for i := lo; i < hi; i++ {
			d[i] = geluTanh(s[i])
		}
	})
	return nil
}

func geluTanh(x float32) float32 {
	const c = 0.7978845608028654 // √(2/π)
	return 0.5 * x * (1 + tanhf(c*(x+0.044715*x*x*x)))
}

// binary checks a, b and dst for Add and Mul: dst and a have the same
// size; b has either a's size or one row of a's row length.
func binaryCheck(op string, dst, a, bt *tensor.Tensor) (broadcast bool, err error) {
	n, err := checkSame(op, dst, a)
	if err != nil {
		return false, err
	}
	if err := checkF32(op, "b", bt); err != nil {
		return false, err
	}
	switch {
	case bt.Len() == a.Len():
		return false, nil
	case bt.Len() == n && bt.Rows() == 1:
		return true, nil
	}
	return false, fmt.Errorf("cpu %s: b %s neither matches a %s nor is one row of %d", op, bt, a, n)
}

// binary runs kernel over matching stretches of dst, a and b: the whole
// range when b has a's size, else row by row against b's one row. The
// kernel is a plain loop (no call per element).
func (b *Backend) binary(op string, dst, a, bt *tensor.Tensor, kernel func(d, x, y []float32)) error {
	bc, err := binaryCheck(op, dst, a, bt)
	if err != nil {
		return err
	}
	d, x, y := dst.F32(), a.F32(), bt.F32()
	n := len(y)
	b.elementwise(len(x), func(lo, hi int) {
		if !bc {
			kernel(d[lo:hi], x[lo:hi], y[lo:hi])
			return
		}
		for i := lo; i < hi; {
			j := i % n
			e := min(hi, i+n-j)
			kernel(d[i:e], x[i:e], y[j:j+e-i])
			i = e
		}
	})
	return nil
}

func addKernel(d, x, y []float32) {
	x, y = x[:len(d)], y[:len(d)]
	for i := range d {
		d[i] = x[i] + y[i]
	}
}

func mulKernel(d, x, y []float32) {
	x, y = x[:len(d)], y[:len(d)]
	for i := range d {
		d[i] = x[i] * y[i]
	}
}

func scaleKernel(d, x []float32, s float32) {
	x = x[:len(d)]
	for i := range d {
		d[i] = x[i] * s
	}
}

// scaleMulKernel computes d = x·s·w, rounding x·s first.
func scaleMulKernel(d, x, w []float32, s float32) {
	x, w = x[:len(d)], w[:len(d)]
	for i := range d {
		d[i] = x[i] * s * w[i]
	}
}

// Add computes dst = a + b; b may be one row broadcast over a's rows.
func (b *Backend) Add(dst, a, bt *tensor.Tensor) error {
	if b.simd {
		return b.binary("add", dst, a, bt, addSIMD)
	}
	return b.binary("add", dst, a, bt, addKernel)
}

// Mul computes dst = a * b; b may be one row broadcast over a's rows.
func (b *Backend) Mul(dst, a, bt *tensor.Tensor) error {
	if b.simd {
		return b.binary("mul", dst, a, bt, mulSIMD)
	}
	return b.binary("mul", dst, a, bt, mulKernel)
}

// Scale computes dst = x * s.
func (b *Backend) Scale(dst, x *tensor.Tensor, s float32) error {
	if _, err := checkSame("scale", dst, x); err != nil {
		return err
	}
	d, v := dst.F32(), x.F32()
	b.elementwise(len(v), func(lo, hi int) {
		if b.simd {
			scaleSIMD(d[lo:hi], v[lo:hi], s)
			return
		}
		scaleKernel(d[lo:hi], v[lo:hi], s)
	})
	return nil
}

// Softcap computes dst = tanh(x/c)·c.
func (b *Backend) Softcap(dst, x *tensor.Tensor, c float32) error {
	if _, err := checkSame("softcap", dst, x); err != nil {
		return err
	}
	if c == 0 {
		return fmt.Errorf("cpu softcap: cap must be non-zero")
	}
	d, v := dst.F32(), x.F32()
	inv := 1 / c
	b.elementwiseHeavy(len(v), func(lo, hi int) {
		if b.simd {
			tanhScaledSIMD(d[lo:hi], v[lo:hi], inv, c)
			return
		}
		for i := lo; i < hi; i++ {
			d[i] = tanhf(v[i]*inv) * c
		}
	})
	return nil
}

// Softmax normalizes each row of x over its last axis.
func (b *Backend) Softmax(dst, x *tensor.Tensor) error {
	n, err := checkSame("softmax", dst, x)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	d, v := dst.F32(), x.F32()
	rows := len(v) / n
	b.rowSplit(rows, n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			softmaxRow(d[r*n:(r+1)*n], v[r*n:(r+1)*n])
		}
	})
	return nil
}

func softmaxRow(dst, x []float32) {
	m := maxF32(x)
	var sum float64
	for i, v := range x {
		e := expf(v - m)
		dst[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range dst {
		dst[i] *= inv
	}
}

// Copy copies src into dst. Both need the same element count; F32, F16
// and BF16 convert to one another, other dtypes must match exactly.
func (b *Backend) Copy(dst, src *tensor.Tensor) error {
	if dst == nil || src == nil {
		return fmt.Errorf("cpu copy: nil tensor")
	}
	if dst.Len() != src.Len() {
		return fmt.Errorf("cpu copy: dst %s and src %s differ in size", dst, src)
	}
	if len(dst.Data) != dst.Len()*dst.DType.Size() || len(src.Data) != src.Len()*src.DType.Size() {
		return fmt.Errorf("cpu copy: data length disagrees with shape (dst %s, src %s)", dst, src)
	}
	if dst.DType == src.DType {
		copy(dst.Data, src.Data)
		return nil
	}
	if dst.DType == tensor.F32 {
		if err := tensor.DecodeF32(dst.F32(), src.DType, src.Data); err != nil {
			return fmt.Errorf("cpu copy: %w", err)
		}
		return nil
	}
	if src.DType == tensor.F32 {
		if err := tensor.EncodeF32(dst.Data, dst.DType, src.F32()); err != nil {
			return fmt.Errorf("cpu copy: %w", err)
		}
		return nil
	}
	return fmt.Errorf("cpu copy: cannot convert %s to %s", src, dst)
}

// RMSNorm computes dst = x / sqrt(mean(x²)+eps) · weight per row.
func (b *Backend) RMSNorm(dst, x, weight *tensor.Tensor, eps float32) error {
	n, err := checkSame("rmsnorm", dst, x)
	if err != nil {
		return err
	}
	w, release, err := b.normParam("rmsnorm", "weight", weight, n)
	if err != nil {
		return err
	}
	defer release()
	if n == 0 {
		return nil
	}
	d, v := dst.F32(), x.F32()
	rows := len(v) / n
	b.rowSplit(rows, n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if b.simd {
				rmsRowSIMD(d[r*n:(r+1)*n], v[r*n:(r+1)*n], w, eps)
				continue
			}
			rmsRow(d[r*n:(r+1)*n], v[r*n:(r+1)*n], w, eps)
		}
	})
	return nil
}

// normParam returns a norm's per-column parameter (weight or bias) of n
// values as F32: the tensor's own data when it is F32, else a converted
// copy in pooled scratch that release returns. A nil t gives nil.
func (b *Backend) normParam(op, what string, t *tensor.Tensor, n int) (vals []float32, release func(), err error) {
	release = func() {}
	if t == nil {
		return nil, release, nil
	}
	if t.Len() != n || len(t.Shape) != 1 {
		return nil, release, fmt.Errorf("cpu %s: %s %s, want shape [%d]", op, what, t, n)
	}
	switch t.DType {
	case tensor.F32:
		if len(t.Data) != 4*n {
			return nil, release, fmt.Errorf("cpu %s: %s %s has %d bytes", op, what, t, len(t.Data))
		}
		return t.F32(), release, nil
	case tensor.BF16, tensor.F16:
		if len(t.Data) != 2*n {
			return nil, release, fmt.Errorf("cpu %s: %s %s has %d bytes", op, what, t, len(t.Data))
		}
		// Converted into scratch: norms run hundreds of times per
		// token, so neither an allocation nor a scalar loop each time.
		buf := b.getBuf(n)
		w := *buf
		if b.simd {
			cvtSIMD(w, t.U16(), t.DType == tensor.F16)
		} else {
			for i, v := range t.U16() {
				w[i] = cvt16(v, t.DType == tensor.F16)
			}
		}
		return w, func() { b.putBuf(buf) }, nil
	}
	w := make([]float32, n)
	if err := tensor.DecodeF32(w, t.DType, t.Data); err != nil {
		return nil, release, fmt.Errorf("cpu %s: %s: %w", op, what, err)
	}
	return w, release, nil
}

func rmsRow(dst, x, w []float32, eps float32) {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * x[i]
		s1 += x[i+1] * x[i+1]
		s2 += x[i+2] * x[i+2]
		s3 += x[i+3] * x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * x[i]
	}
	ms := (s0 + s1 + s2 + s3) / float32(len(x))
	inv := float32(1 / math.Sqrt(float64(ms+eps)))
	if w == nil {
		for i, v := range x {
			dst[i] = v * inv
		}
		return
	}
	for i, v := range x {
		dst[i] = v * inv * w[i]
	}
}

// rmsRowSIMD is rmsRow with the vector kernels: the sum of squares in
// their order, then one pass that scales (and weighs) each value.
func rmsRowSIMD(dst, x, w []float32, eps float32) {
	ms := dotSIMD(x, x) / float32(len(x))
	inv := float32(1 / math.Sqrt(float64(ms+eps)))
	if w == nil {
		scaleSIMD(dst, x, inv)
		return
	}
	scaleMulSIMD(dst, x, w, inv)
}

// RoPE rotates x[n, heads, headDim] in place with the table r at
// positions pos0..pos0+n-1: half-split pairs (i, i+dims/2), or
// neighbouring pairs (2i, 2i+1) when r.Interleaved. The cosines and sines
// come from the backend's rope tables (ropeTables), shared by every layer
// and head that rotates at the same positions.
func (b *Backend) RoPE(x *tensor.Tensor, pos0 int, r *tensor.Rotary) error {
	if err := checkF32("rope", "x", x); err != nil {
		return err
	}
	n, heads, hd, err := tensor.CheckRoPE(x, pos0, r)
	if err != nil {
		return fmt.Errorf("cpu %w", err)
	}
	half := r.Dims / 2
	tab := b.rope.get(r, pos0, n)
	v := x.F32()
	b.pool.split(n, max(1, 4096/max(heads*hd, 1)), func(lo, hi int) {
		for t := lo; t < hi; t++ {
			cs := tab[t*2*half : (t+1)*2*half]
			for h := 0; h < heads; h++ {
				row := v[(t*heads+h)*hd:][:r.Dims]
				switch {
				case r.Interleaved:
					ropeInterleaved(row, cs, half)
				case b.simd:
					ropeHalfSIMD(row, cs, half)
				default:
					ropeHalfKernel(row, cs, half)
				}
			}
		}
	})
	return nil
}

// ropeHalfKernel rotates the pairs (row[i], row[i+half]) of one head by
// the angles with cosines cs[i] and sines cs[half+i].
func ropeHalfKernel(row, cs []float32, half int) { ropeHalfRange(row, cs, half, 0) }

// ropeHalfRange is ropeHalfKernel for the pairs from..half-1.
func ropeHalfRange(row, cs []float32, half, from int) {
	lo, hi := row[:half], row[half:2*half]
	c, s := cs[:half], cs[half:2*half]
	for i := from; i < half; i++ {
		x1, x2 := lo[i], hi[i]
		lo[i] = x1*c[i] - x2*s[i]
		hi[i] = x2*c[i] + x1*s[i]
	}
}

// ropeInterleaved rotates the pairs (row[2i], row[2i+1]) of one head.
func ropeInterleaved(row, cs []float32, half int) {
	row = row[:2*half]
	c, s := cs[:half], cs[half:2*half]
	for i := 0; i < half; i++ {
		x1, x2 := row[2*i], row[2*i+1]
		row[2*i] = x1*c[i] - x2*s[i]
		row[2*i+1] = x2*c[i] + x1*s[i]
	}
}

// Gather writes row ids[i] of w, dequantized, into row i of dst.
func (b *Backend) Gather(dst *tensor.Tensor, w *tensor.Matrix, ids []int32) error {
	if w == nil {
		return fmt.Errorf("cpu gather: nil matrix")
	}
	if err := w.Validate("cpu gather"); err != nil {
		return err
	}
	if err := checkF32("gather", "dst", dst); err != nil {
		return err
	}
	if dst.Len() != len(ids)*w.In || lastDim(dst) != w.In {
		return fmt.Errorf("cpu gather: dst %s, want [%d, %d]", dst, len(ids), w.In)
	}
	for i, id := range ids {
		if id < 0 || int(id) >= w.Out {
			return fmt.Errorf("cpu gather: id %d at %d out of range [0, %d)", id, i, w.Out)
		}
	}
	d := dst.F32()
	if !w.Quantized() {
		var firstErr error
		for i, id := range ids {
			if err := tensor.DequantizeRow(w, int(id), d[i*w.In:(i+1)*w.In]); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("cpu gather: %w", err)
			}
		}
		return firstErr
	}
	// Quantized rows (embeddings) are unpacked a word at a time with each
	// group's scale and bias decoded once: the same arithmetic as
	// tensor.DequantizeRow at about a tenth of the cost. A prompt's rows
	// are split over the cores.
	groups := w.In / w.GroupSize
	b.pool.split(len(ids), 8, func(lo, hi int) {
		sb := b.getBuf(2 * groups)
		defer b.putBuf(sb)
		for i := lo; i < hi; i++ {
			dequantRow(d[i*w.In:(i+1)*w.In], w, int(ids[i]), *sb)
		}
	})
	return nil
}

// dequantRow writes row r of the quantized w (bits dividing 32, which
// Validate ensures) as s·q + b into dst, using sb (2·groups floats) for
// the row's scales and biases.
func dequantRow(dst []float32, w *tensor.Matrix, r int, sb []float32) {
	bits, gs := w.Bits, w.GroupSize
	groups := w.In / gs
	rowScales(sb, w, r)
	per := 32 / bits
	wpr := w.In / per
	wpg := gs / per
	words := w.W.U32()[r*wpr : (r+1)*wpr]
	mask := uint32(1)<<bits - 1
	for g := 0; g < groups; g++ {
		s, bias := sb[g], sb[groups+g]
		out := dst[g*gs : (g+1)*gs]
		for j, word := range words[g*wpg : (g+1)*wpg] {
			o := out[j*per : (j+1)*per]
			for k := range o {
				o[k] = s*float32(word>>(bits*k)&mask) + bias
			}
		}
	}
}
