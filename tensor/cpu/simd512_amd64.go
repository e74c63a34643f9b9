//go:build amd64

package cpu

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/cpu"

	"mlxchat/tensor"
)

//go:generate go run gen_kernels512.go
//go:generate go run gen_sparse.go

// haveAVX512 reports whether the AVX-512 decode kernels can run here: they
// need AVX-512 F and BW (word shifts and masked word loads), VNNI
// (VPDPBUSD, VPDPWSSD) and the AVX2/FMA/F16C set the rest of the backend uses.
func haveAVX512() bool {
	return haveSIMD() && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL &&
		cpu.X86.HasAVX512VNNI
}

// qzArgs is what the AVX-512 decode kernels read (and partly update) for
// one run over consecutive output rows. Offsets are fixed in
// gen_kernels512.go; TestQzArgsLayout keeps the two in step.
type qzArgs struct {
	w       unsafe.Pointer // packed weights of the first row
	s       unsafe.Pointer // scales of the first row (BF16, F16 or F32)
	bsoff   uintptr        // biases minus scales, in bytes (same dtype)
	xq      unsafe.Pointer // x in the block layout for the width (xlayout.go)
	sxs     unsafe.Pointer // per 16 groups: 16 x scales then 16 group sums
	sxsEnd  uintptr        // sxs plus 128 bytes per full 16-group chunk
	c       unsafe.Pointer // scratch: 4 rows of cstride bytes (+64 slack)
	dst     unsafe.Pointer // one float per row
	rows    int
	wstride int    // bytes between weight rows
	sstride int    // bytes between scale rows
	cstride int    // bytes between c rows: 64 per 16 groups
	blocks  int    // full 128-element blocks per row
	tail    int    // 1 when a partial block follows
	gmask   uint64 // lanes of the last, partial 16-group chunk (0: none)
	wmask0  uint64 // words loaded from the first 64 bytes of the partial block
	wmask1  uint64 // and from the second (8 bits only)
	sfmt    int    // scale dtype: 0 BF16, 1 F16, 2 F32
	pf4     int    // prefetch distance of the 4-row passes, bytes
	pf1     int    // and of the single-row passes
	wfull   int    // blocks · bytes per block
}

// The kernels: bits 4 or 8, group size 32, 64 or 128 (kernels512_amd64.s).

//go:noescape
func qz4g32(a *qzArgs)

//go:noescape
func qz4g64(a *qzArgs)

//go:noescape
func qz4g128(a *qzArgs)

//go:noescape
func qz8g32(a *qzArgs)

//go:noescape
func qz8g64(a *qzArgs)

//go:noescape
func qz8g128(a *qzArgs)

// The x quantizers: xzQuantize for whole 128-element blocks, rounding
// halfway cases to even (the error bound is the same).

//go:noescape
func xzq4g32(x *float32, xq *byte, sxs *float32, blocks int)

//go:noescape
func xzq4g64(x *float32, xq *byte, sxs *float32, blocks int)

//go:noescape
func xzq4g128(x *float32, xq *byte, sxs *float32, blocks int)

//go:noescape
func xzq8g32(x *float32, xq *byte, sxs *float32, blocks int)

//go:noescape
func xzq8g64(x *float32, xq *byte, sxs *float32, blocks int)

//go:noescape
func xzq8g128(x *float32, xq *byte, sxs *float32, blocks int)

// xzQuantize512 is xzQuantize with the whole blocks done by the AVX-512
// quantizer and the groups after them in Go.
func xzQuantize512(xq []byte, sxs []float32, x []float32, gs, bits int) {
	blocks := len(x) / 128
	if blocks > 0 {
		_ = xq[blocks*xzBlockBytes(bits)-1]
		_ = sxs[((blocks*128/gs)-1)/16*32+31]
		q := xzq4g32
		switch {
		case bits == 4 && gs == 64:
			q = xzq4g64
		case bits == 4 && gs == 128:
			q = xzq4g128
		case bits == 8 && gs == 32:
			q = xzq8g32
		case bits == 8 && gs == 64:
			q = xzq8g64
		case bits == 8 && gs == 128:
			q = xzq8g128
		}
		q(&x[0], &xq[0], &sxs[0], blocks)
	}
	xzQuantizeFrom(xq, sxs, x, gs, bits, blocks*128/gs)
}

