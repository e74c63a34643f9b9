//go:build linux

package vulkan

import (
	"io"
	"path/filepath"
	"testing"

	"mlxchat/models"
	"mlxchat/models/familytest"
)

// TestFamiliesGolden runs the transformers fixtures of every model family
// (models/<family>/testdata, made by make_golden.py) on the Vulkan backend
// through models.Load: prefill in chunks of 16, decode past the sliding
// window, and the trimmed max-kv scenario, each row against the golden
// logits within familytest.Tolerance (the kernels compute in float32 and
// land within ~2e-6 of transformers here, 4-bit included). The same ops
// run on Metal through the shared kernels.
func TestFamiliesGolden(t *testing.T) {
	g, _ := open(t)
	for _, tc := range []struct {
		family, name string
		trim         bool
	}{
		{"gemma3", "text_a", true}, {"gemma3", "text_a_q4", false}, {"gemma3", "mm_b_q4", false}, {"gemma3", "v5_c", false},
		{"llama", "l3_a", true}, {"llama", "l3_a_q8", false}, {"llama", "l3_b", false},
		{"qwen3", "q3_a", true}, {"qwen3", "q3_a_q4", false}, {"qwen3", "q3_b", false},
		{"olmo3", "o3_a", true}, {"olmo3", "o3_a_q4", false},
		{"cohere2", "c2_a", true}, {"cohere2", "c2_a_q8", false}, {"cohere2", "c2_b", false},
	} {
		t.Run(tc.family+"/"+tc.name, func(t *testing.T) {
			dir := filepath.Join("..", "..", "models", tc.family, "testdata", tc.name)
			path := filepath.Join(dir, "golden.safetensors")
			familytest.Need(t, path)
			if err := g.DropWeights(); err != nil {
				t.Fatal(err)
			}
			m, err := models.Load(dir, g)
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
