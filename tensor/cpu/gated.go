package cpu

import (
	"fmt"
	"runtime"
	"unsafe"

	"mlxchat/tensor"
)

// gatherDensity is the largest share of non-zero gate values for which
// GatedMatMul computes only their rows: scattered rows read slower than a
// whole matrix streams. BenchmarkGatedUpProj (cold weights and gates, Zen
// 4, December 2026), 1 thread: 5% kept 116 us, 15% 314, 25% 513, whole
// product 461; 2 threads: 79, 187, 346 and 321 us. The two cross near a
// fifth of the rows on 2 threads, a quarter on 1.
const gatherDensity = 0.2

// gatherChunk is how many gathered rows a worker copies into one block
// (16 KiB of a 2048-wide 4-bit matrix: the block stays in L1 while the
// kernel reads it; BenchmarkGatedUpProj measured 8-64 alike).
const gatherChunk = 16

// GatedMatMul multiplies each non-zero g[r, j] by x[r]·w[j] + bias[j] and
// leaves the zeros (tensor.GatedOps). For decode's rows (fewer than four),
// and for longer runs of rows whose gate keeps at most gatherDensity of
// its values, of a quantized w it runs the decode kernels on the rows the
// gate keeps, so a Gemma 3n sparse layer reads about 5% of up_proj;
// otherwise it computes the whole product into scratch and multiplies
// where g is non-zero. A gathered row's dot has the decode kernels'
// precision; the SIMD kernels sum it in another order than MatMul, which
// runs the row beside others (pairs, four-row passes).
func (b *Backend) GatedMatMul(g, x *tensor.Tensor, w *tensor.Matrix, bias *tensor.Tensor) error {
	n, err := checkMatMul("gated matmul", "g", g, x, w)
	if err != nil {
		return err
	}
	in, out := w.In, w.Out
	var bv []float32
	if bias != nil {
		if err := checkF32("gated matmul", "bias", bias); err != nil {
			return err
		}
		if bias.Len() != out {
			return fmt.Errorf("cpu gated matmul: bias %s, want %d values", bias, out)
		}
		bv = bias.F32()
	}
	if n == 0 {
		return nil
	}
	gd, xd := g.F32(), x.F32()
	w, keep := b.resident(w)
	defer runtime.KeepAlive(keep)
	if n >= 4 && !(b.canGather(w) && mostlyZero(gd, gatherDensity)) {
		return b.gatedFull(gd, xd, n, w, bv)
	}
	for r := 0; r < n; r++ {
		gr, xr := gd[r*out:(r+1)*out], xd[r*in:(r+1)*in]
		if b.gatedRows(gr, xr, w, bv) {
			continue
		}
		if err := b.gatedFull(gr, xr, 1, w, bv); err != nil {
			return err
		}
	}
	return nil
}

// gatedRows is GatedMatMul for one row g of out values and its x when the
// gate keeps few enough of them and a decode kernel exists for w: it runs
// the kernel on the kept rows of w only. It returns false, having changed
// nothing, otherwise.
func (b *Backend) gatedRows(g, x []float32, w *tensor.Matrix, bv []float32) bool {
	if !b.canGather(w) {
		return false
	}
	limit := int(gatherDensity * float64(w.Out))
	idxBuf := b.getBuf(limit) // row indices, stored as int32 bits
	defer b.putBuf(idxBuf)
	rows := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(*idxBuf))), limit)[:0]
	for j, v := range g {
		if v != 0 {
			if len(rows) == limit {
				return false // too many kept: the whole product is cheaper
			}
			rows = append(rows, int32(j))
		}
	}
	if len(rows) == 0 {
		return true
	}
	dotBuf := b.getBuf(len(rows))
	defer b.putBuf(dotBuf)
	dots := *dotBuf
	if !b.matvecRows(dots, x, w, rows) {
		return false
	}
	for k, j := range rows {
		v := dots[k]
		if bv != nil {
			v += bv[j]
		}
		g[j] *= v
	}
	return true
}

// gatedFull is GatedMatMul through the whole product of n rows.
func (b *Backend) gatedFull(gd, xd []float32, n int, w *tensor.Matrix, bv []float32) error {
	out := w.Out
	uBuf := b.getBuf(n * out)
	defer b.putBuf(uBuf)
	u := *uBuf
	var err error
	if w.Quantized() {
		err = b.matmulQuant(u, xd, n, w)
	} else {
		err = b.matmulDense(u, xd, n, w)
	}
	if err != nil {
		return fmt.Errorf("cpu gated matmul: %w", err)
	}
	b.elementwise(len(gd), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := gd[i]
			if v == 0 {
				continue
			}
			p := u[i]
			if bv != nil {
				p += bv[i%out]
			}
			gd[i] = v * p
		}
	})
	return nil
}

