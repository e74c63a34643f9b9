//go:build arm64

package cpu

import (
	"math"
	"unsafe"

	"mlxchat/tensor"
)

// On arm64 the "SIMD" kernel level is NEON (Advanced SIMD, present on
// every arm64 CPU): kernels_arm64.s does the quantized matvec/matmul rows,
// the dot products and axpy of attention and dense matmul, and the BF16
// and F16 widening; the functions below keep the contracts of their
// AVX2 counterparts in simd_amd64.go, so matmul.go and attention.go use
// them unchanged and the same tests check both. There is no AVX-512
// level here.

func haveSIMD() bool { return true }

func haveAVX512() bool { return false }

func canAVX512(w *tensor.Matrix) bool { return false }

func (b *Backend) matvec512(dst, x []float32, w *tensor.Matrix) {
	panic("cpu: AVX-512 kernel called on arm64")
}

func (b *Backend) matvecRows512(dst, x []float32, w *tensor.Matrix, rows []int32) {
	panic("cpu: AVX-512 kernel called on arm64")
}

// prefetchLines does nothing here (amd64 prefetches).
func prefetchLines(p *byte, n int) {}

func (b *Backend) matmul512(dst, x []float32, n int, w *tensor.Matrix) {
	panic("cpu: AVX-512 kernel called on arm64")
}

//go:noescape
func dotNEON(a, b *float32, n int) float32

//go:noescape
func axpyNEON(dst, src *float32, a float32, n int)

//go:noescape
func cvtBF16NEON(dst *float32, src *uint16, n int)

//go:noescape
func cvtF16NEON(dst *float32, src *uint16, n int)

//go:noescape
func q4dotNEON(w *byte, s, x *float32, groups, steps int) float32

//go:noescape
func q8dotNEON(w *byte, s, x *float32, groups, steps int) float32

//go:noescape
func q4x4NEON(w *byte, s, x *float32, xstride, groups, steps int, out *[4]float32)

//go:noescape
func q8x4NEON(w *byte, s, x *float32, xstride, groups, steps int, out *[4]float32)

//go:noescape
func qi4dotNEON(w *byte, s *float32, xq *int16, sx *float32, groups, blocks int) float32

//go:noescape
func qi8dotNEON(w *byte, s *float32, xq *int16, sx *float32, groups, blocks int) float32

// spinPause is a YIELD instruction: a polite busy-wait step.
//
//go:noescape
func spinPause()

func addF(p *float32, bytes int) *float32 { return (*float32)(unsafe.Add(unsafe.Pointer(p), bytes)) }

// biasDot is Σ_g b[g]·xs[g] over gpad (a multiple of 8) values.
func biasDot(b, xs *float32, gpad int) float32 {
	return dotSIMD(unsafe.Slice(b, gpad), unsafe.Slice(xs, gpad))
}

// qmat4SIMD: for each of rows output rows (weights wstride bytes apart,
// scales and biases rows of gpad floats) and each of four x rows (xstride
// bytes apart, permuted by permute16 for 4 bits; group sums xsstride
// apart), dst[r][t] = Σ_g s·(Σ q·x) + Σ_g b·xs, dst rows dstride bytes
// apart. steps is the group size / 16.
func qmat4SIMD(bits int, w *byte, s, b, x, xs, dst *float32, rows, groups, gpad, steps, wstride, dstride, xstride, xsstride int) {
	for t := range rows {
		wt := (*byte)(unsafe.Add(unsafe.Pointer(w), t*wstride))
		st, bt := addF(s, 4*t*gpad), addF(b, 4*t*gpad)
		var q [4]float32
		if bits == 4 {
			q4x4NEON(wt, st, x, xstride, groups, steps, &q)
		} else {
			q8x4NEON(wt, st, x, xstride, groups, steps, &q)
		}
		for r := range 4 {
			*addF(dst, r*dstride+4*t) = q[r] + biasDot(bt, addF(xs, r*xsstride), gpad)
		}
	}
}

