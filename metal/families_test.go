//go:build linux || (darwin && arm64)

package metal_test

import (
	"io"
	"path/filepath"
	"testing"

	"mlxchat/models"
	"mlxchat/models/familytest"
	"mlxchat/tensor"
)

// TestFamiliesGoldenMetal runs the transformers fixtures of every model
// family but Gemma 3n (TestGoldenMetal has those) on the Metal backend
// through models.Load: through the fake Metal device on Linux, on the GPU
// on a Mac. Each fixture prefills in chunks of 16 and decodes the rest one
// golden token at a time; the base fixtures also run the trimmed max-kv
// scenario. Every row stays within familytest.Tolerance of the golden
// logits: each step ran from a recorded plan, one command buffer with its
// launches between barriers free to run in any order (the fake runs them
// reversed).
func TestFamiliesGoldenMetal(t *testing.T) {
	be := tensor.Backend(metalBackend(t))
	drop, ok := be.(interface{ DropWeights() error })
	if !ok {
		t.Fatalf("%T cannot drop the weights of a closed model", be)
	}
	for _, tc := range []struct {
		family, name string
		trim         bool
	}{
		{"gemma3", "text_a", true}, {"gemma3", "text_a_q4", false}, {"gemma3", "mm_b_q4", false}, {"gemma3", "v5_c", false},
		{"llama", "l3_a", true}, {"llama", "l3_a_q8", false}, {"llama", "l3_b", false},
		{"qwen3", "q3_a", true}, {"qwen3", "q3_a_q4", false}, {"qwen3", "q3_b", false},
		{"olmo3", "o3_a", true}, {"olmo3", "o3_a_q4", false}, {"olmo3", "o3_b", false},
		{"cohere2", "c2_a", true}, {"cohere2", "c2_a_q8", false}, {"cohere2", "c2_b", false},
	} {
		t.Run(tc.family+"/"+tc.name, func(t *testing.T) {
			dir := filepath.Join("..", "models", tc.family, "testdata", tc.name)
			path := filepath.Join(dir, "golden.safetensors")
			familytest.Need(t, path)
			// A new model may be mapped where the last one was: its
			// uploaded weights are keyed by address.
			if err := drop.DropWeights(); err != nil {
				t.Fatal(err)
			}
			m, err := models.Load(dir, be)
			if err != nil {
				t.Fatal(err)
			}
			if cl, ok := m.(io.Closer); ok {
				t.Cleanup(func() { cl.Close() })
			}
			familytest.CheckFixture(t, m, dir, 16, tc.trim)
		})
	}
}
