package cpu

import (
	"fmt"
	"testing"

	"mlxchat/tensor"
)

// BenchmarkQuantKernelL2 times the matvec on a matrix that fits in L2, so
// it measures the kernel's compute throughput rather than memory.
func BenchmarkQuantKernelL2(b *testing.B) {
	for _, bits := range []int{4, 8} {
		for _, gs := range []int{32, 64, 128} {
			w := randomQuantMatrix(256, 2048, bits, gs, 3)
			x := tensor.New(tensor.F32, 1, 2048)
			dst := tensor.New(tensor.F32, 1, 256)
			b.Run(fmt.Sprintf("q%d/g%d", bits, gs), func(b *testing.B) {
				be := New(1)
				defer be.Close()
				for b.Loop() {
					_ = be.MatMul(dst, x, w)
				}
				b.ReportMetric(float64(w.Bytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

// BenchmarkQ4Kernel calls the assembly directly on L2-resident rows.
func BenchmarkQ4Kernel(b *testing.B) {
	const rows, in, gs = 128, 2048, 64
	w := randomQuantMatrix(rows, in, 4, gs, 3)
	groups := in / gs
	s := make([]float32, rows*groups)
	bb := make([]float32, rows*groups)
	x := make([]float32, in)
	xs := make([]float32, groups)
	dst := make([]float32, rows)
	wp := bytePtr(w.W.Data)
	for b.Loop() {
		q4x1g64(wp, &s[0], &bb[0], &x[0], &xs[0], &dst[0], rows, groups, groups, gs/16, in/2)
	}
	b.ReportMetric(float64(rows*in/2)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}
