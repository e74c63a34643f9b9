//go:build amd64

package cpu

import (
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"

	"mlxchat/tensor"
)

// haveSIMD reports whether the AVX2/FMA/F16C kernels can run here.
func haveSIMD() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C }

// Quantized kernels: see kernels_amd64.s. rows output rows starting at w
// (wstride bytes apart), scales s and biases b as float32 rows of gpad,
// and the group sums xs of x; results go to dst[0], dst[1], ... (one float
// per output row). The single-row (decode) kernels take x split into two
// int16 limbs (xsplit4AVX/xsplit8AVX) with the power-of-two scale sx; the
// x4 forms take four float x rows (permuted for 4 bits) xstride bytes
// apart, group sums xsstride apart, and write four dst rows dstride bytes
// apart.

//go:noescape
func q4h32(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

//go:noescape
func q4h64(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

//go:noescape
func q4h128(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

//go:noescape
func q8h32(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

//go:noescape
func q8h64(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

//go:noescape
func q8h128(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

//go:noescape
func xstatsAVX(x, xs *float32, groups, gs int) float32

//go:noescape
func xsplit4AVX(x *float32, xq *int16, n int, scale float32)

//go:noescape
func xsplit8AVX(x *float32, xq *int16, n int, scale float32)

//go:noescape
func q4x4(w *byte, s, b, x, xs, dst *float32, rows, groups, gpad, steps, wstride, dstride, xstride, xsstride int)

//go:noescape
func q8x4(w *byte, s, b, x, xs, dst *float32, rows, groups, gpad, steps, wstride, dstride, xstride, xsstride int)

// Prefill panel kernels (kernels_amd64.s; matmulPanels with panelsAVX2).

//go:noescape
func dq4AVX(w *byte, s, b, dst *float32, groups, steps int)

//go:noescape
func dq8AVX(w *byte, s, b, dst *float32, groups, steps int)

//go:noescape
func sgemm6x16AVX(xt *float32, pstride int, w *float32, wstride, k int, c *float32, cstride, accumulate int)

//go:noescape
func dotAVX(a, b *float32, n int) float32

//go:noescape
func dotx4AVX(w, x *float32, xstride, n int, out *float32)

//go:noescape
func axpyAVX(dst, src *float32, a float32, n int)

//go:noescape
func dot2AVX(k, q0, q1 *float32, n int, out *float32)

//go:noescape
func pvAVX(dst, p, v *float32, vstride, keys, n int)

//go:noescape
func cvtBF16AVX(dst *float32, src *uint16, n int)

//go:noescape
func cvtF16AVX(dst *float32, src *uint16, n int)

//go:noescape
func scaleI8AVX(dst *float32, src *int8, scale float32, n int)

//go:noescape
func addAVX(dst, a, b *float32, n int)

//go:noescape
func sumF64AVX(x *float32, n int) float64

//go:noescape
func sqDevF64AVX(x *float32, n int, mean float64) float64

//go:noescape
func subClampAVX(dst, x *float32, cut float32, n int)

//go:noescape
func mulAVX(dst, a, b *float32, n int)

//go:noescape
func ropeHalfAVX(row, cs *float32, half int)

//go:noescape
func scaleAVX(dst, x *float32, s float32, n int)

//go:noescape
func scaleMulAVX(dst, x, w *float32, s float32, n int)

//go:noescape
func q4h32b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

//go:noescape
func q4h64b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

//go:noescape
func q4h128b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

//go:noescape
func q8h32b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

//go:noescape
func q8h64b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

//go:noescape
func q8h128b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)

// prefetchLines prefetches the n > 0 cache lines from p into L1.
//
//go:noescape
func prefetchLines(p *byte, n int)

// splitBF16 says whether qmatSplitBF16SIMD exists here.
const splitBF16 = true

// qmatSplitBF16SIMD is qmatSplitSIMD with bfloat16 scale and bias rows
// read in place (groups a multiple of 8, gpad == groups; ps in bytes of
// those rows): the same arithmetic, bit for bit.
func qmatSplitBF16SIMD(bits, gs int, w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int) {
	switch {
	case bits == 4 && gs == 32:
		q4h32b(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	case bits == 4 && gs == 64:
		q4h64b(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	case bits == 4 && gs == 128:
		q4h128b(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	case bits == 8 && gs == 32:
		q8h32b(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	case bits == 8 && gs == 64:
		q8h64b(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	case bits == 8 && gs == 128:
		q8h128b(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	default:
		panic("cpu: no two-level kernel for this bits/group size") // callers check first
	}
}

//go:noescape
func expSubAVX(dst, src *float32, m float32, n int)

// expSubSIMD writes dst[i] = e^(src[i]-m) for len(dst) values rounded up
// to a multiple of 8 (both slices need that capacity), for arguments at
// most 0 as softmax has them; eight lanes at a time.
func expSubSIMD(dst, src []float32, m float32) {
	n := (len(dst) + 7) &^ 7
	if n == 0 {
		return
	}
	dst, src = dst[:n], src[:n]
	expSubAVX(&dst[0], &src[0], m, n)
}

// qmatSplitSIMD runs the two-level single-row kernel for bits and group
// size gs.
func qmatSplitSIMD(bits, gs int, w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int) {
	switch {
	case bits == 4 && gs == 32:
		q4h32(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	case bits == 4 && gs == 64:
		q4h64(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	case bits == 4 && gs == 128:
		q4h128(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	case bits == 8 && gs == 32:
		q8h32(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	case bits == 8 && gs == 64:
		q8h64(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	case bits == 8 && gs == 128:
		q8h128(w, s, b, xq, xs, dst, rows, groups, gpad, wstride, sx, pf, pw, ps, pd)
	default:
		panic("cpu: no two-level kernel for this bits/group size") // callers check first
	}
}

// splitLimbIndex is where xsplitSIMD puts the hi and lo limbs of element
// i of a row of n (xsplitGo's layout).
func splitLimbIndex(i, n, bits int) (hi, lo int) {
	blk, k := i&^31, i&31
	j := k
	if bits == 4 {
		j = (k&1)*16 + k>>1
	}
	return 2*blk + j, 2*blk + 32 + j
}

// xstatsSIMD writes the group sums of one row x into xs[:len(x)/gs] and
// returns max |x| (gs a multiple of 8).
func xstatsSIMD(xs, x []float32, gs int) float32 {
	groups := len(x) / gs
	if groups == 0 {
		return 0
	}
	_ = xs[groups-1]
	return xstatsAVX(&x[0], &xs[0], groups, gs)
}

// xsplitSIMD is xsplitGo in assembly: x (a multiple of 32 long) into
// 2·len(x) int16s.
func xsplitSIMD(xq []int16, x []float32, bits int, scale float32) {
	if len(x) == 0 {
		return
	}
	_ = xq[2*len(x)-1]
	if bits == 4 {
		xsplit4AVX(&x[0], &xq[0], len(x), scale)
	} else {
		xsplit8AVX(&x[0], &xq[0], len(x), scale)
	}
}

func qmat4SIMD(bits int, w *byte, s, b, x, xs, dst *float32, rows, groups, gpad, steps, wstride, dstride, xstride, xsstride int) {
	if bits == 4 {
		q4x4(w, s, b, x, xs, dst, rows, groups, gpad, steps, wstride, dstride, xstride, xsstride)
	} else {
		q8x4(w, s, b, x, xs, dst, rows, groups, gpad, steps, wstride, dstride, xstride, xsstride)
	}
}

// dotSIMD is dotF32 with the bulk done by dotAVX.
func dotSIMD(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	m := n &^ 31
	var s float32
	if m > 0 {
		s = dotAVX(&a[0], &b[0], m)
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
	m := n &^ 15
	if m > 0 {
		dotx4AVX(&w[0], &x[0], stride*4, m, &out[0])
	} else {
		*out = [4]float32{}
	}
	for i := m; i < n; i++ {
		for r := 0; r < 4; r++ {
			out[r] += w[i] * x[r*stride+i]
		}
	}
}

// axpySIMD computes dst += a·src.
func axpySIMD(dst, src []float32, a float32) {
	n := len(dst)
	src = src[:n]
	m := n &^ 7
	if m > 0 {
		axpyAVX(&dst[0], &src[0], a, m)
	}
	for i := m; i < n; i++ {
		dst[i] += a * src[i]
	}
}

// gaussianTopKRowSIMD is gaussianTopKRow with AVX: the float64 sums in
// eight lanes, then the clamp.
func gaussianTopKRowSIMD(dst, x []float32, mult float64) {
	n := len(x)
	dst = dst[:n]
	m := n &^ 7
	var sum float64
	if m > 0 {
		sum = sumF64AVX(&x[0], m)
	}
	for _, v := range x[m:] {
		sum += float64(v)
	}
	mean := sum / float64(n)
	var ss float64
	if m > 0 {
		ss = sqDevF64AVX(&x[0], m, mean)
	}
	for _, v := range x[m:] {
		dv := float64(v) - mean
		ss += dv * dv
	}
	cut := float32(mean + math.Sqrt(ss/float64(n))*mult)
	if m > 0 {
		subClampAVX(&dst[0], &x[0], cut, m)
	}
	for i := m; i < n; i++ {
		dst[i] = max(0, x[i]-cut)
	}
}

// addSIMD is addKernel (d = x + y) with AVX.
func addSIMD(d, x, y []float32) { binaryAVX(d, x, y, addAVX, addKernel) }

// mulSIMD is mulKernel (d = x * y) with AVX.
func mulSIMD(d, x, y []float32) { binaryAVX(d, x, y, mulAVX, mulKernel) }

// binaryAVX runs kernel over the whole blocks of eight values of d = x op
// y and loop, its Go form, over the rest.
func binaryAVX(d, x, y []float32, kernel func(dst, a, b *float32, n int), loop func(d, x, y []float32)) {
	n := len(d)
	x, y = x[:n], y[:n]
	m := n &^ 7
	if m > 0 {
		kernel(&d[0], &x[0], &y[0], m)
	}
	loop(d[m:], x[m:], y[m:])
}

// scaleSIMD is scaleKernel (d = x * s) with AVX.
func scaleSIMD(d, x []float32, s float32) {
	n := len(d)
	x = x[:n]
	m := n &^ 7
	if m > 0 {
		scaleAVX(&d[0], &x[0], s, m)
	}
	scaleKernel(d[m:], x[m:], s)
}

// ropeHalfSIMD is ropeHalfKernel with AVX, bit for bit.
func ropeHalfSIMD(row, cs []float32, half int) {
	m := half &^ 7
	if m > 0 {
		_, _ = row[2*half-1], cs[2*half-1]
		ropeHalfAVX(&row[0], &cs[0], half)
	}
	ropeHalfRange(row, cs, half, m)
}

// scaleMulSIMD is scaleMulKernel (d = x * s * w) with AVX.
func scaleMulSIMD(d, x, w []float32, s float32) {
	n := len(d)
	x, w = x[:n], w[:n]
	m := n &^ 7
	if m > 0 {
		scaleMulAVX(&d[0], &x[0], &w[0], s, m)
	}
	scaleMulKernel(d[m:], x[m:], w[m:], s)
}

// dot2SIMD returns dotSIMD(q0, k) and dotSIMD(q1, k), bit for bit, reading
// k once.
func dot2SIMD(q0, q1, k []float32) (float32, float32) {
	n := len(k)
	q0, q1 = q0[:n], q1[:n]
	m := n &^ 31
	var out [2]float32
	if m > 0 {
		dot2AVX(&k[0], &q0[0], &q1[0], m, &out[0])
	}
	for i := m; i < n; i++ {
		out[0] += q0[i] * k[i]
		out[1] += q1[i] * k[i]
	}
	return out[0], out[1]
}

// pvSIMD computes dst += Σ_j p[j]·v[j*stride:][:len(dst)] over j in
// order; the sums are exactly those of one axpySIMD call per j (a zero
// p[j] adds exactly nothing to finite values).
func pvSIMD(dst, p, v []float32, stride int) {
	n, keys := len(dst), len(p)
	if keys == 0 || n == 0 {
		return
	}
	_ = v[(keys-1)*stride+n-1]
	m := n &^ 63
	if m > 0 {
		pvAVX(&dst[0], &p[0], &v[0], stride*4, keys, m)
	}
	if m < n {
		for j, pj := range p {
			axpySIMD(dst[m:], v[j*stride+m:j*stride+n], pj)
		}
	}
}

// cvtSIMD converts len(dst) BF16 or F16 values to float32.
func cvtSIMD(dst []float32, src []uint16, f16 bool) {
	n := len(dst)
	src = src[:n]
	m := n &^ 7
	if m > 0 {
		if f16 {
			cvtF16AVX(&dst[0], &src[0], m)
		} else {
			cvtBF16AVX(&dst[0], &src[0], m)
		}
	}
	for i := m; i < n; i++ {
		dst[i] = cvt16(src[i], f16)
	}
}

// scaleI8SIMD writes dst[i] = scale·float32(src[i]) for i < len(dst).
func scaleI8SIMD(dst []float32, src []int8, scale float32) {
	n := len(dst)
	src = src[:n]
	m := n &^ 7
	if m > 0 {
		scaleI8AVX(&dst[0], &src[0], scale, m)
	}
	scaleI8Go(dst[m:], src[m:], scale)
}

func bytePtr(b []byte) *byte { return (*byte)(unsafe.Pointer(unsafe.SliceData(b))) }

//go:noescape
func readAVX(p *byte, n int) uint64

// readBytes XOR-folds b 8 bytes at a time (the tail is ignored).
func readBytes(b []byte) uint64 {
	m := len(b) &^ 127
	if m == 0 {
		return 0
	}
	if haveSIMD() {
		return readAVX(&b[0], m)
	}
	return readPortable(b[:m])
}

// spinPause is a PAUSE instruction: a polite busy-wait step.
//
//go:noescape
func spinPause()

//go:noescape
func tanhAVX(dst, src *float32, n int, in, out float32)

//go:noescape
func geluAVX(dst, src *float32, n int)

// tanhScaledSIMD computes dst[i] = tanhf(src[i]·in)·out.
func tanhScaledSIMD(dst, src []float32, in, out float32) {
	n := len(dst)
	src = src[:n]
	m := n &^ 7
	if m > 0 {
		tanhAVX(&dst[0], &src[0], m, in, out)
	}
	for i := m; i < n; i++ {
		dst[i] = tanhf(src[i]*in) * out
	}
}

// geluSIMD computes dst[i] = geluTanh(src[i]).
func geluSIMD(dst, src []float32) {
	n := len(dst)
	src = src[:n]
	m := n &^ 7
	if m > 0 {
		geluAVX(&dst[0], &src[0], m)
	}
	for i := m; i < n; i++ {
		dst[i] = geluTanh(src[i])
	}
}

// matmulPanelsAVX2 is matmulPanels with the AVX2 kernels; it reports
// whether it took the call (always, on amd64).
func (b *Backend) matmulPanelsAVX2(dst, x []float32, n int, w *tensor.Matrix) bool {
	b.matmulPanels(dst, x, n, w, panelsAVX2)
	return true
}

// haveColumnAVX2 reports that spcol4AVX2 exists on this architecture.
const haveColumnAVX2 = true

// spcol4AVX2 is spcol4AVX512 for 64 outputs of a block (half its codes'
// bytes, half its factors), with ymm registers (sparse_amd64.s).
//
//go:noescape
func spcol4AVX2(y *float32, q *byte, qstride uintptr, s, b unsafe.Pointer, sstride uintptr, idx *int32, val *float32, grp *spGroup, ngrp, half int)