// qzSupported reports whether there is a decode kernel for bits and group
// size gs.
func qzSupported(bits, gs int) bool {
	return (bits == 4 || bits == 8) && (gs == 32 || gs == 64 || gs == 128)
}

// runQz runs the decode kernel for bits and group size gs on a. It calls
// the kernels directly, not through a function value: through
// one, a would escape and every call would allocate it.
func runQz(bits, gs int, a *qzArgs) {
	switch {
	case bits == 4 && gs == 32:
		qz4g32(a)
	case bits == 4 && gs == 64:
		qz4g64(a)
	case bits == 4 && gs == 128:
		qz4g128(a)
	case bits == 8 && gs == 32:
		qz8g32(a)
	case bits == 8 && gs == 64:
		qz8g64(a)
	case bits == 8 && gs == 128:
		qz8g128(a)
	default:
		panic(fmt.Sprintf("cpu: no AVX-512 decode kernel for %d bits, group size %d", bits, gs))
	}
}

// scaleFormat is the kernels' code for the scales' dtype, or -1.
func scaleFormat(w *tensor.Matrix) int {
	if w.Scales.DType != w.Biases.DType {
		return -1
	}
	switch w.Scales.DType {
	case tensor.BF16:
		return 0
	case tensor.F16:
		return 1
	case tensor.F32:
		return 2
	}
	return -1
}

// canAVX512 reports whether matvec512 handles w.
func canAVX512(w *tensor.Matrix) bool {
	return qzSupported(w.Bits, w.GroupSize) && scaleFormat(w) >= 0
}

// qzPrepare splits one row x into the block layout (xzQuantize512) in
// scratch and returns the decode kernels' arguments for it and w, and the
// function that hands the scratch back once the kernels are done.
func (b *Backend) qzPrepare(x []float32, w *tensor.Matrix) (qzArgs, func()) {
	in, gs := w.In, w.GroupSize
	n := xzLen(in, w.Bits)
	xqBuf := b.getBuf(n / 4)
	xq := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(*xqBuf))), n)
	sxsBuf := b.getBuf(sxsLen(in / gs))
	sxs := *sxsBuf
	xzQuantize512(xq, sxs, x, gs, w.Bits)
	return qzSetup(w, xq, sxs), func() {
		b.putBuf(xqBuf)
		b.putBuf(sxsBuf)
	}
}

// matvec512 computes dst[o] = x·w[o] for one row x with the AVX-512
// kernels: x is quantized per group into limbs (xzQuantize), the workers
// walk contiguous ranges of output rows (pool.stream) and the kernel runs
// four rows per pass so a block of x is loaded once for four weight rows.
func (b *Backend) matvec512(dst, x []float32, w *tensor.Matrix) {
	a, release := b.qzPrepare(x, w)
	defer release()
	scratch := make([]*[]float32, b.threads)
	b.streamRows(w.Out, a.wstride+2*a.sstride, func(worker, lo, hi int) {
		if scratch[worker] == nil {
			scratch[worker] = b.getBuf(qzScratchLen(a))
		}
		t := qzRange(a, w, lo, hi, *scratch[worker], dst)
		runQz(w.Bits, w.GroupSize, &t)
	})
	for _, c := range scratch {
		if c != nil {
			b.putBuf(c)
		}
	}
}