// qmatSplitSIMD is the two-level decode form on NEON. xsplitSIMD put the
// hi limbs of the row in the first groups·gs int16s of xq and the lo
// limbs after them, each in the layout qi4dotNEON/qi8dotNEON read, so a
// row is one exact integer pass per limb: dst[t] = sx·Σ_g s·(Σ q·hi) +
// (sx/32768)·Σ_g s·(Σ q·lo) + Σ_g b·xs. The row-pairing and prefetch
// arguments of the AVX2 kernels (pf, pw, ps, pd) do not apply here.
func qmatSplitSIMD(bits, gs int, w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int) {
	var hiBuf, loBuf [512]float32
	sxHi, sxLo := hiBuf[:], loBuf[:]
	if groups > len(hiBuf) {
		sxHi, sxLo = make([]float32, groups), make([]float32, groups)
	}
	sxHi, sxLo = sxHi[:groups], sxLo[:groups]
	for g := range sxHi {
		sxHi[g], sxLo[g] = sx, sx/32768
	}
	lo := (*int16)(unsafe.Add(unsafe.Pointer(xq), 2*groups*gs))
	for t := range rows {
		wt := (*byte)(unsafe.Add(unsafe.Pointer(w), t*wstride))
		st, bt := addF(s, 4*t*gpad), addF(b, 4*t*gpad)
		var q float32
		if bits == 4 {
			q = qi4dotNEON(wt, st, xq, &sxHi[0], groups, gs/32) + qi4dotNEON(wt, st, lo, &sxLo[0], groups, gs/32)
		} else {
			q = qi8dotNEON(wt, st, xq, &sxHi[0], groups, gs/16) + qi8dotNEON(wt, st, lo, &sxLo[0], groups, gs/16)
		}
		*addF(dst, 4*t) = q + biasDot(bt, xs, gpad)
	}
}

// xstatsSIMD writes the group sums of one row x into xs[:len(x)/gs] and
// returns max |x|.
func xstatsSIMD(xs, x []float32, gs int) float32 {
	var mx float32
	for g := range len(x) / gs {
		var sum float32
		for _, v := range x[g*gs : (g+1)*gs] {
			sum += v
			mx = max(mx, abs32(v))
		}
		xs[g] = sum
	}
	return mx
}

// xsplitSIMD splits x (a multiple of 32 long) into its hi limbs, written
// to xq[:len(x)], and its lo limbs, written to xq[len(x):2·len(x)]
// (xsplitGo's arithmetic), each per 32 elements in the order the NEON
// decode kernels read: for 4 bits the 16 even-indexed elements then the
// 16 odd ones, for 8 bits the natural order.
func xsplitSIMD(xq []int16, x []float32, bits int, scale float32) {
	n := len(x)
	hi, lo := xq[:n:n], xq[n:2*n:2*n]
	for blk := 0; blk+32 <= n; blk += 32 {
		for i, v := range x[blk : blk+32] {
			j := blk + i
			if bits == 4 {
				j = blk + (i&1)*16 + i>>1
			}
			t := float32(v * scale) // rounded here: no fused multiply-add with the lo limb below
			h := float32(math.RoundToEven(float64(t)))
			hi[j] = int16(h)
			lo[j] = int16(math.RoundToEven(float64((t - h) * 32768)))
		}
	}
}

// splitLimbIndex is where xsplitSIMD puts the hi and lo limbs of element
// i of a row of n.
func splitLimbIndex(i, n, bits int) (hi, lo int) {
	j := i
	if bits == 4 {
		blk, k := i&^31, i&31
		j = blk + (k&1)*16 + k>>1
	}
	return j, n + j
}

// dotSIMD is dotF32 with the bulk done by dotNEON.
func dotSIMD(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	m := n &^ 15
	var s float32
	if m > 0 {
		s = dotNEON(&a[0], &b[0], m)
	}
	for i := m; i < n; i++ {
		s += a[i] * b[i]
	}
	return s
}

// dot4SIMD computes out[r] = w·x[r*stride:][:len(w)] for r < 4.
func dot4SIMD(out *[4]float32, w, x []float32, stride int) {
	n := len(w)
	_ = x[3*stride+n-1]
	for r := range 4 {
		out[r] = dotSIMD(w, x[r*stride:r*stride+n])
	}
}

// axpySIMD computes dst += a·src.
func axpySIMD(dst, src []float32, a float32) {
	n := len(dst)
	src = src[:n]
	m := n &^ 15
	if m > 0 {
		axpyNEON(&dst[0], &src[0], a, m)
	}
	for i := m; i < n; i++ {
		dst[i] += a * src[i]
	}
}

