//go:build linux || (darwin && arm64)

package metal_test

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

// goldenTolerance is |Δlogit| relative to the largest golden logit: the
// GPU kernels sum in other orders than transformers' float32 CPU run
// (measured 2.5e-5 and 3.8e-5 through the fake on lavapipe).
const goldenTolerance = 1e-4

// TestGoldenMetal runs the Gemma 3n fixtures of models/gemma3n/testdata
// (logits from Hugging Face transformers, made by make_golden.py) on the
// Metal backend: through the fake Metal device on Linux (every call
// contract-checked, the kernels run as SPIR-V on lavapipe), on the GPU on
// a Mac. Prefill in chunks of 5 gives every row's logits; a cached greedy
// decode gives the decode rows. Each fixture runs unfused (the default)
// and fused.
func TestGoldenMetal(t *testing.T) {
	be := metalBackend(t)
	// The default (unfused) decode and the fused kernels (gpu.FuseAll),
	// which are kept as an option.
	type fusionSetter interface{ SetFusionMode(gpu.Fusion) }
	fs, ok := any(be).(fusionSetter)
	if !ok {
		t.Fatalf("backend %T cannot set its fusion mode", be)
	}
	defer fs.SetFusionMode(gpu.DefaultFusion)
	for _, run := range []struct {
		name   string
		fusion gpu.Fusion
	}{{"tiny_a", gpu.DefaultFusion}, {"tiny_b", gpu.DefaultFusion}, {"fused/tiny_a", gpu.FuseAll}, {"fused/tiny_b", gpu.FuseAll}} {
		name := filepath.Base(run.name)
		t.Run(run.name, func(t *testing.T) {
			fs.SetFusionMode(run.fusion)
			dir := filepath.Join("..", "models", "gemma3n", "testdata", name)
			g := readGolden(t, filepath.Join(dir, "golden.safetensors"))
			m, err := models.Load(dir, be)
			if err != nil {
				t.Fatal(err)
			}
			defer m.(io.Closer).Close()
			vocab := m.Config().VocabSize
			tokens := g["tokens"]
			ids := make([]int32, len(tokens))
			for i, v := range tokens {
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
			lg, err := m.Forward(c, ids[:P], true)
			for step := 0; err == nil && step < len(dec)/vocab; step++ {
				row := lg.F32()
				if d := maxDiff(row, dec[step*vocab:(step+1)*vocab]); d > tol {
					t.Errorf("decode step %d: max |Δ| %.3g > %.3g", step, d, tol)
				}
				lg, err = m.Forward(c, ids[P+step:P+step+1], true)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
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