// matvecRows512 is matvec512 for the rows of w listed in rows
// (ascending), writing dst[k] = x·w[rows[k]]. Each worker copies its rows,
// gatherChunk at a time, with their scales and biases into one contiguous
// block in scratch and runs the kernel over the block: alone, a row takes
// the single-row pass, which loads and widens x for every row where the
// four-row pass shares that work (2.7x the time per row).
func (b *Backend) matvecRows512(dst, x []float32, w *tensor.Matrix, rows []int32) {
	a, release := b.qzPrepare(x, w)
	defer release()
	ws, ss := a.wstride, a.sstride
	b.pool.splitParts(len(rows), 16, 4*b.threads, func(lo, hi int) {
		cBuf := b.getBuf(qzScratchLen(a))
		defer b.putBuf(cBuf)
		blockBytes := gatherChunk * (ws + 2*ss)
		gBuf := b.getBuf((blockBytes + 3) / 4)
		defer b.putBuf(gBuf)
		blk := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(*gBuf))), blockBytes)
		wb, sb, bb := blk[:gatherChunk*ws], blk[gatherChunk*ws:gatherChunk*(ws+ss)], blk[gatherChunk*(ws+ss):]
		wd, sd, bd := w.W.Data, w.Scales.Data, w.Biases.Data
		t := a
		t.bsoff = uintptr(gatherChunk * ss)
		t.c = unsafe.Pointer(unsafe.SliceData(*cBuf))
		t.w = unsafe.Pointer(unsafe.SliceData(wb))
		t.s = unsafe.Pointer(unsafe.SliceData(sb))
		fetch := gatherFetch(w, rows, hi)
		fetch(lo)
		for c0 := lo; c0 < hi; c0 += gatherChunk {
			c1 := min(c0+gatherChunk, hi)
			fetch(c1)
			for k := c0; k < c1; k++ {
				j, i := int(rows[k]), k-c0
				copy(wb[i*ws:(i+1)*ws], wd[j*ws:(j+1)*ws])
				copy(sb[i*ss:(i+1)*ss], sd[j*ss:(j+1)*ss])
				copy(bb[i*ss:(i+1)*ss], bd[j*ss:(j+1)*ss])
			}
			u := t
			u.rows = c1 - c0
			u.dst = unsafe.Pointer(&dst[c0])
			runQz(w.Bits, w.GroupSize, &u)
		}
	})
}

// qzScratchLen is the float length of a worker's c buffer for a.
func qzScratchLen(a qzArgs) int { return (4*a.cstride + 64) / 4 }

// qzSetup fills the arguments of the decode kernels for w and x already
// in the block layout (xq, sxs) that every worker shares.
func qzSetup(w *tensor.Matrix, xq []byte, sxs []float32) qzArgs {
	in, gs, bits := w.In, w.GroupSize, w.Bits
	groups := in / gs
	chunks := (groups + 15) / 16
	tailElems := in % 128
	var a qzArgs
	a.wstride = in * bits / 8
	a.sstride = groups * w.Scales.DType.Size()
	a.cstride = chunks * 64
	a.blocks = in / 128
	a.wfull = a.blocks * 128 * bits / 8
	if tailElems > 0 {
		a.tail = 1
		if bits == 4 {
			a.wmask0 = 1<<(tailElems/4) - 1
		} else {
			a.wmask0 = 1<<(min(tailElems, 64)/2) - 1
			a.wmask1 = 1<<(max(tailElems-64, 0)/2) - 1
		}
	}
	if r := groups % 16; r != 0 {
		a.gmask = 1<<r - 1
	}
	a.sfmt = scaleFormat(w)
	// Weights are prefetched two 4-row passes ahead into L2 only: into L1
	// the lines evicted x's limbs and each other before use. With the
	// 4-bit byte-limb kernels, L1 prefetches for 2048-wide x (as there
	// were before, when x and the lines ahead fit in L1) made E2B's
	// 2048-wide products 30-40% slower on one thread; with the int16
	// kernels and on two threads they cost 3-10% (BenchmarkQuantMatVec).
	a.pf4 = 8 * a.wstride
	a.pf1 = 2 * a.wstride
	a.xq = unsafe.Pointer(unsafe.SliceData(xq))
	a.sxs = unsafe.Pointer(unsafe.SliceData(sxs))
	a.sxsEnd = uintptr(a.sxs) + uintptr(groups/16*128)
	sData, bData := w.Scales.Data, w.Biases.Data
	a.bsoff = uintptr(unsafe.Pointer(unsafe.SliceData(bData))) - uintptr(unsafe.Pointer(unsafe.SliceData(sData)))
	return a
}

