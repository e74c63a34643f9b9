//go:build linux

package vulkan

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"mlxchat/tensor"
)

// TestMatVecBandwidth measures the decode matrix-vector kernels on
// Gemma 3n E2B shapes (set MLXCHAT_GPU_BENCH=1; it allocates ~0.8 GB). Each
// shape cycles through enough distinct weights to defeat the GPU's L2, all
// launches of a round recorded into one command buffer, and reports weight
// bytes read per second. It also reports the per-op cost of recording and
// running tiny ops.
func TestMatVecBandwidth(t *testing.T) {
	if os.Getenv("MLXCHAT_GPU_BENCH") == "" {
		t.Skip("set MLXCHAT_GPU_BENCH=1 to run the bandwidth benchmark")
	}
	b, d := open(t)
	t.Logf("device %+v", d.Info())
	r := rand.New(rand.NewPCG(1, 2))
	shapes := []struct {
		name          string
		out, in, bits int
		count         int
	}{
		{"E2B mlp up/gate 8192x2048 q4", 8192, 2048, 4, 24},
		{"E2B mlp down 2048x8192 q4", 2048, 8192, 4, 24},
		{"E2B attn q 2048x2048 q4", 2048, 2048, 4, 64},
		{"E2B lm head 262144x2048 q4", 262144, 2048, 4, 1},
		{"8192x2048 q8", 8192, 2048, 8, 12},
	}
	for _, s := range shapes {
		ws := make([]*tensor.Matrix, s.count)
		total := 0
		for i := range ws {
			ws[i] = fastQuant(r, s.out, s.in, s.bits)
			total += ws[i].Bytes()
		}
		x := b.Alloc(1, s.in)
		for i := range x.F32() {
			x.F32()[i] = float32(r.NormFloat64())
		}
		dst := b.Alloc(1, s.out)
		round := func(reps int) time.Duration {
			t0 := time.Now()
			for range reps {
				for _, w := range ws {
					if err := b.MatMul(dst, x, w); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := b.Sync(); err != nil {
				t.Fatal(err)
			}
			return time.Since(t0)
		}
		round(1) // upload, pipelines
		reps := max(1, 2_000_000_000/total)
		el := round(reps)
		bytes := float64(total) * float64(reps)
		per := el / time.Duration(reps*len(ws))
		msg := fmt.Sprintf("%-32s %4d launches  %7.1f us/launch  %7.1f GB/s of weights", s.name, reps*len(ws), float64(per.Nanoseconds())/1e3, bytes/el.Seconds()/1e9)
		t.Log(msg)
		fmt.Println("BENCH", msg)
	}
	x := b.Alloc(256)
	for _, n := range []int{1, 1000} {
		t0 := time.Now()
		for range n {
			if err := b.Scale(x, x, 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		el := time.Since(t0)
		msg := fmt.Sprintf("%d tiny ops in one Sync: %v (%.1f us/op)", n, el, float64(el.Nanoseconds())/1e3/float64(n))
		t.Log(msg)
		fmt.Println("BENCH", msg)
	}
}

// fastQuant makes a quantized matrix of random bits and bf16 scales (the
// values do not matter for bandwidth).
func fastQuant(r *rand.Rand, out, in, bits int) *tensor.Matrix {
	w := tensor.New(tensor.U32, out, in*bits/32)
	u := w.U32()
	for i := range u {
		u[i] = r.Uint32()
	}
	g := in / 64
	sc := tensor.New(tensor.BF16, out, g)
	bi := tensor.New(tensor.BF16, out, g)
	for i := range sc.U16() {
		sc.U16()[i] = tensor.F32ToBF16(0.01)
		bi.U16()[i] = tensor.F32ToBF16(-0.05)
	}
	return &tensor.Matrix{Out: out, In: in, W: w, Scales: sc, Biases: bi, Bits: bits, GroupSize: 64}
}

// TestMeasureBandwidth runs the copy-kernel probe mlxchat bench uses as
// the GPU's roofline denominator: every copy is launched (6 runs of 8),
// the data survives the round trips (checked inside on host-visible
// memory such as lavapipe's), and the rate is positive.
func TestMeasureBandwidth(t *testing.T) {
	b, _ := open(t)
	st0 := b.Stats()
	bw, err := b.MeasureBandwidth(4 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if bw <= 0 {
		t.Fatalf("bandwidth %v", bw)
	}
	if d := b.Stats().Dispatches - st0.Dispatches; d != 6*8 {
		t.Errorf("%d copy launches, want 48 (6 runs of 8)", d)
	}
	t.Logf("copy bandwidth %.1f GB/s (read + written)", bw/1e9)
}

// TestLaunchCost measures what a launch costs the GPU inside a replayed
// step (set MLXCHAT_GPU_BENCH=1): chains of dependent tiny launches, the
// same launches with no dependencies (no barriers), and fused launches
// whose tail runs a given number of small ops, each step recorded once
// and then replayed.
func TestLaunchCost(t *testing.T) {
	if os.Getenv("MLXCHAT_GPU_BENCH") == "" {
		t.Skip("set MLXCHAT_GPU_BENCH=1 to run the launch-cost benchmark")
	}
	b, _ := open(t)
	r := rand.New(rand.NewPCG(1, 3))
	const n = 300
	replay := func(name string, launches int, step func()) {
		step()
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		best := time.Duration(0)
		for range 20 {
			t0 := time.Now()
			step()
			if err := b.Sync(); err != nil {
				t.Fatal(err)
			}
			if el := time.Since(t0); best == 0 || el < best {
				best = el
			}
		}
		msg := fmt.Sprintf("%-44s %5d launches  %8.1f us/step  %6.2f us/launch", name, launches, float64(best.Nanoseconds())/1e3, float64(best.Nanoseconds())/1e3/float64(launches))
		t.Log(msg)
		fmt.Println("BENCH", msg)
	}
	x := b.Alloc(2048)
	xs := make([]*tensor.Tensor, n)
	for i := range xs {
		xs[i] = b.Alloc(2048)
	}
	b.SetFusion(false)
	replay("dependent scale chain (barrier each)", n, func() {
		for range n {
			if err := b.Scale(x, x, 1); err != nil {
				t.Fatal(err)
			}
		}
	})
	replay("independent scales (no barriers)", n, func() {
		for i := range n {
			if err := b.Scale(xs[i], x, 1); err != nil {
				t.Fatal(err)
			}
		}
	})
	// The unfused decode step's kernels, each launch depending on the one
	// before (as in a decode step): the per-launch floor of small ops and
	// the E2B matrix-vector shapes (the weights stay in L2 here; see
	// TestMatVecBandwidth for DRAM rates).
	row, row2 := b.Alloc(1, 2048), b.Alloc(1, 2048)
	heads := b.Alloc(8, 256)
	nw := tensor.New(tensor.F32, 2048)
	replay("rmsnorm 1x2048 chain", n, func() {
		for range n {
			if err := b.RMSNorm(row, row, nw, 1e-6); err != nil {
				t.Fatal(err)
			}
		}
	})
	replay("rmsnorm 8x256 chain", n, func() {
		for range n {
			if err := b.RMSNorm(heads, heads, nil, 1e-6); err != nil {
				t.Fatal(err)
			}
		}
	})
	replay("add 2048 chain", n, func() {
		for range n {
			if err := b.Add(row, row, row2); err != nil {
				t.Fatal(err)
			}
		}
	})
	for _, sh := range [][2]int{{2048, 2048}, {8192, 2048}, {2048, 8192}, {256, 2048}} {
		w := fastQuant(r, sh[0], sh[1], 4)
		xin, xout := b.Alloc(1, sh[1]), b.Alloc(1, sh[0])
		replay(fmt.Sprintf("qmv4 %dx%d (barrier each)", sh[0], sh[1]), n/10, func() {
			for range n / 10 {
				if err := b.MatMul(xout, xin, w); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	// Gemma 3n's AltUp coefficients: one row of 4 values times a dense
	// 16x4 bf16 matrix (the few-rows path of the tiled kernel).
	coefs := newDense(r, 16, 4, tensor.BF16).m
	mod, coef := b.Alloc(1, 4), b.Alloc(1, 16)
	replay("dense mm 1x4 -> 16 chain", n, func() {
		for range n {
			if err := b.MatMul(coef, mod, coefs); err != nil {
				t.Fatal(err)
			}
		}
	})
	// Decode attention of one E2B layer (8 query heads on 2 KV heads of
	// 256) after 512 and 2048 keys: attnd and attnmerge per call, each call
	// taking the output of the one before as its query.
	for _, nk := range []int{512, 2048} {
		q, o := b.Alloc(1, 8, 256), b.Alloc(1, 8, 256)
		k, v := b.Alloc(nk, 2, 256), b.Alloc(nk, 2, 256)
		copy(k.F32(), randVals(r, nk*512, 1))
		copy(v.F32(), randVals(r, nk*512, 1))
		mask, err := tensor.NewMask(nk, 1, []tensor.Span{{Start: 0, Len: nk}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		replay(fmt.Sprintf("attention decode 8/2 heads d256 %d keys", nk), 2*(n/10), func() {
			for i := range n / 10 {
				src, dst := q, o
				if i%2 == 1 {
					src, dst = o, q
				}
				if err := b.Attention(dst, src, k, v, mask, 0.0625); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	b.SetFusion(true)
	w := fastQuant(r, 2048, 2048, 4)
	h := b.Alloc(1, 2048)
	for _, tail := range []int{0, 4, 12} {
		replay(fmt.Sprintf("fused 2048x2048 q4 matvec + %d tail ops", tail), n/10, func() {
			for range n / 10 {
				if err := b.MatMul(h, x, w); err != nil {
					t.Fatal(err)
				}
				for k := range tail {
					var err error
					if k%3 == 2 {
						err = b.RMSNorm(x, h, nil, 1e-6)
					} else {
						err = b.Add(h, h, x)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}