// dot2SIMD returns dotSIMD(q0, k) and dotSIMD(q1, k), bit for bit.
func dot2SIMD(q0, q1, k []float32) (float32, float32) {
	return dotSIMD(q0[:len(k)], k), dotSIMD(q1[:len(k)], k)
}

// pvSIMD computes dst += Σ_j p[j]·v[j*stride:][:len(dst)] over j in
// order: one axpySIMD per j.
func pvSIMD(dst, p, v []float32, stride int) {
	n := len(dst)
	for j, pj := range p {
		axpySIMD(dst, v[j*stride:j*stride+n], pj)
	}
}

// scaleI8SIMD writes dst[i] = scale·float32(src[i]) for i < len(dst)
// (in Go here: there is no vector form yet).
func scaleI8SIMD(dst []float32, src []int8, scale float32) { scaleI8Go(dst, src, scale) }

// cvtSIMD converts len(dst) BF16 or F16 values to float32.
func cvtSIMD(dst []float32, src []uint16, f16 bool) {
	n := len(dst)
	src = src[:n]
	m := n &^ 7
	if m > 0 {
		if f16 {
			cvtF16NEON(&dst[0], &src[0], m)
		} else {
			cvtBF16NEON(&dst[0], &src[0], m)
		}
	}
	for i := m; i < n; i++ {
		dst[i] = cvt16(src[i], f16)
	}
}

func bytePtr(b []byte) *byte { return (*byte)(unsafe.Pointer(unsafe.SliceData(b))) }

// readBytes XOR-folds b 8 bytes at a time (the tail is ignored).
func readBytes(b []byte) uint64 { return readPortable(b[:len(b)&^127]) }

func tanhScaledSIMD(dst, src []float32, in, out float32) {
	for i := range dst {
		dst[i] = tanhf(src[i]*in) * out
	}
}

func geluSIMD(dst, src []float32) {
	for i := range dst {
		dst[i] = geluTanh(src[i])
	}
}

// matmulPanelsAVX2 exists on amd64 only; here it takes no call.
func (b *Backend) matmulPanelsAVX2(dst, x []float32, n int, w *tensor.Matrix) bool { return false }

// splitBF16 says whether qmatSplitBF16SIMD exists here (amd64 only).
const splitBF16 = false

func qmatSplitBF16SIMD(bits, gs int, w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int) {
	panic("cpu: qmatSplitBF16SIMD called where splitBF16 is false")
}

// expSubSIMD writes dst[i] = e^(src[i]-m) (expf here; the amd64 form is
// vectorized).
func expSubSIMD(dst, src []float32, m float32) { expSubF32(dst, src, m) }

// simdAttnKernels are the attention kernels of the SIMD level here.
func simdAttnKernels() attnKernels { return dotAttnKernels(dot2SIMD, pvSIMD, expSubSIMD) }

func scores512(t *attnTile, k []float32, stride, bn int) {
	panic("cpu: AVX-512 kernel called without AVX-512 support")
}

func pv512(t *attnTile, v []float32, stride, bn int) {
	panic("cpu: AVX-512 kernel called without AVX-512 support")
}

func spcol4AVX512(y *float32, q *byte, qstride uintptr, s, b unsafe.Pointer, sstride uintptr, idx *int32, val *float32, grp *spGroup, ngrp, half int) {
	panic("cpu: AVX-512 kernel called without AVX-512 support")
}

const haveColumnAVX2 = false

func spcol4AVX2(y *float32, q *byte, qstride uintptr, s, b unsafe.Pointer, sstride uintptr, idx *int32, val *float32, grp *spGroup, ngrp, half int) {
	panic("cpu: AVX2 kernel called without AVX2 support")
}

// The elementwise kernels have no NEON forms yet (they are small next to the
// products): they are the Go loops.

func addSIMD(d, x, y []float32)                          { addKernel(d, x, y) }
func mulSIMD(d, x, y []float32)                          { mulKernel(d, x, y) }
func scaleSIMD(d, x []float32, s float32)                { scaleKernel(d, x, s) }
func scaleMulSIMD(d, x, w []float32, s float32)          { scaleMulKernel(d, x, w, s) }
func ropeHalfSIMD(row, cs []float32, half int)           { ropeHalfKernel(row, cs, half) }
func gaussianTopKRowSIMD(dst, x []float32, mult float64) { gaussianTopKRow(dst, x, mult) }
