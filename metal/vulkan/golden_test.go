//go:build linux

package vulkan

import (
	"io"
	"path/filepath"
	"testing"

	"mlxchat/metal/gpu"
	"mlxchat/models"
	"mlxchat/models/familytest"
)

// goldenTolerance is |Δlogit| relative to the largest golden logit (the
// kernels sum in other orders than transformers' float32 CPU run).
const goldenTolerance = 1e-4

// TestGoldenVulkan runs the Gemma 3n fixtures of models/gemma3n/testdata
// (logits from Hugging Face transformers, made by make_golden.py) on the
// Vulkan backend, with every fusion mode (all, matrix-vector segments
// only, off) and, with fusion off, chains on (the default) and off:
// lavapipe in CI, the GPU on the device machine. Prefill in chunks of 5
// gives every row's logits; a cached greedy decode over the fixture's
// tokens gives the decode rows, which run as replayed steps.
func TestGoldenVulkan(t *testing.T) {
	b, _ := open(t)
	for _, mode := range []struct {
		name   string
		fusion gpu.Fusion
		chains bool
	}{{"fused", gpu.FuseAll, false}, {"segments", gpu.FuseSegments, false}, {"unfused", gpu.FuseOff, false}, {"chained", gpu.FuseOff, true}} {
		for _, name := range []string{"tiny_a", "tiny_b"} {
			t.Run(mode.name+"/"+name, func(t *testing.T) {
				if err := b.DropWeights(); err != nil {
					t.Fatal(err)
				}
				b.SetFusionMode(mode.fusion)
				b.SetChains(mode.chains)
				defer b.SetFusionMode(gpu.DefaultFusion)
				defer b.SetChains(true)
				dir := filepath.Join("..", "..", "models", "gemma3n", "testdata", name)
				m, err := models.Load(dir, b)
				if err != nil {
					t.Fatal(err)
				}
				defer m.(io.Closer).Close()
				st0 := b.Stats()
				familytest.CheckChunkedDecode(t, m, filepath.Join(dir, "golden.safetensors"), 5, goldenTolerance)
				st := b.Stats()
				t.Logf("%d steps, %d segments submitted early", st.Flushes-st0.Flushes, st.EarlySubmits-st0.EarlySubmits)
			})
		}
	}
}
