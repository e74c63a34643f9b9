package cpu

import (
	"fmt"
	"testing"
	"time"

	"mlxchat/tensor"
)

// BenchmarkQuantKernelL2 times the single-thread matvec on a matrix that
// fits in L2, so it measures the kernel's compute throughput rather than
// memory: best-of GB/s of weight bytes.
func BenchmarkQuantKernelL2(b *testing.B) {
	for _, bits := range []int{4, 8} {
		for _, gs := range []int{32, 64, 128} {
			w := randomQuantMatrix(128, 2048, bits, gs, 3)
			x := tensor.New(tensor.F32, 1, 2048)
			dst := tensor.New(tensor.F32, 1, 128)
			b.Run(fmt.Sprintf("q%d/g%d", bits, gs), func(b *testing.B) {
				be := New(1)
				defer be.Close()
				best := time.Hour
				for b.Loop() {
					st := time.Now()
					if err := be.MatMul(dst, x, w); err != nil {
						b.Fatal(err)
					}
					best = min(best, time.Since(st))
				}
				b.ReportMetric(float64(w.Bytes())/best.Seconds()/1e9, "GB/s")
			})
		}
	}
}
