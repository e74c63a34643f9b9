//go:build !amd64 && !arm64

package cpu

import (
	"unsafe"

	"mlxchat/tensor"
)

func haveSIMD() bool { return false }

func haveAVX512() bool { return false }

func canAVX512(w *tensor.Matrix) bool { return false }

func (b *Backend) matvec512(dst, x []float32, w *tensor.Matrix) {
	panic("cpu: AVX-512 kernel called without AVX-512 support")
}

func qmat4SIMD(bits int, w *byte, s, b, x, xs, dst *float32, rows, groups, gpad, steps, wstride, dstride, xstride, xsstride int) {
	panic("cpu: SIMD kernel called without SIMD support")
}

func dotSIMD(a, b []float32) float32 { return dotF32(a, b) }

func dot4SIMD(out *[4]float32, w, x []float32, stride int) {
	for r := 0; r < 4; r++ {
		out[r] = dotF32(w, x[r*stride:r*stride+len(w)])
	}
}

func axpySIMD(dst, src []float32, a float32) { axpyF32(dst, src, a) }

func dot2SIMD(q0, q1, k []float32) (float32, float32) { return dot2F32(q0, q1, k) }

func pvSIMD(dst, p, v []float32, stride int) { pvF32(dst, p, v, stride) }

// scaleI8SIMD writes dst[i] = scale·float32(src[i]) for i < len(dst)
// (in Go here: there is no vector form yet).
func scaleI8SIMD(dst []float32, src []int8, scale float32) { scaleI8Go(dst, src, scale) }

func cvtSIMD(dst []float32, src []uint16, f16 bool) {
	for i := range dst {
		dst[i] = cvt16(src[i], f16)
	}
}

func bytePtr(b []byte) *byte { return &b[0] }

func readBytes(b []byte) uint64 { return readPortable(b[:len(b)&^127]) }

func qmatSplitSIMD(bits, gs int, w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int) {
	panic("cpu: SIMD kernel called without SIMD support")
}

func splitLimbIndex(i, n, bits int) (hi, lo int) {
	panic("cpu: SIMD kernel called without SIMD support")
}

func xstatsSIMD(xs, x []float32, gs int) float32 {
	panic("cpu: SIMD kernel called without SIMD support")
}

func xsplitSIMD(xq []int16, x []float32, bits int, scale float32) {
	panic("cpu: SIMD kernel called without SIMD support")
}

func spinPause() {}

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

func (b *Backend) matvecRows512(dst, x []float32, w *tensor.Matrix, rows []int32) {
	panic("cpu: AVX-512 kernel called without AVX-512 support")
}

// prefetchLines does nothing here (amd64 prefetches).
func prefetchLines(p *byte, n int) {}

func (b *Backend) matmul512(dst, x []float32, n int, w *tensor.Matrix) {
	panic("cpu: AVX-512 kernel called without AVX-512 support")
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

// The elementwise kernels have no vector forms on this architecture: they
// are the Go loops.

func addSIMD(d, x, y []float32)                          { addKernel(d, x, y) }
func mulSIMD(d, x, y []float32)                          { mulKernel(d, x, y) }
func scaleSIMD(d, x []float32, s float32)                { scaleKernel(d, x, s) }
func scaleMulSIMD(d, x, w []float32, s float32)          { scaleMulKernel(d, x, w, s) }
func ropeHalfSIMD(row, cs []float32, half int)           { ropeHalfKernel(row, cs, half) }
func gaussianTopKRowSIMD(dst, x []float32, mult float64) { gaussianTopKRow(dst, x, mult) }
