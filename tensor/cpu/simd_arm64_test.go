//go:build arm64

package cpu

import (
	"fmt"
	"testing"

	"mlxchat/tensor"
)

// BenchmarkNEONvsPortable times the quantized decode matvec and a small
// prefill product with the NEON kernels and with the portable Go ones in
// the same run (their ratio is the figure; under qemu-user it counts
// emulated instructions, not arm64 hardware speed).
func BenchmarkNEONvsPortable(b *testing.B) {
	for _, n := range []int{1, 8} {
		for _, bits := range []int{4, 8} {
			w := randomQuantMatrix(256, 2048, bits, 64, 3)
			x := tensor.New(tensor.F32, n, 2048)
			for i := range x.F32() {
				x.F32()[i] = float32(i%13) - 6
			}
			dst := tensor.New(tensor.F32, n, 256)
			for _, l := range []kernelLevel{levelPortable, levelAVX2} {
				name := map[kernelLevel]string{levelPortable: "portable", levelAVX2: "neon"}[l]
				b.Run(fmt.Sprintf("n=%d/q%d/%s", n, bits, name), func(b *testing.B) {
					be := newBackendLevel(1, l)
					defer be.Close()
					for b.Loop() {
						if err := be.MatMul(dst, x, w); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
	q := make([]float32, 256)
	k := make([]float32, 256)
	for i := range q {
		q[i], k[i] = float32(i%5)-2, float32(i%3)-1
	}
	for _, simd := range []bool{false, true} {
		b.Run(fmt.Sprintf("dot256/simd=%v", simd), func(b *testing.B) {
			var s float32
			for b.Loop() {
				if simd {
					s += dotSIMD(q, k)
				} else {
					s += dotF32(q, k)
				}
			}
			_ = s
		})
	}
}
