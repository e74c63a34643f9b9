package gemma3n

import (
	"fmt"
	"mlxchat/models/familytest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// golden is what testdata/make_golden.py stored from Hugging Face
// transformers' Gemma3nForCausalLM (float32, CPU, eager attention).
type golden struct {
	tokens       []int32 // prompt + greedy continuation
	promptLen    int
	logits       []float32 // [len(tokens), vocab], one-shot
	decodeLogits []float32 // [gen, vocab]: cached prefill's last row, then one cached step each
	layerOut     []float32 // [layers, dump, streams, hidden]
	dump         int
}

// needGolden fails the test when the committed fixtures of make_golden.py
// are missing: they are the independent reference, so a run without them
// must not pass quietly.
func needGolden(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "golden.safetensors")); err != nil {
		t.Fatalf("no golden fixtures in %s (regenerate with testdata/make_golden.py on a machine with transformers): %v", dir, err)
	}
}

func readGolden(t *testing.T, dir string) *golden {
	t.Helper()
	f, err := checkpoint.OpenSafetensors(filepath.Join(dir, "golden.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vals, shapes := familytest.Tensors(t, f)
	g := &golden{
		promptLen:    int(vals["prompt_len"][0]),
		logits:       vals["logits"],
		decodeLogits: vals["decode_logits"],
		layerOut:     vals["layer_out"],
		dump:         shapes["layer_out"][1],
	}
	for _, v := range vals["tokens"] {
		g.tokens = append(g.tokens, int32(v))
	}
	return g
}

// goldenTolerance is the allowed |Δlogit| relative to the largest golden
// logit (|logit| reaches ~10-20 in these fixtures). Both sides compute in
// float32 from the same BF16-exact weights; they differ only in the order
// of float32 sums (matmul blocking, attention, norms), i.e. a few ulps per
// op amplified through 6-8 layers of norms, 4 AltUp streams and attention.
// That measures ~1e-6 relative here, so 1e-4 is the fp32 bound the issue
// asks for while any real divergence (a wrong constant, mask, position or
// norm) moves logits by 1e-2 or more.
const goldenTolerance = 1e-4

// goldenFixtures are make_golden.py's fixtures with their tolerances. The
// quantized ones (MLX affine codes in model.safetensors, the reference run
// on exactly the dequantized weights) are held to the same 1e-4 where the
// network allows it: the CPU's quantized products are float32-precise at
// any row count (decode rounds x per group to 24 bits or finer, tensor/cpu/doc.go),
// and tiny_b_q8g128 measures up to 6.8e-5. tiny_b_mixed's weights make a
// network that amplifies float32 rounding (layer errors jump ~10x at its
// first non-sparse layers): a dense F32 copy of exactly its dequantized
// weights already lands 1.2e-4 from transformers (chunks of 7), and the
// quantized model measures up to 2.2e-4 (chunks of 1), so it gets 3e-4.
// Their prompts have no near ties in the greedy steps, so the ids must
// match transformers' exactly.
var goldenFixtures = []struct {
	name string
	tol  float64
}{
	{"tiny_a", goldenTolerance},
	{"tiny_b", goldenTolerance},
	{"tiny_b_q8g128", goldenTolerance}, // 8-bit, group 128 everywhere
	{"tiny_b_mixed", 3e-4},             // 4-bit g64 with 8-bit g32/64/128, 4-bit g128 and dense overrides
}

func TestGolden(t *testing.T) {
	be := newBackend(t)
	for _, fx := range goldenFixtures {
		t.Run(fx.name, func(t *testing.T) {
			dir := filepath.Join("testdata", fx.name)
			needGolden(t, dir)
			g := readGolden(t, dir)
			m := load(t, dir, be)
			vocab := m.Config().VocabSize
			T, P := len(g.tokens), g.promptLen
			scale := familytest.MaxAbs(g.logits)
			tol := fx.tol * scale

			// One-shot over the whole sequence, tracing layer outputs.
			var layerDiff []float64
			S, H := m.cfg.AltUpInputs, m.cfg.Hidden
			m.trace = func(layer int, x *tensor.Tensor) {
				xs := x.F32()
				d := 0.0
				for p := 0; p < g.dump; p++ {
					for s := 0; s < S; s++ {
						got := xs[(s*T+p)*H : (s*T+p+1)*H]
						off := ((layer*g.dump+p)*S + s) * H
						d = max(d, familytest.MaxDiff(got, g.layerOut[off:off+H])/max(familytest.MaxAbs(g.layerOut[off:off+H]), 1))
					}
				}
				layerDiff = append(layerDiff, d)
			}
			oneShot, _ := familytest.Prefill(t, m, kvcache.DefaultOptions(), g.tokens, T)
			m.trace = nil
			if d := familytest.MaxDiff(oneShot, g.logits); d > tol {
				t.Errorf("one-shot logits: max |Δ| %.3g > %.3g; per-layer relative output error %s", d, tol, fmtDiffs(layerDiff))
			} else {
				t.Logf("one-shot logits: max |Δ| %.3g (tolerance %.3g); layer errors %s", d, tol, fmtDiffs(layerDiff))
			}

			// Chunked prefill of the same sequence.
			for _, chunk := range []int{1, 7, 64} {
				got, _ := familytest.Prefill(t, m, kvcache.DefaultOptions(), g.tokens, chunk)
				if d := familytest.MaxDiff(got, g.logits); d > tol {
					t.Errorf("chunk %d: max |Δ| %.3g > %.3g (%.2g of max |logit|)", chunk, d, tol, d/scale)
				} else {
					t.Logf("chunk %d: max |Δ| %.2g of max |logit|", chunk, d/scale)
				}
			}

			// Greedy decode after a one-shot prompt prefill.
			gen := len(g.decodeLogits) / vocab
			c, err := m.NewCache(kvcache.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			lg, err := m.Forward(c, g.tokens[:P], true)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int32
			for step := 0; step < gen; step++ {
				row := lg.F32()
				if d := familytest.MaxDiff(row, g.decodeLogits[step*vocab:(step+1)*vocab]); d > tol {
					t.Errorf("decode step %d: max |Δ| %.3g > %.3g", step, d, tol)
				}
				next := familytest.Argmax(row)
				ids = append(ids, next)
				if step+1 < gen {
					if lg, err = m.Forward(c, []int32{next}, true); err != nil {
						t.Fatal(err)
					}
				}
			}
			if want := g.tokens[P : P+gen]; !slices.Equal(ids, want) {
				t.Errorf("greedy ids %v, want %v", ids, want)
			}
			if c.Offset() != P+gen-1 {
				t.Errorf("offset %d after decode, want %d", c.Offset(), P+gen-1)
			}
		})
	}
}

func fmtDiffs(d []float64) string {
	s := "["
	for i, v := range d {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.1e", v)
	}
	return s + "]"
}

// TestGoldenInfo checks what the fixtures' configs say: stop ids from
// generation_config.json, the cache layout with transformers' KV-sharing
// sources, per-type RoPE bases and the parsed sizes.
func TestGoldenInfo(t *testing.T) {
	be := newBackend(t)
	for _, tc := range []struct {
		name          string
		windows       []int
		shared        []int
		ropeG, ropeL  float64
		inter         []int
		sparse        []float64
		vocabPerLayer int
	}{
		{"tiny_a", []int{8, 8, 8, 0, 8, 0}, []int{-1, -1, -1, -1, 2, 3}, 1e6, 1e4,
			[]int{128, 128, 128, 128, 128, 128}, []float64{0.95, 0.95, 0, 0, 0, 0}, 384},
		{"tiny_b", []int{16, 0, 16, 16, 0, 16, 16, 0}, []int{-1, -1, -1, -1, -1, 3, 3, 4}, 5e5, 1e4,
			[]int{192, 192, 192, 128, 128, 128, 128, 128}, []float64{0.95, 0.95, 0.95, 0, 0, 0, 0, 0}, 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			needGolden(t, filepath.Join("testdata", tc.name))
			m := load(t, filepath.Join("testdata", tc.name), be)
			info := m.Config()
			if !slices.Equal(info.StopIDs, []int32{1, 106}) {
				t.Errorf("stop ids %v, want [1 106]", info.StopIDs)
			}
			for i, l := range info.Layers {
				if l.Window != tc.windows[i] || l.SharedFrom != tc.shared[i] {
					t.Errorf("layer %d: window %d shared-from %d, want %d %d", i, l.Window, l.SharedFrom, tc.windows[i], tc.shared[i])
				}
			}
			c := m.TextConfig()
			if c.RopeGlobal != tc.ropeG || c.RopeLocal != tc.ropeL || !slices.Equal(c.Intermediate, tc.inter) ||
				!slices.Equal(c.Sparsity, tc.sparse) || c.VocabPerLayer != tc.vocabPerLayer {
				t.Errorf("parsed config %+v", c)
			}
		})
	}
}