// qzRange returns a for output rows [lo, hi) with scratch c (at least
// qzScratchLen(a) floats), writing dst[lo:hi].
func qzRange(a qzArgs, w *tensor.Matrix, lo, hi int, c, dst []float32) qzArgs {
	a.rows = hi - lo
	a.w = unsafe.Pointer(&w.W.Data[lo*a.wstride])
	a.s = unsafe.Pointer(&w.Scales.Data[lo*a.sstride])
	a.c = unsafe.Pointer(unsafe.SliceData(c))
	a.dst = unsafe.Pointer(&dst[lo])
	return a
}

// Prefill kernels (kernels512_amd64.s): dqz4/dqz8 dequantize tiles of
// weights to float32, sgemm4x5 multiplies them with float x.

//go:noescape
func dqz4(w *byte, s, b, dst *float32, groups, steps int)

//go:noescape
func dqz8(w *byte, s, b, dst *float32, groups, steps int)

// dequantTile writes rows [t0, t0+rows) of w as float32 rows of stride ld
// into wt (dqz4's order for 4 bits) and zeroes the padding rows up to cols.
// s and bias are scratch for rows·groups scales and biases.
func dequantTile(wt, s, bias []float32, w *tensor.Matrix, t0, rows, cols, ld int) {
	dequantTileWith(dqz4, dqz8, wt, s, bias, w, t0, rows, cols, ld)
}

// dequantTileWith is dequantTile with the row kernels dq4 (4 bits) and dq8.
func dequantTileWith(dq4, dq8 dequantKernel, wt, s, bias []float32, w *tensor.Matrix, t0, rows, cols, ld int) {
	groups := w.In / w.GroupSize
	dq := dq8
	if w.Bits == 4 {
		dq = dq4
	}
	wstride := w.In * w.Bits / 8
	convertRows(s, w.Scales, t0, rows, groups, groups, true)
	convertRows(bias, w.Biases, t0, rows, groups, groups, true)
	for r := 0; r < rows; r++ {
		dq(&w.W.Data[(t0+r)*wstride], &s[r*groups], &bias[r*groups], &wt[r*ld], groups, w.GroupSize/32)
	}
	clear(wt[rows*ld : cols*ld])
}

//go:noescape
func sgemm4x5(x *float32, xstride int, w *float32, wstride, k int, c *float32, cstride, accumulate int)

// permute32 lays out each block of 32 values of x as its 16 even-indexed
// values then its 16 odd-indexed ones, the order dqz4 writes weights in.
func permute32(p, x []float32) {
	for blk := 0; blk+32 <= len(x); blk += 32 {
		src := x[blk : blk+32 : blk+32]
		dst := p[blk : blk+32 : blk+32]
		for i := 0; i < 16; i++ {
			dst[i] = src[2*i]
			dst[16+i] = src[2*i+1]
		}
	}
}

// sgemmK is the slice of the inner dimension one pass of sgemm4x5 covers:
// five weight rows of it (20 KiB) stay in L1 while every x row passes
// (measured best among 512-2048 on 2048-wide rows).
const sgemmK = 1024