// canGather reports whether matvecRows has a kernel for w.
func (b *Backend) canGather(w *tensor.Matrix) bool {
	if !w.Quantized() {
		return false
	}
	if b.avx512 && canAVX512(w) {
		return true
	}
	return b.simd && (w.Bits == 4 || w.Bits == 8) && (w.GroupSize == 32 || w.GroupSize == 64 || w.GroupSize == 128)
}

// matvecRows writes dst[k] = x·w[rows[k]] for one row x and ascending row
// indices, with the decode kernels MatMul uses for one row (the same x
// split). The kept rows are scattered, and a row alone takes the kernels'
// slowest form (x loaded and widened for every row where row pairs or
// four-row passes share it), so each worker copies its rows, gatherChunk
// at a time, into a contiguous block and runs the kernel over the block,
// with the next block's rows prefetched meanwhile. It returns false,
// having written nothing, when x cannot be split into limbs (an Inf or NaN
// in it, or max |x| below 2^-100).
func (b *Backend) matvecRows(dst, x []float32, w *tensor.Matrix, rows []int32) bool {
	if b.avx512 && canAVX512(w) {
		b.matvecRows512(dst, x, w, rows)
		return true
	}
	in, gs := w.In, w.GroupSize
	groups := in / gs
	gpad := (groups + 7) &^ 7
	xsBuf := b.getZeroBuf(gpad)
	defer b.putBuf(xsBuf)
	xs := *xsBuf
	scale, sx, ok := splitScale(xstatsSIMD(xs[:groups], x, gs), xs[:groups])
	if !ok {
		return false
	}
	xq := make([]int16, 2*in)
	xsplitSIMD(xq, x, w.Bits, scale)
	ws := in * w.Bits / 8
	pf := (splitPrefetch + ws - 1) / ws * ws // within the block, as matmulQuantSIMD's
	inPlace := splitBF16 && gpad == groups && w.Scales.DType == tensor.BF16 && w.Biases.DType == tensor.BF16
	b.pool.splitParts(len(rows), 16, 4*b.threads, func(lo, hi int) {
		wBuf := b.getBuf((gatherChunk*ws + 3) / 4)
		defer b.putBuf(wBuf)
		wb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(*wBuf))), gatherChunk*ws)
		sbBuf := b.getBuf(2 * gatherChunk * gpad)
		defer b.putBuf(sbBuf)
		sb := *sbBuf
		clear(sb) // the kernels read the padding columns
		s, bias := sb[:gatherChunk*gpad], sb[gatherChunk*gpad:]
		su := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(s))), gatherChunk*groups)
		bu := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(bias))), gatherChunk*groups)
		var wsu, wbu []uint16
		if inPlace {
			wsu, wbu = w.Scales.U16(), w.Biases.U16()
		}
		fetch := gatherFetch(w, rows, hi)
		fetch(lo)
		for c0 := lo; c0 < hi; c0 += gatherChunk {
			c1 := min(c0+gatherChunk, hi)
			fetch(c1)
			n := c1 - c0
			for k := c0; k < c1; k++ {
				j, i := int(rows[k]), k-c0
				copy(wb[i*ws:(i+1)*ws], w.W.Data[j*ws:(j+1)*ws])
				if inPlace {
					copy(su[i*groups:(i+1)*groups], wsu[j*groups:(j+1)*groups])
					copy(bu[i*groups:(i+1)*groups], wbu[j*groups:(j+1)*groups])
				} else {
					convertRows(s[i*gpad:], w.Scales, j, 1, groups, gpad, true)
					convertRows(bias[i*gpad:], w.Biases, j, 1, groups, gpad, true)
				}
			}
			half := n / 2 // row k pairs with row k+half, as in matmulQuantSIMD
			if inPlace {
				qmatSplitBF16SIMD(w.Bits, gs, &wb[0], &su[0], &bu[0], &xq[0], &xs[0], &dst[c0],
					n, groups, gpad, ws, sx, pf, half*ws, half*groups*2, half*4)
			} else {
				qmatSplitSIMD(w.Bits, gs, &wb[0], &s[0], &bias[0], &xq[0], &xs[0], &dst[c0],
					n, groups, gpad, ws, sx, pf, half*ws, half*gpad*4, half*4)
			}
		}
	})
	return true
}

// gatherFetch returns a function that prefetches the weight rows of the
// chunk of rows that starts at index c0 (and ends by hi).
func gatherFetch(w *tensor.Matrix, rows []int32, hi int) func(c0 int) {
	ws := w.In * w.Bits / 8
	lines := (ws + 63) / 64
	return func(c0 int) {
		for k := c0; k < min(c0+gatherChunk, hi); k++ {
			prefetchLines(&w.W.Data[int(rows[k])*ws], lines)
		}
	}
}
