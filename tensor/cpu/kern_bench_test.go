package cpu

import (
	"fmt"
	"testing"
	"time"

	"mlxchat/tensor"
)

// BenchmarkQuantKernelL2 times the single-thread matvec (x rounding
// included) on a 256x2048 matrix that fits in L2, so it measures the
// kernels' compute throughput rather than memory: best-of GB/s of weight
// bytes, per kernel level.
func BenchmarkQuantKernelL2(b *testing.B) {
	for _, l := range availableLevels()[1:] {
		for _, bits := range []int{4, 8} {
			for _, gs := range []int{32, 64, 128} {
				w := randomQuantMatrix(256, 2048, bits, gs, 3)
				x := tensor.New(tensor.F32, 1, 2048)
				for i := range x.F32() {
					x.F32()[i] = float32(i%13) - 6
				}
				dst := tensor.New(tensor.F32, 1, 256)
				b.Run(fmt.Sprintf("%s/q%d/g%d", l, bits, gs), func(b *testing.B) {
					be := newBackendLevel(1, l)
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
}