// matmul512 computes dst[n, out] = x·wᵀ for n > 1 with float arithmetic,
// like the AVX2 path: each worker dequantizes tiles of weight rows that fit
// in L2 to float32 (w = s·q + b, AVX-512) and multiplies all x rows with
// them by 4x5 register blocks over slices of the inner dimension.
func (b *Backend) matmul512(dst, x []float32, n int, w *tensor.Matrix) {
	if n >= 16 {
		b.matmul512Panels(dst, x, n, w)
		return
	}
	in, out, gs, bits := w.In, w.Out, w.GroupSize, w.Bits
	groups := in / gs
	nPad := (n + 3) &^ 3
	ld := in + 16 // row stride of x and of the weight tile: see matmul512Panels
	xpBuf := b.getBuf(nPad * ld)
	defer b.putBuf(xpBuf)
	xp := *xpBuf
	for r := 0; r < n; r++ {
		if bits == 4 {
			permute32(xp[r*ld:r*ld+in], x[r*in:(r+1)*in])
		} else {
			copy(xp[r*ld:r*ld+in], x[r*in:(r+1)*in])
		}
	}
	clear(xp[n*ld:])
	tile := max(5, (256<<10)/(in*4)/5*5)
	b.pool.splitParts(out, 5, 4*b.threads, func(lo, hi int) {
		rowsMax := min(tile, (hi-lo+4)/5*5)
		wtBuf := b.getBuf(rowsMax * ld)
		defer b.putBuf(wtBuf)
		wt := *wtBuf
		sbBuf := b.getBuf(2 * rowsMax * groups)
		defer b.putBuf(sbBuf)
		s, bias := (*sbBuf)[:rowsMax*groups], (*sbBuf)[rowsMax*groups:]
		cBuf := b.getBuf(nPad * rowsMax)
		defer b.putBuf(cBuf)
		c := *cBuf
		for t0 := lo; t0 < hi; t0 += rowsMax {
			rows := min(rowsMax, hi-t0)
			cols := (rows + 4) / 5 * 5
			dequantTile(wt, s, bias, w, t0, rows, cols, ld)
			for k0 := 0; k0 < in; k0 += sgemmK {
				kl := min(sgemmK, in-k0)
				acc := 0
				if k0 > 0 {
					acc = 1
				}
				for j0 := 0; j0 < cols; j0 += 5 {
					for i0 := 0; i0 < nPad; i0 += 4 {
						sgemm4x5(&xp[i0*ld+k0], ld*4, &wt[j0*ld+k0], ld*4, kl, &c[i0*cols+j0], cols*4, acc)
					}
				}
			}
			for r := 0; r < n; r++ {
				copy(dst[r*out+t0:r*out+t0+rows], c[r*cols:r*cols+rows])
			}
		}
	})
}

//go:noescape
func sgemm12x16(xt *float32, pstride int, w *float32, wstride, k int, c *float32, cstride, accumulate int)

//go:noescape
func sgemm12x32(xt *float32, pstride int, w *float32, wstride, k int, c *float32, cstride, accumulate int)

// dequantKernel writes one weight row as float32 (dqz4/dqz8, dq4AVX/dq8AVX).
type dequantKernel func(w *byte, s, b, dst *float32, groups, steps int)

// sgemmKernel multiplies a block of dequantized weight rows with one or
// two x panels (sgemm12x16/sgemm12x32, sgemm6x16AVX).
type sgemmKernel func(xt *float32, pstride int, w *float32, wstride, k int, c *float32, cstride, accumulate int)

// panelKernels is one instruction set's kernels for matmulPanels: block
// weight rows per register block; pair covers two panels (nil: none),
// single one panel.
type panelKernels struct {
	block        int
	dq4, dq8     dequantKernel
	pair, single sgemmKernel
}

// panels512 are the AVX-512 panel kernels: 12 weight rows by two panels
// of 16 x rows (24 of the 32 zmm registers accumulate).
var panels512 = panelKernels{block: 12, dq4: dqz4, dq8: dqz8, pair: sgemm12x32, single: sgemm12x16}

// panelsAVX2 are the AVX2 ones: 6 weight rows by one panel of 16 x rows
// (12 of the 16 ymm registers accumulate).
var panelsAVX2 = panelKernels{block: 6, dq4: dq4AVX, dq8: dq8AVX, single: sgemm6x16AVX}

// matmul512Panels is matmul512 for 16 or more x rows.
func (b *Backend) matmul512Panels(dst, x []float32, n int, w *tensor.Matrix) {
	b.matmulPanels(dst, x, n, w, panels512)
}

