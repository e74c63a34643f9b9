package cpu

import (
	"fmt"
	"math"
	"runtime"

	"mlxchat/tensor"
)

// MatMul computes dst[n, w.Out] = x[n, w.In] · wᵀ for dense (F32, F16,
// BF16) or affine-quantized w; dst must not overlap x. Work is split over
// output rows, so each weight row is read once for all n rows of x.
func (b *Backend) MatMul(dst, x *tensor.Tensor, w *tensor.Matrix) error {
	n, err := checkMatMul("matmul", "dst", dst, x, w)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	w, keep := b.resident(w)
	defer runtime.KeepAlive(keep)
	if w.Quantized() {
		return b.matmulQuant(dst.F32(), x.F32(), n, w)
	}
	return b.matmulDense(dst.F32(), x.F32(), n, w)
}

// checkMatMul checks the operands of a product into dst (named dstName)
// of x [n, w.In] and w: F32 tensors of the right shapes, dst apart from x,
// w valid. It returns n.
func checkMatMul(op, dstName string, dst, x *tensor.Tensor, w *tensor.Matrix) (int, error) {
	if w == nil {
		return 0, fmt.Errorf("cpu %s: nil matrix", op)
	}
	if err := w.Validate("cpu " + op); err != nil {
		return 0, err
	}
	if err := checkF32(op, "x", x); err != nil {
		return 0, err
	}
	if err := checkF32(op, dstName, dst); err != nil {
		return 0, err
	}
	if overlaps(dst.Data, x.Data) {
		return 0, fmt.Errorf("cpu %s: %s %s overlaps x %s", op, dstName, dst, x)
	}
	if lastDim(x) != w.In {
		return 0, fmt.Errorf("cpu %s: x %s has rows of %d, matrix %dx%d wants %d", op, x, lastDim(x), w.Out, w.In, w.In)
	}
	n := x.Rows()
	if lastDim(dst) != w.Out || dst.Rows() != n {
		return 0, fmt.Errorf("cpu %s: %s %s, want %d rows of %d", op, dstName, dst, n, w.Out)
	}
	return n, nil
}

