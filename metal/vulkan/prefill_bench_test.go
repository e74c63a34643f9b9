//go:build linux

package vulkan

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"mlxchat/tensor"
)

// BenchmarkPrefillMatMul times the tiled product prefill runs (qmm4/qmm8)
// on its own: a chunk of rows of x times an E2B-sized 4- or 8-bit matrix
// (group 64, bfloat16 scales), x and the result on the GPU, one Sync per
// product. GFLOP/s counts 2·rows·in·out. MLXCHAT_PREFILL_ROWS sets the
// rows (default 512; lavapipe is slow, so keep it small there).
func BenchmarkPrefillMatMul(b *testing.B) {
	g, _ := open(b)
	rows := 512
	if v, err := strconv.Atoi(os.Getenv("MLXCHAT_PREFILL_ROWS")); err == nil && v > 0 {
		rows = v
	}
	for _, sh := range []struct{ in, out, bits int }{{2048, 8192, 4}, {8192, 2048, 4}, {2048, 2048, 8}} {
		b.Run(fmt.Sprintf("q%d/%dx%d/rows=%d", sh.bits, sh.in, sh.out, rows), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			w := newQuant(r, sh.out, sh.in, sh.bits, 64, tensor.BF16)
			x := put(g, true, randVals(r, rows*sh.in, 1), rows, sh.in)
			dst := g.Alloc(rows, sh.out)
			run := func() {
				if err := g.MatMul(dst, x, w.m); err != nil {
					b.Fatal(err)
				}
				if err := g.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			run() // uploads the weights
			for b.Loop() {
				run()
			}
			b.ReportMetric(2*float64(rows)*float64(sh.in)*float64(sh.out)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
