//go:build linux

package vulkan

import (
	"io"
	"path/filepath"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models"
	"mlxchat/models/familytest"
)

// gpuTolerance bounds |Δlogit| against transformers relative to the
// largest logit on the GPU: the 1e-4. The kernels compute in
// float32 (quantized products dequantize to float32, no int16 rounding), so
// they land within ~2e-6 of transformers on these fixtures, 4-bit included.
const gpuTolerance = familytest.Tolerance

// TestFamiliesGolden runs the transformers fixtures of every model family
// (models/<family>/testdata, made by make_golden.py) on the Vulkan backend
// through models.Load: prefill in chunks of 16, decode past the sliding
// window, and the trimmed max-kv scenario, each row against the golden
// logits. The same ops run on Metal through the shared kernels.
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
			checkGolden(t, m, familytest.Read(t, path), kvcache.DefaultOptions(), 16)
			if tc.trim {
				gt := familytest.Read(t, filepath.Join(dir, "golden_trim.safetensors"))
				opts := kvcache.DefaultOptions()
				opts.MaxKV, opts.Sink = gt.MaxKV, gt.Sink
				checkGolden(t, m, gt, opts, gt.Chunk)
			}
		})
	}
}

// checkGolden prefills the golden prompt in chunks and decodes the rest
// one golden token at a time, comparing every row.
func checkGolden(t *testing.T, m models.Model, g *familytest.Golden, opts kvcache.Options, chunk int) {
	t.Helper()
	tol := gpuTolerance * g.Scale()
	c, err := m.NewCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	check := func(pos int, row []float32) {
		d := familytest.MaxDiff(row, g.Row(pos))
		worst = max(worst, d)
		if d > tol {
			t.Errorf("position %d: max |Δ| %.3g > %.3g", pos, d, tol)
		}
	}
	P, V := g.PromptLen, g.Vocab
	for lo := 0; lo < P; lo += chunk {
		hi := min(lo+chunk, P)
		lg, err := m.Forward(c, g.Tokens[lo:hi], false)
		if err != nil {
			t.Fatal(err)
		}
		for r := lo; r < hi; r++ {
			check(r, lg.F32()[(r-lo)*V:(r-lo+1)*V])
		}
	}
	for pos := P; pos < len(g.Tokens); pos++ {
		lg, err := m.Forward(c, g.Tokens[pos:pos+1], true)
		if err != nil {
			t.Fatal(err)
		}
		check(pos, lg.F32())
	}
	st := c.Stats()
	if opts.MaxKV > 0 && st.Trimmed == 0 {
		t.Errorf("max-kv %d trimmed nothing", opts.MaxKV)
	}
	t.Logf("%d rows (max-kv %d, chunk %d, %d trimmed): max |Δ| %.3g = %.2g of max |logit|", len(g.Tokens), opts.MaxKV, chunk, st.Trimmed, worst, worst/g.Scale())
}