// matmulPanels multiplies 16 or more x rows by a quantized matrix with
// float arithmetic: x is transposed once into panels of 16 rows (16
// floats per inner index), each worker dequantizes tiles of weight rows
// that fit in L2 to float32 (w = s·q + b) and the block kernel broadcasts
// each weight and multiplies whole panels, with no horizontal sums;
// results of a tile are transposed into dst. The group size must be a
// multiple of 32.
func (b *Backend) matmulPanels(dst, x []float32, n int, w *tensor.Matrix, kern panelKernels) {
	in, out, gs, bits := w.In, w.Out, w.GroupSize, w.Bits
	jb := kern.block
	groups := in / gs
	nPad := (n + 15) &^ 15
	panels := nPad / 16
	// Panel and weight-row strides are padded by 64 bytes: at power-of-two
	// strides the twelve weight rows and the panels fall into one L1 set
	// and evict each other (the kernel ran at 86 instead of 231 GFLOP/s).
	pst := in*16 + 16
	xtBuf := b.getBuf(panels * pst)
	defer b.putBuf(xtBuf)
	xt := *xtBuf
	// Panels are independent: every thread builds some (a serial
	// transposition left the other core idle for ~6% of a prefill).
	b.pool.split(panels, 1, func(lo, hi int) {
		rowBuf := b.getBuf(16 * in)
		defer b.putBuf(rowBuf)
		rows := *rowBuf
		for p := lo; p < hi; p++ {
			for rr := 0; rr < 16; rr++ {
				r, row := p*16+rr, rows[rr*in:(rr+1)*in]
				switch {
				case r >= n:
					clear(row)
				case bits == 4:
					permute32(row, x[r*in:(r+1)*in])
				default:
					copy(row, x[r*in:(r+1)*in])
				}
			}
			interleave16(xt[p*pst:p*pst+in*16], rows, in)
		}
	})
	// Slices of the inner dimension keep every panel's part in L2 (and
	// cover whole groups). The loop over slices is outside the loop over
	// weight rows: each block of jb rows is dequantized for one slice only
	// (it stays in L1 while all panels pass), and the panels' parts of a
	// slice stay in L2 for a whole span of rows. With whole rows per tile
	// (what fits in L2: 6 rows of 8192) every tile streamed all of x's
	// panels from L3 again, and the 8192-wide down projection ran at half
	// the rate of the 2048-wide ones.
	kslice := min(in, max(64, (256<<10)/(nPad*4)&^15))
	kslice = max(gs, kslice/gs*gs)
	ldw := kslice + 16
	b.pool.splitParts(out, jb, 4*b.threads, func(lo, hi int) {
		// c collects a span of rows (up to 1 MiB) before they are
		// written out, so each dst row gets whole cache lines at once
		// rather than a 12- or 24-float piece per block (partial lines,
		// shared with the neighbouring block of another thread).
		span := max(jb, (1<<18)/nPad/jb*jb)
		span = min(span, (hi-lo+jb-1)/jb*jb)
		wtBuf := b.getBuf(jb * ldw)
		defer b.putBuf(wtBuf)
		wt := *wtBuf
		sbBuf := b.getBuf(2 * span * groups)
		defer b.putBuf(sbBuf)
		s, bias := (*sbBuf)[:span*groups], (*sbBuf)[span*groups:]
		cBuf := b.getBuf(span * nPad)
		defer b.putBuf(cBuf)
		c := *cBuf
		dq := kern.dq8
		if bits == 4 {
			dq = kern.dq4
		}
		wstride := in * bits / 8
		for s0 := lo; s0 < hi; s0 += span {
			s1 := min(hi, s0+span)
			convertRows(s, w.Scales, s0, s1-s0, groups, groups, true)
			convertRows(bias, w.Biases, s0, s1-s0, groups, groups, true)
			for k0 := 0; k0 < in; k0 += kslice {
				kl := min(kslice, in-k0)
				g0, ng := k0/gs, kl/gs
				acc := 0
				if k0 > 0 {
					acc = 1
				}
				for j0 := s0; j0 < s1; j0 += jb {
					rows := min(jb, s1-j0)
					for r := 0; r < rows; r++ {
						sg := (j0-s0+r)*groups + g0
						dq(&w.W.Data[(j0+r)*wstride+k0*bits/8], &s[sg], &bias[sg], &wt[r*ldw], ng, gs/32)
					}
					clear(wt[rows*ldw : jb*ldw])
					cj := c[(j0-s0)*nPad:]
					p := 0
					if kern.pair != nil {
						for ; p+2 <= panels; p += 2 {
							kern.pair(&xt[p*pst+k0*16], pst*4, &wt[0], ldw*4, kl, &cj[p*16], nPad*4, acc)
						}
					}
					for ; p < panels; p++ {
						kern.single(&xt[p*pst+k0*16], pst*4, &wt[0], ldw*4, kl, &cj[p*16], nPad*4, acc)
					}
				}
			}
			tileOut(dst, c, n, out, s0, s1-s0, nPad)
		}
	})
}

