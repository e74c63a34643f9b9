//go:build linux

package vulkan

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"mlxchat/metal/gpu"
	"mlxchat/tensor"
)

// runBoth records the same ops with fusion off and on, on fresh tensors
// from the same values, and returns the outputs of both and the launches
// each handed the driver.
func runBoth(t *testing.T, b *gpu.Backend, seq func(on bool) []*tensor.Tensor) (off, on [][]float32, loff, lon int64) {
	t.Helper()
	for _, fuse := range []bool{false, true} {
		b.SetFusion(fuse)
		st0 := b.Stats()
		outs := seq(fuse)
		if err := b.Sync(); err != nil {
			t.Fatalf("fusion %v: %v", fuse, err)
		}
		var got [][]float32
		for _, o := range outs {
			got = append(got, append([]float32(nil), o.F32()...))
		}
		n := b.Stats().Dispatches - st0.Dispatches
		if fuse {
			on, lon = got, n
		} else {
			off, loff = got, n
		}
	}
	b.SetFusionMode(gpu.DefaultFusion)
	return
}

func sameVals(t *testing.T, what string, got, want [][]float32, tol float64) {
	t.Helper()
	for k := range want {
		for i := range want[k] {
			g, w := float64(got[k][i]), float64(want[k][i])
			if math.IsNaN(g) || math.Abs(g-w) > tol*(1+math.Abs(w)) {
				t.Fatalf("%s: output %d [%d] = %v fused, %v unfused", what, k, i, g, w)
			}
		}
	}
}

func TestFusedChain(t *testing.T) {
	b, _ := open(t)
	r := rand.New(rand.NewPCG(3, 4))
	xv := randVals(r, 300, 1)
	off, on, loff, lon := runBoth(t, b, func(bool) []*tensor.Tensor {
		x := put(b, true, xv, 300)
		y := b.Alloc(300)
		if err := b.Scale(y, x, 2); err != nil {
			t.Fatal(err)
		}
		if err := b.GeluTanh(y, y); err != nil {
			t.Fatal(err)
		}
		return []*tensor.Tensor{y}
	})
	t.Logf("launches %d unfused, %d fused", loff, lon)
	sameVals(t, "scale+gelu", on, off, 1e-6)
}

func TestFusedConstInput(t *testing.T) {
	b, _ := open(t)
	r := rand.New(rand.NewPCG(3, 5))
	qv := randVals(r, 3*4*32, 1)
	q, _ := tensor.FromF32(qv, 3, 4, 32)
	rope, _ := tensor.DefaultRotary(32, 10000)
	for step := range 3 {
		off, on, _, _ := runBoth(t, b, func(bool) []*tensor.Tensor {
			o := tensor.New(tensor.F32, 3, 4, 32)
			if err := b.Copy(o, q); err != nil {
				t.Fatal(err)
			}
			if err := b.RoPE(o, 1000, rope); err != nil {
				t.Fatal(err)
			}
			return []*tensor.Tensor{o}
		})
		t.Logf("step %d: stats %+v", step, b.Stats())
		sameVals(t, "copy+rope", on, off, 1e-6)
	}
}

func TestFusedSmallMatMul(t *testing.T) {
	b, _ := open(t)
	r := rand.New(rand.NewPCG(3, 6))
	head := newDense(r, 50, 128, tensor.BF16)
	q := newQuant(r, 40, 256, 4, 64, tensor.BF16)
	xv := randVals(r, 2*128, 1)
	xq := randVals(r, 256, 1)
	off, on, loff, lon := runBoth(t, b, func(bool) []*tensor.Tensor {
		x := put(b, true, xv, 2, 128)
		lg := b.Alloc(2, 50)
		if err := b.Scale(x, x, 1.5); err != nil {
			t.Fatal(err)
		}
		if err := b.MatMul(lg, x, head.m); err != nil {
			t.Fatal(err)
		}
		if err := b.Softcap(lg, lg, 30); err != nil {
			t.Fatal(err)
		}
		x2 := put(b, true, xq, 1, 256)
		o2 := b.Alloc(1, 40)
		if err := b.MatMul(o2, x2, q.m); err != nil {
			t.Fatal(err)
		}
		return []*tensor.Tensor{lg, o2}
	})
	t.Logf("launches %d unfused, %d fused", loff, lon)
	sameVals(t, "small matmuls", on, off, 1e-5)
}

