//go:build linux || (darwin && arm64)

package metal_test

import (
	"io"
	"path/filepath"
	"testing"

	"mlxchat/metal/gpu"
	"mlxchat/models"
	"mlxchat/models/familytest"
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
// decode gives the decode rows. Each fixture runs unfused with chains
// (the default), unfused without chains and fused.
func TestGoldenMetal(t *testing.T) {
	be := metalBackend(t)
	// The default (unfused, chained) decode, without chains, and the
	// fused kernels (gpu.FuseAll), which are kept as an option.
	type fusionSetter interface {
		SetFusionMode(gpu.Fusion)
		SetChains(bool)
	}
	fs, ok := any(be).(fusionSetter)
	if !ok {
		t.Fatalf("backend %T cannot set its fusion mode", be)
	}
	defer fs.SetFusionMode(gpu.DefaultFusion)
	defer fs.SetChains(true)
	for _, run := range []struct {
		name   string
		fusion gpu.Fusion
		chains bool
	}{{"tiny_a", gpu.DefaultFusion, true}, {"tiny_b", gpu.DefaultFusion, true}, {"unchained/tiny_a", gpu.DefaultFusion, false}, {"unchained/tiny_b", gpu.DefaultFusion, false},
		{"fused/tiny_a", gpu.FuseAll, true}, {"fused/tiny_b", gpu.FuseAll, true}} {
		name := filepath.Base(run.name)
		t.Run(run.name, func(t *testing.T) {
			fs.SetFusionMode(run.fusion)
			fs.SetChains(run.chains)
			dir := filepath.Join("..", "models", "gemma3n", "testdata", name)
			m, err := models.Load(dir, be)
			if err != nil {
				t.Fatal(err)
			}
			defer m.(io.Closer).Close()
			familytest.CheckChunkedDecode(t, m, filepath.Join(dir, "golden.safetensors"), 5, goldenTolerance)
		})
	}
}