// tileOut writes results c (weight row j's values for x rows 0..nPad-1 at
// c[j*nPad:]) into dst [n, out] at columns t0..t0+rows-1, in blocks of 64
// columns so the strided reads of c stay in cache.
func tileOut(dst, c []float32, n, out, t0, rows, nPad int) {
	for j0 := 0; j0 < rows; j0 += 64 {
		tileOutBlock(dst, c[j0*nPad:], n, out, t0+j0, min(64, rows-j0), nPad)
	}
}

// tileOutBlock is tileOut for one block of columns. Eight x rows go
// together: each weight row gives one contiguous read of 8 values, and
// the eight dst rows are written sequentially side by side.
func tileOutBlock(dst, c []float32, n, out, t0, rows, nPad int) {
	r := 0
	for ; r+8 <= n; r += 8 {
		d0 := dst[(r+0)*out+t0 : (r+0)*out+t0+rows]
		d1 := dst[(r+1)*out+t0 : (r+1)*out+t0+rows]
		d2 := dst[(r+2)*out+t0 : (r+2)*out+t0+rows]
		d3 := dst[(r+3)*out+t0 : (r+3)*out+t0+rows]
		d4 := dst[(r+4)*out+t0 : (r+4)*out+t0+rows]
		d5 := dst[(r+5)*out+t0 : (r+5)*out+t0+rows]
		d6 := dst[(r+6)*out+t0 : (r+6)*out+t0+rows]
		d7 := dst[(r+7)*out+t0 : (r+7)*out+t0+rows]
		for j := range d0 {
			cj := c[j*nPad+r : j*nPad+r+8 : j*nPad+r+8]
			d0[j], d1[j], d2[j], d3[j] = cj[0], cj[1], cj[2], cj[3]
			d4[j], d5[j], d6[j], d7[j] = cj[4], cj[5], cj[6], cj[7]
		}
	}
	for ; r < n; r++ {
		drow := dst[r*out+t0 : r*out+t0+rows]
		for j := range drow {
			drow[j] = c[j*nPad+r]
		}
	}
}

// interleave16 writes panel[k*16+r] = rows[r*in+k] for r < 16, k < in:
// one whole 64-byte line of the panel per k.
func interleave16(panel, rows []float32, in int) {
	r0, r1, r2, r3 := rows[0*in:1*in], rows[1*in:2*in], rows[2*in:3*in], rows[3*in:4*in]
	r4, r5, r6, r7 := rows[4*in:5*in], rows[5*in:6*in], rows[6*in:7*in], rows[7*in:8*in]
	r8, r9, r10, r11 := rows[8*in:9*in], rows[9*in:10*in], rows[10*in:11*in], rows[11*in:12*in]
	r12, r13, r14, r15 := rows[12*in:13*in], rows[13*in:14*in], rows[14*in:15*in], rows[15*in:16*in]
	for k := range r0 {
		d := panel[k*16 : k*16+16 : k*16+16]
		d[0], d[1], d[2], d[3] = r0[k], r1[k], r2[k], r3[k]
		d[4], d[5], d[6], d[7] = r4[k], r5[k], r6[k], r7[k]
		d[8], d[9], d[10], d[11] = r8[k], r9[k], r10[k], r11[k]
		d[12], d[13], d[14], d[15] = r12[k], r13[k], r14[k], r15[k]
	}
}

// spcol4AVX512 is colBlockGo for 4-bit columns: y[0:128] from the groups
// of one row's list, block base q, scales s and biases b of the block's
// first output, float32 or (half != 0) bfloat16 (sparse_amd64.s, written
// by gen_sparse.go).
//
//go:noescape
func spcol4AVX512(y *float32, q *byte, qstride uintptr, s, b unsafe.Pointer, sstride uintptr, idx *int32, val *float32, grp *spGroup, ngrp, half int)
