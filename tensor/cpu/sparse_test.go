package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"mlxchat/tensor"
)

// TestSparseMatMul holds SparseMatMul to a float64 product of the
// independently dequantized matrix (refDequant) at every kernel level, both
// widths, every group size and scale dtype, for x rows from all zeros to
// past sparseDensity (the whole product), 1-8 rows (blocks of one row
// spread over workers, and whole rows per worker), and outputs that fill
// whole 128-output blocks or end in a partial one.
func TestSparseMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	sizes := []struct{ n, in, out int }{{1, 256, 300}, {2, 384, 97}, {8, 512, 256}, {5, 128, 40}, {1, 1024, 128}}
	eachQuantCase(t, rng, []int{4, 8}, sizes, func(c quantCase) {
		for _, density := range []float64{0, 0.05, 0.15, 0.5} {
			x := append([]float32(nil), c.x...)
			for i := range x {
				if rng.Float64() >= density {
					x[i] = 0
				}
			}
			wd, terms := refDequant(t, c.m)
			want, mag := refProduct(x, wd, terms, c.n, c.in, c.out)
			dst := c.b.Alloc(c.n, c.out)
			for i := range dst.F32() {
				dst.F32()[i] = 7 // every output must be written
			}
			if err := c.b.SparseMatMul(dst, mustT(t, x, c.n, c.in), c.m); err != nil {
				t.Fatal(err)
			}
			checkProduct(t, fmt.Sprintf("%s density %g", c, density), dst.F32(), want, mag)
		}
	})
}

// TestSparseColumnsKernel runs each assembly column kernel the machine has
// (AVX-512, AVX2) and the Go one on the same lists (groups with one to all
// of their columns, the first and last columns, a row with no non-zero
// value) and compares them.
func TestSparseColumnsKernel(t *testing.T) {
	var levels []kernelLevel
	if haveColumnAVX2 && haveSIMD() {
		levels = append(levels, levelAVX2)
	}
	if haveAVX512() {
		levels = append(levels, levelAVX512)
	}
	if len(levels) == 0 {
		t.Skip("no assembly column kernel on this machine: the Go one is the only one")
	}
	rng := rand.New(rand.NewPCG(43, 44))
	const in, out, gs = 512, 384, 64
	for _, c := range []struct {
		level kernelLevel
		dt    tensor.DType // of the scales and biases: bfloat16 ones stay bfloat16 in the copy
	}{{levels[0], tensor.BF16}, {levels[0], tensor.F16}, {levels[len(levels)-1], tensor.BF16}, {levels[len(levels)-1], tensor.F16}} {
		level := c.level
		m, err := tensor.QuantizeAffine(randF32(rng, out*in, 0.05), out, in, 4, gs, c.dt)
		if err != nil {
			t.Fatal(err)
		}
		b := newBackendLevel(1, level)
		defer b.Close()
		cm := b.buildColumns(m)
		if (cm.sb16 != nil) != (c.dt == tensor.BF16) {
			t.Fatalf("%s scales: column copy holds bfloat16 factors %v", c.dt, cm.sb16 != nil)
		}
		for _, density := range []float64{0, 0.02, 0.3, 1} {
			x := randF32(rng, in, 1)
			for i := range x {
				if rng.Float64() >= density && i != 0 && i != in-1 {
					x[i] = 0
				}
			}
			l := spList{idx: make([]int32, 0, in+spIdxPad), val: make([]float32, 0, in), grp: make([]spGroup, 0, in/gs)}
			l.build(x, gs)
			for ob := 0; ob < cm.outPad/colBlock; ob++ {
				var want [colBlock]float32
				colBlockGo(want[:], cm, ob, &l)
				y := make([]float32, out)
				for i := range y {
					y[i] = 7 // every output of the block must be written
				}
				b.colBlockOut(y, cm, ob, cm.blockFactors(ob), &l)
				got := y[ob*colBlock : (ob+1)*colBlock]
				for r := range got {
					d := float64(got[r] - want[r])
					if d < 0 {
						d = -d
					}
					if a := float64(want[r]); d > 1e-5*(1+max(a, -a)) {
						t.Fatalf("%s, %s factors, density %g block %d output %d: %g, Go %g", level, c.dt, density, ob, r, got[r], want[r])
					}
				}
			}
		}
	}
}

// TestSparseColumnsReleased checks that a matrix's column copy goes away
// once the matrix is garbage collected, so a backend that outlives a
// model does not keep its columns.
func TestSparseColumnsReleased(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	b := newBackendLevel(2, levelPortable) // every machine's portable level takes the column path
	defer b.Close()
	func() {
		m, err := tensor.QuantizeAffine(randF32(rng, 128*256, 0.05), 128, 256, 4, 64, tensor.BF16)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, 256)
		x[3], x[100] = 1, -2
		if err := b.SparseMatMul(b.Alloc(1, 128), mustT(t, x, 1, 256), m); err != nil {
			t.Fatal(err)
		}
		if n := b.cols.len(); n != 1 {
			t.Fatalf("%d column copies after one sparse product, want 1", n)
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for b.cols.len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the column copy of a collected matrix is still held")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
