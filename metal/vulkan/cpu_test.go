//go:build linux

package vulkan

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"mlxchat/metal/gpu"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// TestAgainstCPU runs every op, the Gemma 3n stream ops included, on the
// Vulkan backend and on the CPU backend (tensor/cpu) with the same host
// inputs and compares the outputs.
func TestAgainstCPU(t *testing.T) {
	g, _ := open(t)
	if os.Getenv("NOFUSE") != "" {
		g.SetFusion(false)
		defer g.SetFusionMode(gpu.DefaultFusion)
	}
	c := cpu.New(2)
	defer c.Close()
	r := rand.New(rand.NewPCG(41, 41))
	host := func(scale float64, shape ...int) *tensor.Tensor {
		x, err := tensor.FromF32(randVals(r, tensor.NumElements(shape), scale), shape...)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	q4 := newQuant(r, 96, 256, 4, 64, tensor.BF16).m
	q8 := newQuant(r, 40, 128, 8, 32, tensor.F16).m
	dense := newDense(r, 24, 64, tensor.BF16).m
	x1, x9 := host(1, 1, 256), host(1, 9, 256)
	x8 := host(1, 3, 128)
	xd := host(1, 5, 64)
	rows := host(3, 4, 96)
	ref := host(0.5, 4, 96)
	wn := encode(tensor.BF16, randVals(r, 96, 1), 96)
	q, k, v := host(1, 3, 4, 32), host(1, 20, 2, 32), host(1, 20, 2, 32)
	mask, err := tensor.NewMask(30, 3, []tensor.Span{{Start: 0, Len: 4}, {Start: 17, Len: 16}}, 8)
	if err != nil {
		t.Fatal(err)
	}
	row0 := host(1, 96)
	rope, err := tensor.DefaultRotary(32, 10000)
	if err != nil {
		t.Fatal(err)
	}
	ropeInter, err := tensor.NewRotary(24, tensor.DefaultInvFreq(24, 50000), true)
	if err != nil {
		t.Fatal(err)
	}
	streams := host(1, 4, 3, 32)
	coefMix := host(1, 3, 2*4)
	coefAdd := host(1, 3, 4)
	bRow := host(1, 3, 32)

	type sb interface {
		tensor.Backend
		tensor.StreamOps
	}
	// tensor/cpu rounds x to int16 per group in its quantized decode
	// kernels (its tests bound that error); those cases get rtolQ of the
	// output's largest magnitude, the rest 1e-5 of it.
	const rtolQ = 3e-3
	cases := []struct {
		name  string
		shape []int
		run   func(b sb, out *tensor.Tensor) error
		rtol  float64
	}{
		{"q4 decode", []int{1, 96}, func(b sb, o *tensor.Tensor) error { return b.MatMul(o, x1, q4) }, rtolQ},
		{"q4 prefill", []int{9, 96}, func(b sb, o *tensor.Tensor) error { return b.MatMul(o, x9, q4) }, rtolQ},
		{"q8 rows", []int{3, 40}, func(b sb, o *tensor.Tensor) error { return b.MatMul(o, x8, q8) }, rtolQ},
		{"dense bf16", []int{5, 24}, func(b sb, o *tensor.Tensor) error { return b.MatMul(o, xd, dense) }, 0},
		{"gather q4", []int{3, 256}, func(b sb, o *tensor.Tensor) error { return b.Gather(o, q4, []int32{95, 0, 95}) }, 0},
		{"rmsnorm bf16", []int{4, 96}, func(b sb, o *tensor.Tensor) error { return b.RMSNorm(o, rows, wn, 1e-6) }, 0},
		{"rmsnorm plain", []int{4, 96}, func(b sb, o *tensor.Tensor) error { return b.RMSNorm(o, rows, nil, 1e-6) }, 0},
		{"rope", []int{3, 4, 32}, func(b sb, o *tensor.Tensor) error {
			if err := b.Copy(o, q); err != nil {
				return err
			}
			return b.RoPE(o, 1000, rope)
		}, 0},
		{"rope interleaved", []int{3, 4, 32}, func(b sb, o *tensor.Tensor) error {
			if err := b.Copy(o, q); err != nil {
				return err
			}
			return b.RoPE(o, 77, ropeInter)
		}, 0},
		{"layernorm bf16", []int{4, 96}, func(b sb, o *tensor.Tensor) error { return b.LayerNorm(o, rows, wn, wn, 1e-5) }, 0},
		{"silu", []int{4, 96}, func(b sb, o *tensor.Tensor) error { return b.SiLU(o, rows) }, 0},
		{"attention window sink", []int{3, 4, 32}, func(b sb, o *tensor.Tensor) error { return b.Attention(o, q, k, v, mask, 0.17) }, 0},
		{"gelu", []int{4, 96}, func(b sb, o *tensor.Tensor) error { return b.GeluTanh(o, rows) }, 0},
		{"softmax", []int{4, 96}, func(b sb, o *tensor.Tensor) error { return b.Softmax(o, rows) }, 0},
		{"softcap", []int{4, 96}, func(b sb, o *tensor.Tensor) error { return b.Softcap(o, rows, 2) }, 0},
		{"mul broadcast", []int{4, 96}, func(b sb, o *tensor.Tensor) error { return b.Mul(o, rows, row0) }, 0},
		{"gaussian top-k", []int{4, 96}, func(b sb, o *tensor.Tensor) error { return b.GaussianTopK(o, rows, 1.6448) }, 0},
		{"match rms", []int{4, 96}, func(b sb, o *tensor.Tensor) error { return b.MatchRMS(o, rows, ref, 1e-6) }, 0},
		{"mix streams", []int{2, 3, 32}, func(b sb, o *tensor.Tensor) error { return b.MixStreams(o, streams, coefMix) }, 0},
		{"add scaled streams", []int{4, 3, 32}, func(b sb, o *tensor.Tensor) error { return b.AddScaledStreams(o, streams, bRow, coefAdd) }, 0},
		{"swap axes", []int{3, 4, 32}, func(b sb, o *tensor.Tensor) error { return b.SwapAxes01(o, streams) }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := tensor.New(tensor.F32, tc.shape...)
			if err := tc.run(c, want); err != nil {
				t.Fatalf("cpu: %v", err)
			}
			if err := c.Sync(); err != nil {
				t.Fatalf("cpu: %v", err)
			}
			got := tensor.New(tensor.F32, tc.shape...)
			if err := tc.run(g, got); err != nil {
				t.Fatalf("vulkan: %v", err)
			}
			if err := g.Sync(); err != nil {
				t.Fatalf("vulkan: %v", err)
			}
			w := make([]float64, want.Len())
			scale := 0.0
			for i, v := range want.F32() {
				w[i] = float64(v)
				scale = math.Max(scale, math.Abs(w[i]))
			}
			rtol := tc.rtol
			if rtol == 0 {
				rtol = 1e-5
			}
			near(t, tc.name, got.F32(), w, rtol*math.Max(scale, 1), 1e-4)
		})
	}
}
