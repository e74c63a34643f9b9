//go:build linux

package vulkan

import (
	"io"
	"math"
	"path/filepath"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/metal/gpu"
	"mlxchat/models"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// goldenTolerance is |Δlogit| relative to the largest golden logit (the
// kernels sum in other orders than transformers' float32 CPU run).
const goldenTolerance = 1e-4

// TestGoldenVulkan runs the Gemma 3n fixtures of models/gemma3n/testdata
// (logits from Hugging Face transformers, made by make_golden.py) on the
// Vulkan backend, with every fusion mode (all, matrix-vector segments
// only, off): lavapipe in CI,
// the GPU on the device machine. Prefill in chunks of 5 gives every row's
// logits; a cached greedy decode over the fixture's tokens gives the
// decode rows, which run as fused, replayed steps.
func TestGoldenVulkan(t *testing.T) {
	b, _ := open(t)
	for _, mode := range []struct {
		name   string
		fusion gpu.Fusion
	}{{"fused", gpu.FuseAll}, {"segments", gpu.FuseSegments}, {"unfused", gpu.FuseOff}} {
		for _, name := range []string{"tiny_a", "tiny_b"} {
			t.Run(mode.name+"/"+name, func(t *testing.T) {
				if err := b.DropWeights(); err != nil {
					t.Fatal(err)
				}
				b.SetFusionMode(mode.fusion)
				defer b.SetFusionMode(gpu.DefaultFusion)
				dir := filepath.Join("..", "..", "models", "gemma3n", "testdata", name)
				g := readGolden(t, filepath.Join(dir, "golden.safetensors"))
				m, err := models.Load(dir, b)
				if err != nil {
					t.Fatal(err)
				}
				defer m.(io.Closer).Close()
				vocab := m.Config().VocabSize
				ids := make([]int32, len(g["tokens"]))
				for i, v := range g["tokens"] {
					ids[i] = int32(v)
				}
				P := int(g["prompt_len"][0])
				tol := goldenTolerance * maxAbs(g["logits"])
				c, err := m.NewCache(kvcache.DefaultOptions())
				if err != nil {
					t.Fatal(err)
				}
				var got []float32
				for lo := 0; lo < len(ids); lo += 5 {
					lg, err := m.Forward(c, ids[lo:min(lo+5, len(ids))], false)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, lg.F32()...)
				}
				if d := maxDiff(got, g["logits"]); d > tol {
					t.Errorf("chunked prefill logits: max |Δ| %.3g > %.3g", d, tol)
				} else {
					t.Logf("chunked prefill logits: max |Δ| %.3g (tolerance %.3g)", d, tol)
				}
				c, err = m.NewCache(kvcache.DefaultOptions())
				if err != nil {
					t.Fatal(err)
				}
				dec := g["decode_logits"]
				steps := len(dec) / vocab
				if steps == 0 {
					t.Fatal("fixture has no decode logits")
				}
				worst := 0.0
				lg, err := m.Forward(c, ids[:P], true)
				for step := 0; err == nil && step < steps; step++ {
					d := maxDiff(lg.F32(), dec[step*vocab:(step+1)*vocab])
					worst = math.Max(worst, d)
					if d > tol {
						t.Errorf("decode step %d: max |Δ| %.3g > %.3g", step, d, tol)
					}
					lg, err = m.Forward(c, ids[P+step:P+step+1], true)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%d decode steps: max |Δ| %.3g (tolerance %.3g)", steps, worst, tol)
			})
		}
	}
}

// readGolden returns every tensor of a golden.safetensors file as floats.
func readGolden(t *testing.T, path string) map[string][]float32 {
	t.Helper()
	f, err := checkpoint.OpenSafetensors(path)
	if err != nil {
		t.Fatalf("golden fixtures (made by models/gemma3n/testdata/make_golden.py): %v", err)
	}
	defer f.Close()
	out := map[string][]float32{}
	for _, info := range f.Tensors {
		data, err := f.Data(info)
		if err != nil {
			t.Fatal(err)
		}
		x, err := tensor.FromBytes(info.DType, info.Shape, data)
		if err != nil {
			t.Fatal(err)
		}
		if out[info.Name], err = x.ToF32(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func maxAbs(x []float32) float64 {
	m := 0.0
	for _, v := range x {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	m := 0.0
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		m = math.Max(m, d)
	}
	return m
}