// matmulDense converts one weight row at a time to float32 (F32 rows are
// used in place) and dots it with every row of x.
func (b *Backend) matmulDense(dst, x []float32, n int, w *tensor.Matrix) error {
	in, out := w.In, w.Out
	dt := w.W.DType
	size := dt.Size()
	if b.simd {
		b.matmulDenseSIMD(dst, x, n, w)
		return nil
	}
	b.pool.splitParts(out, 4, 4*b.threads, func(lo, hi int) {
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

// groupSums writes, per row r of x, the sum of x over each quantization
// group g to sums[r*stride+g]: the Σx term of Σ_g (s·Σq·x + b·Σx).
func groupSums(sums, x []float32, n, in, gs, stride int) {
	groups := in / gs
	for r := 0; r < n; r++ {
		for g := 0; g < groups; g++ {
			var s float32
			for _, v := range x[r*in+g*gs : r*in+(g+1)*gs] {
				s += v
			}
			sums[r*stride+g] = s
		}
	}
}

// minGemmRows is the number of x rows from which the AVX-512 path runs
// the prefill kernels (six x rows per pass) instead of one decode matvec
// per row.
const minGemmRows = 4

// minPanelRows is the number of x rows from which the AVX2 path
// dequantizes weight tiles to float32 and multiplies them with panels of
// x (matmulPanels) instead of running the four-row kernels, which
// convert every weight again for each block of four rows.
const minPanelRows = 16

// matmulQuant multiplies by an affine-quantized matrix with the best
// kernels this backend has for it.
func (b *Backend) matmulQuant(dst, x []float32, n int, w *tensor.Matrix) error {
	in, out, gs := w.In, w.Out, w.GroupSize
	if b.avx512 && canAVX512(w) {
		if n >= minGemmRows {
			b.matmul512(dst, x, n, w)
			return nil
		}
		for r := 0; r < n; r++ {
			b.matvec512(dst[r*out:(r+1)*out], x[r*in:(r+1)*in], w)
		}
		return nil
	}
	if b.simd && (w.Bits == 4 || w.Bits == 8) && (gs == 32 || gs == 64 || gs == 128) {
		if n >= minPanelRows && b.matmulPanelsAVX2(dst, x, n, w) {
			return nil
		}
		if b.matmulQuantSIMD(dst, x, n, w) {
			return nil
		}
	}
	return b.matmulQuantGo(dst, x, n, w)
}

// matmulQuantGo is the portable float path: each output row's scales and
// biases are converted once, each group's codes unpacked once and dotted
// with every row of x.
func (b *Backend) matmulQuantGo(dst, x []float32, n int, w *tensor.Matrix) error {
	in, out, gs := w.In, w.Out, w.GroupSize
	groups := in / gs
	xs := make([]float32, n*groups)
	groupSums(xs, x, n, in, gs, groups)
	b.pool.splitParts(out, 4, 4*b.threads, func(lo, hi int) {
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
	size := t.DType.Size()
	_ = tensor.DecodeF32(dst, t.DType, t.Data[off*size:]) // Validate allows floats only
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

// axpyF32 computes dst += a·src.
func axpyF32(dst, src []float32, a float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += a * src[i]
	}
}

// cvt16 widens one BF16 or F16 value.
func cvt16(v uint16, f16 bool) float32 {
	if f16 {
		return tensor.F16ToF32(v)
	}
	return tensor.BF16ToF32(v)
}

// convertRows writes rows [r0, r0+rows) of a scales or biases tensor
// ([Out, groups]) as float32 rows of gpad values into dst; the padding
// columns are left as they are (zero in a fresh buffer).
func convertRows(dst []float32, t *tensor.Tensor, r0, rows, groups, gpad int, simd bool) {
	if groups == gpad {
		convertRange(dst[:rows*groups], t, r0*groups, simd)
		return
	}
	for r := 0; r < rows; r++ {
		convertRange(dst[r*gpad:r*gpad+groups], t, (r0+r)*groups, simd)
	}
}

// convertRange converts len(dst) elements of t starting at element off.
func convertRange(dst []float32, t *tensor.Tensor, off int, simd bool) {
	if simd && (t.DType == tensor.BF16 || t.DType == tensor.F16) {
		cvtSIMD(dst, t.U16()[off:off+len(dst)], t.DType == tensor.F16)
		return
	}
	decodeScales(dst, t, off)
}

// permute16 lays out each block of 16 values of x for the 4-bit kernels:
// the 8 even-indexed values, then the 8 odd-indexed ones (a packed byte
// holds an even element's code low and the next odd one's high).
func permute16(p, x []float32) {
	for blk := 0; blk+16 <= len(x); blk += 16 {
		src := x[blk : blk+16 : blk+16]
		dst := p[blk : blk+16 : blk+16]
		for i := 0; i < 8; i++ {
			dst[i] = src[2*i]
			dst[8+i] = src[2*i+1]
		}
	}
}

// matmulQuantSIMD is the AVX2 path for 4- and 8-bit weights with group
// sizes 32, 64 or 128. Output rows are processed in tiles whose packed
// weights stay in L2 while every block of four x rows passes over them
// (float x, q4x4/q8x4); rows left over after the blocks of four, and
// decode's single row, go through the two-level integer kernels. Scales
// and biases of a tile are converted to float32 once. It returns false,
// having written nothing, when a left-over row cannot be split into limbs
// (an Inf or NaN in it, or max |x| below 2^-100): the float Go path takes
// the call then.
func (b *Backend) matmulQuantSIMD(dst, x []float32, n int, w *tensor.Matrix) bool {
	in, out, gs := w.In, w.Out, w.GroupSize
	groups := in / gs
	gpad := (groups + 7) &^ 7
	xsBuf := b.getZeroBuf(n * gpad)
	defer b.putBuf(xsBuf)
	xs := *xsBuf
	maxes := make([]float32, n)
	for r := 0; r < n; r++ {
		maxes[r] = xstatsSIMD(xs[r*gpad:r*gpad+groups], x[r*in:(r+1)*in], gs)
	}
	rest := n % 4
	var xq []int16
	var sx []float32
	if rest > 0 {
		xq = make([]int16, 2*rest*in)
		sx = make([]float32, rest)
		for i, r := 0, n-rest; r < n; i, r = i+1, r+1 {
			scale, s, ok := splitScale(maxes[r], xs[r*gpad:r*gpad+groups])
			if !ok {
				return false
			}
			sx[i] = s
			xsplitSIMD(xq[2*i*in:2*(i+1)*in], x[r*in:(r+1)*in], w.Bits, scale)
		}
	}
	xp := x
	if w.Bits == 4 && n >= 4 {
		xpBuf := b.getBuf((n - rest) * in)
		defer b.putBuf(xpBuf)
		xp = *xpBuf
		permute16(xp, x[:(n-rest)*in])
	}
	wstride := in * w.Bits / 8
	steps := gs / 16
	tile := min(max((256<<10)/wstride, 8), 1024)
	// The two-level kernels prefetch whole rows at least splitPrefetch
	// bytes ahead in each of their two streams.
	pf := (splitPrefetch + wstride - 1) / wstride * wstride
	data := w.W.Data
	// Decode (no blocks of four rows) reads bfloat16 scales and biases in
	// place: converting them before every tile cost ~15% of a decode
	// step's CPU time (a burst of scale reads with nothing to overlap).
	inPlace := splitBF16 && n < 4 && gpad == groups && w.Scales.DType == tensor.BF16 && w.Biases.DType == tensor.BF16
	body := func(lo, hi int) {
		if inPlace {
			su, bu := w.Scales.U16(), w.Biases.U16()
			for t0 := lo; t0 < hi; t0 += tile {
				rows := min(tile, hi-t0)
				wp := bytePtr(data[t0*wstride:])
				half := rows / 2
				for r := 0; r < n; r++ {
					qmatSplitBF16SIMD(w.Bits, gs, wp, &su[t0*groups], &bu[t0*groups], &xq[2*r*in], &xs[r*gpad], &dst[r*out+t0],
						rows, groups, gpad, wstride, sx[r], pf, half*wstride, half*groups*2, half*4)
				}
			}
			return
		}
		rowsMax := min(tile, hi-lo)
		sbBuf := b.getBuf(2 * rowsMax * gpad)
		defer b.putBuf(sbBuf)
		sb := *sbBuf
		if gpad != groups {
			clear(sb) // the kernels read the padding columns
		}
		s, bias := sb[:rowsMax*gpad], sb[rowsMax*gpad:]
		for t0 := lo; t0 < hi; t0 += rowsMax {
			rows := min(rowsMax, hi-t0)
			convertRows(s, w.Scales, t0, rows, groups, gpad, true)
			convertRows(bias, w.Biases, t0, rows, groups, gpad, true)
			wp := bytePtr(data[t0*wstride:])
			r := 0
			for ; r+4 <= n; r += 4 {
				qmat4SIMD(w.Bits, wp, &s[0], &bias[0], &xp[r*in], &xs[r*gpad], &dst[r*out+t0],
					rows, groups, gpad, steps, wstride, out*4, in*4, gpad*4)
			}
			half := rows / 2 // row k pairs with row k+half
			for i := 0; r < n; i, r = i+1, r+1 {
				qmatSplitSIMD(w.Bits, gs, wp, &s[0], &bias[0], &xq[2*i*in], &xs[r*gpad], &dst[r*out+t0],
					rows, groups, gpad, wstride, sx[i], pf, half*wstride, half*gpad*4, half*4)
			}
		}
	}
	if n < 4 {
		// Decode: contiguous regions per worker, as in matvec512 (E2B at
		// 512 of context on this level, 2 threads, alternating: 9.68 ->
		// 10.20 and 9.69 -> 10.05 tok/s).
		b.streamRows(out, wstride+2*groups*w.Scales.DType.Size(), func(_, lo, hi int) { body(lo, hi) })
		return true
	}
	b.pool.splitParts(out, 16, 4*b.threads, body)
	return true
}

// streamRows runs a decode matvec's rows (rowBytes of weights, scales and
// biases each) under pool.stream in pieces of 32 KiB to 1 MiB of weights,
// whole 4-row passes: the first pieces of a long product are large (few
// calls), the last small, so the workers end within a few microseconds of
// each other.
func (b *Backend) streamRows(rows, rowBytes int, fn func(worker, lo, hi int)) {
	minPiece := max(16, (32<<10)/rowBytes)
	maxPiece := max(minPiece, (1<<20)/rowBytes)
	b.pool.stream(rows, 16, minPiece, maxPiece, 4, fn)
}

// matmulDenseSIMD converts tiles of weight rows to float32 (F32 weights
// are used in place) and runs four x rows per pass over each tile.
func (b *Backend) matmulDenseSIMD(dst, x []float32, n int, w *tensor.Matrix) {
	in, out := w.In, w.Out
	dt := w.W.DType
	tile := min(max((128<<10)/(in*4), 1), 256)
	b.pool.splitParts(out, 4, 4*b.threads, func(lo, hi int) {
		rowsMax := min(tile, hi-lo)
		var buf []float32
		if dt != tensor.F32 {
			p := b.getBuf(rowsMax * in)
			defer b.putBuf(p)
			buf = *p
		}
		var res [4]float32
		for t0 := lo; t0 < hi; t0 += rowsMax {
			rows := min(rowsMax, hi-t0)
			var wt []float32
			switch dt {
			case tensor.F32:
				wt = w.W.F32()[t0*in : (t0+rows)*in]
			case tensor.BF16, tensor.F16:
				wt = buf[:rows*in]
				cvtSIMD(wt, w.W.U16()[t0*in:(t0+rows)*in], dt == tensor.F16)
			default:
				wt = buf[:rows*in]
				size := dt.Size()
				_ = tensor.DecodeF32(wt, dt, w.W.Data[t0*in*size:(t0+rows)*in*size])
			}
			r := 0
			for ; r+4 <= n; r += 4 {
				xr := x[r*in : (r+4)*in]
				for o := 0; o < rows; o++ {
					dot4SIMD(&res, wt[o*in:(o+1)*in], xr, in)
					for k := 0; k < 4; k++ {
						dst[(r+k)*out+t0+o] = res[k]
					}
				}
			}
			for ; r < n; r++ {
				xr := x[r*in : (r+1)*in]
				for o := 0; o < rows; o++ {
					dst[r*out+t0+o] = dotSIMD(wt[o*in:(o+1)*in], xr)
				}
			}
		}
	})
}

// splitPrefetch is how far ahead, in bytes, the two-level decode kernels
// prefetch weights.
const splitPrefetch = 4096

// splitScale chooses the power-of-two scale of the two-level x split for
// a row whose largest magnitude is mx: scale = 2^k with mx·scale in
// [2^13, 2^14), so hi = round(x·scale) fits int16 with room to spare, and
// sx = 1/scale. ok is false when the split cannot represent the row: mx
// or a group sum (which an Inf or NaN makes non-finite) is not finite, or
// mx is below 2^-100 but not zero. An all-zero row gets scale 1.
func splitScale(mx float32, sums []float32) (scale, sx float32, ok bool) {
	if mx == 0 {
		return 1, 1, true
	}
	if math.IsInf(float64(mx), 0) || math.IsNaN(float64(mx)) || mx < 0x1p-100 {
		return 0, 0, false
	}
	for _, s := range sums {
		if math.IsInf(float64(s), 0) || math.IsNaN(float64(s)) {
			return 0, 0, false
		}
	}
	e := int(math.Float32bits(mx)>>23) - 127 // mx in [2^e, 2^(e+1))
	k := 13 - e
	return math.Float32frombits(uint32(k+127) << 23), math.Float32frombits(uint32(127-k) << 23), true
}

// xsplitGo is the portable form of the two-level x split (kernels_amd64.s
// documents the layout): per 32 elements of x, 64 int16s of xq.
func xsplitGo(xq []int16, x []float32, bits int, scale float32) {
	for blk := 0; blk+32 <= len(x); blk += 32 {
		out := xq[2*blk : 2*blk+64 : 2*blk+64]
		for i, v := range x[blk : blk+32] {
			j := i // 8 bits: natural order
			if bits == 4 {
				j = (i&1)*16 + i>>1 // even elements, then odd ones
			}
			t := float32(v * scale) // rounded here: no fused multiply-add with the lo limb below
			h := float32(math.RoundToEven(float64(t)))
			out[j] = int16(h)
			out[32+j] = int16(math.RoundToEven(float64((t - h) * 32768)))
		}
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}
