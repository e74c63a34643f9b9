//go:build linux || (darwin && arm64)

package metal_test

import (
	"io"
	"path/filepath"
	"testing"

	"mlxchat/kvcache"
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
			checkRows(t, m, familytest.Read(t, path), kvcache.DefaultOptions(), 16)
			if tc.trim {
				gt := familytest.Read(t, filepath.Join(dir, "golden_trim.safetensors"))
				opts := kvcache.DefaultOptions()
				opts.MaxKV, opts.Sink = gt.MaxKV, gt.Sink
				checkRows(t, m, gt, opts, gt.Chunk)
			}
		})
	}
}

// checkRows prefills g's prompt in chunks and decodes the rest one golden
// token at a time, comparing every row's logits with g's.
func checkRows(t *testing.T, m models.Model, g *familytest.Golden, opts kvcache.Options, chunk int) {
	t.Helper()
	tol := familytest.Tolerance * g.Scale()
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
	if st := c.Stats(); opts.MaxKV > 0 && st.Trimmed == 0 {
		t.Errorf("max-kv %d trimmed nothing", opts.MaxKV)
	}
	t.Logf("%d rows (max-kv %d, chunk %d): max |Δ| %.3g = %.2g of max |logit|", len(g.Tokens), opts.MaxKV, chunk, worst, worst/g.Scale())
}