func TestFusedOneStep(t *testing.T) {
	b, _ := open(t)
	r := rand.New(rand.NewPCG(31, 31))
	const d, hidden, vocab = 128, 256, 50
	emb := newQuant(r, vocab, d, 4, 64, tensor.BF16)
	head := newDense(r, vocab, d, tensor.BF16)
	ids := []int32{4, 49}
	off, on, _, _ := runBoth(t, b, func(bool) []*tensor.Tensor {
		h := tensor.New(tensor.F32, len(ids), d)
		if err := b.Gather(h, emb.m, ids); err != nil {
			t.Fatal(err)
		}
		o := b.Alloc(len(ids), d)
		if err := b.Scale(o, h, 2); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(h, h, o); err != nil {
			t.Fatal(err)
		}
		logits := b.Alloc(len(ids), vocab)
		if err := b.MatMul(logits, h, head.m); err != nil {
			t.Fatal(err)
		}
		if os.Getenv("SOFTCAP") != "" {
			if err := b.Softcap(logits, logits, 30); err != nil {
				t.Fatal(err)
			}
		}
		if os.Getenv("ARGMAX") != "" {
			best := tensor.New(tensor.I32, len(ids))
			if err := b.Argmax(best, logits); err != nil {
				t.Fatal(err)
			}
		}
		return []*tensor.Tensor{h, o, logits}
	})
	sameVals(t, "one step", on, off, 1e-5)
}

// TestFusedOps runs a decode-shaped mix of every op the fused kernels take
// (8-bit and 4-bit segments with F16 and BF16 scales sharing an input, a
// dense and a quantized small product, LayerNorm with weight and bias,
// RMSNorm, SiLU, softcap, broadcast mul, interleaved and half-split RoPE,
// Gaussian top-k, RMS matching, the three stream ops) with fusion off and
// on, and requires the same results and fewer launches.
func TestFusedOps(t *testing.T) {
	b, _ := open(t)
	r := rand.New(rand.NewPCG(8, 9))
	q8 := newQuant(r, 96, 256, 8, 32, tensor.F16)
	q8b := newQuant(r, 80, 256, 8, 32, tensor.F16)
	q4 := newQuant(r, 256, 96, 4, 32, tensor.BF16)
	small := newQuant(r, 8, 256, 4, 64, tensor.BF16)
	dense := newDense(r, 12, 8, tensor.BF16)
	wn := encode(tensor.BF16, randVals(r, 96, 1), 96)
	bn := encode(tensor.F16, randVals(r, 96, 0.1), 96)
	inter, err := tensor.NewRotary(16, tensor.DefaultInvFreq(16, 50000), true)
	if err != nil {
		t.Fatal(err)
	}
	half, err := tensor.DefaultRotary(32, 10000)
	if err != nil {
		t.Fatal(err)
	}
	xv := randVals(r, 256, 1)
	sv := randVals(r, 4*2*96, 1)
	coefs := randVals(r, 2*16, 0.3)
	off, on, loff, lon := runBoth(t, b, func(bool) []*tensor.Tensor {
		x := put(b, true, xv, 1, 256)
		a, c := b.Alloc(1, 96), b.Alloc(1, 80)
		must(t, b.MatMul(a, x, q8.m))
		must(t, b.MatMul(c, x, q8b.m))
		ln := b.Alloc(1, 96)
		must(t, b.LayerNorm(ln, a, wn, bn, 1e-5))
		must(t, b.SiLU(ln, ln))
		must(t, b.Softcap(ln, ln, 3))
		must(t, b.Mul(ln, ln, a))
		rq := b.Alloc(1, 3, 32)
		must(t, b.Copy(blocksView(rq, 96), ln))
		must(t, b.RoPE(rq, 1234, inter))
		must(t, b.RoPE(rq, 7, half))
		up := b.Alloc(1, 256)
		must(t, b.MatMul(up, blocksView(rq, 96), q4.m))
		must(t, b.GaussianTopK(up, up, 1.0))
		must(t, b.MatchRMS(up, up, x, 1e-6))
		sm := b.Alloc(1, 8)
		must(t, b.MatMul(sm, up, small.m))
		must(t, b.RMSNorm(sm, sm, nil, 1e-6))
		dn := b.Alloc(1, 12)
		must(t, b.MatMul(dn, sm, dense.m))
		st := put(b, true, sv, 4, 2, 96)
		cf := put(b, true, coefs, 2, 16)
		mix := b.Alloc(4, 2, 96)
		must(t, b.MixStreams(mix, st, cf))
		bt := b.Alloc(2, 96)
		must(t, b.Copy(blocksView(bt, 96), ln))
		must(t, b.AddScaledStreams(mix, mix, bt, blocksView(cf, 2, 4)))
		sw := b.Alloc(2, 4, 96)
		must(t, b.SwapAxes01(sw, mix))
		return []*tensor.Tensor{a, c, ln, rq, up, sm, dn, mix, sw}
	})
	t.Logf("launches %d unfused, %d fused", loff, lon)
	sameVals(t, "op mix", on, off, 1e-5)
	if lon*2 > loff {
		t.Errorf("%d launches fused, %d unfused: want at most half", lon, loff)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// blocksView reshapes t (same bytes and Handle); with two sizes it is the
// first rows*n values seen as [rows, n].
func blocksView(t *tensor.Tensor, shape ...int) *tensor.Tensor {
	n := tensor.NumElements(shape)
	return &tensor.Tensor{DType: t.DType, Shape: shape, Data: t.Data[:4*n], Handle: t.Handle}
}
