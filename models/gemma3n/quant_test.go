package gemma3n

import (
	"encoding/json"
	"math"
	"mlxchat/models/familytest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models/checkpoint"
	"mlxchat/models/synth"
	"mlxchat/tensor"
)

// quantOverride is one per-module entry of a quantization block: the
// module (tensor name without ".weight") whose name ends in suffix gets
// bits and group instead of the defaults, or stays dense when bits is 0.
// The first override that matches and fits (input size a multiple of
// the group) applies.
type quantOverride struct {
	suffix      string
	bits, group int
}

// quantizePair writes two checkpoints made from the dense checkpoint in
// src: q, where every matrix MLX would quantize (2-D ".weight" tensors
// whose input size is a multiple of the group, except AltUp's coefficient
// matrices) is quantized with tensor.QuantizeAffine, with bits and group
// or the first fitting override, and d, where those matrices are stored
// dense as the F32 values the quantized ones dequantize to. Both carry
// src's config.json (q with a quantization block that lists every
// override it used, as mlx-lm writes mixed-precision checkpoints) and
// generation_config.json.
func quantizePair(t *testing.T, src string, bits, group int, overrides ...quantOverride) (q, d string, nq int) {
	t.Helper()
	ck, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	q, d = t.TempDir(), t.TempDir()
	var qs, ds []synth.TensorSpec
	quant := map[string]any{"group_size": group, "bits": bits}
	for _, name := range ck.Names() {
		x, err := ck.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		keep := synth.TensorSpec{Name: name, DType: x.DType, Shape: x.Shape, Data: x.Data}
		base := strings.TrimSuffix(name, ".weight")
		bits, group := bits, group
		overridden := false
		if len(x.Shape) == 2 {
			for _, o := range overrides {
				if strings.HasSuffix(base, o.suffix) && (o.bits == 0 || x.Shape[1]%o.group == 0) {
					bits, group, overridden = o.bits, o.group, true
					break
				}
			}
		}
		quantizable := len(x.Shape) == 2 && strings.HasSuffix(name, ".weight") && bits != 0 &&
			!strings.Contains(name, "_coefs.") && x.Shape[1]%group == 0 && x.DType.IsFloat()
		if overridden {
			if quantizable {
				quant[base] = map[string]any{"group_size": group, "bits": bits}
			} else {
				quant[base] = false
			}
		}
		if !quantizable {
			qs, ds = append(qs, keep), append(ds, keep)
			continue
		}
		vals, err := x.ToF32()
		if err != nil {
			t.Fatal(err)
		}
		m, err := tensor.QuantizeAffine(vals, x.Shape[0], x.Shape[1], bits, group, tensor.BF16)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		deq, err := tensor.Dequantize(m)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs,
			synth.TensorSpec{Name: name, DType: tensor.U32, Shape: m.W.Shape, Data: m.W.Data},
			synth.TensorSpec{Name: base + ".scales", DType: m.Scales.DType, Shape: m.Scales.Shape, Data: m.Scales.Data},
			synth.TensorSpec{Name: base + ".biases", DType: m.Biases.DType, Shape: m.Biases.Shape, Data: m.Biases.Data})
		dt := tensor.New(tensor.F32, x.Shape...)
		copy(dt.F32(), deq)
		ds = append(ds, synth.TensorSpec{Name: name, DType: tensor.F32, Shape: x.Shape, Data: dt.Data})
		nq++
	}
	for _, w := range []struct {
		dir   string
		specs []synth.TensorSpec
		quant bool
	}{{q, qs, true}, {d, ds, false}} {
		if err := synth.WriteSafetensors(filepath.Join(w.dir, "model.safetensors"), w.specs, map[string]string{"format": "mlx"}, 0); err != nil {
			t.Fatal(err)
		}
		cfg := map[string]any{}
		raw, err := os.ReadFile(filepath.Join(src, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &cfg); err != nil {
			t.Fatal(err)
		}
		if w.quant {
			cfg["quantization"] = quant
		}
		raw, _ = json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(w.dir, "config.json"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		if gen, err := os.ReadFile(filepath.Join(src, "generation_config.json")); err == nil {
			if err := os.WriteFile(filepath.Join(w.dir, "generation_config.json"), gen, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return q, d, nq
}

// quantTolerance bounds quantized-vs-dequantized logits (prompt and
// decode) relative to the largest logit. Both models hold the same
// float32 weights (scale·q + bias is exact in float32 for BF16 scales and
// 4/8-bit codes); the CPU kernels only round differently: they sum
// Σ_g s_g·Σq·x + b_g·Σx (MLX's formula) or sum in another order, and
// decode rounds x per group to 24 bits or finer, as precise as float32.
// A wrong scale, bias, group or nibble order moves logits by O(1).
const quantTolerance = 1e-4

// illConditioned is the bound for tiny_b at 4-bit g32, whose prompt
// measured 1.3e-4 with the four-row prefill kernels and 3.4e-5 with
// AVX2's 16-row panels (decode 3e-5), so the figure depends on the order
// of sums each CPU path takes: the layer outputs of its second prompt
// row differ by 6.5e-7 after layer 0, a float32 rounding, and its
// non-sparse layers 3-7 amplify that about 200 times. The network, not the
// kernels, does it: the dense dequantized model alone, prefilled in chunks
// of 1 instead of 40 (only the order of float32 sums changes), differs
// from itself by 4.7e-5, growing the same way from 1.8e-7 after layer 0.
const illConditioned = 3e-4

// TestQuantizedMatchesDequantized runs a model quantized with the project's
// MLX quantizer against a dense model holding exactly the dequantized
// weights: prompt logits (chunked) and a greedy decode must agree.
func TestQuantizedMatchesDequantized(t *testing.T) {
	// A mixed checkpoint like mlx-lm's mixed-precision recipes: 4-bit g64
	// by default, the MLP's down projection, the queries and the tied
	// embedding / output head at 8 bits, values at group 128, one layer's
	// keys left dense.
	mixed := []quantOverride{
		{"mlp.down_proj", 8, 128}, {"mlp.down_proj", 8, 64}, {"self_attn.q_proj", 8, 32},
		{"self_attn.v_proj", 4, 128}, {"layers.1.self_attn.k_proj", 0, 0}, {"embed_tokens", 8, 128},
	}
	cases := []struct {
		name        string
		src         string
		bits, group int
		overrides   []quantOverride
		tol         float64 // 0: quantTolerance
	}{
		{"synthetic 4-bit g64", "", 4, 64, nil, 0},
		{"golden tiny_a 4-bit g64 (mixed dense)", filepath.Join("testdata", "tiny_a"), 4, 64, nil, 0},
		{"golden tiny_b 8-bit g32", filepath.Join("testdata", "tiny_b"), 8, 32, nil, 0},
		{"golden tiny_b 8-bit g128", filepath.Join("testdata", "tiny_b"), 8, 128, nil, 0},
		{"golden tiny_b 4-bit g32", filepath.Join("testdata", "tiny_b"), 4, 32, nil, illConditioned},
		{"golden tiny_b mixed 4/8-bit, g32/64/128, dense", filepath.Join("testdata", "tiny_b"), 4, 64, mixed, 0},
		{"golden tiny_a mixed 4/8-bit, g32/64/128, dense", filepath.Join("testdata", "tiny_a"), 4, 64, mixed, 0},
	}
	be := newBackend(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			if src != "" {
				needGolden(t, src)
			}
			if src == "" {
				src = tinyDir(t, synth.Options{Seed: 8, DenseDType: tensor.BF16})
			}
			qdir, ddir, nq := quantizePair(t, src, tc.bits, tc.group, tc.overrides...)
			if nq == 0 {
				t.Fatal("nothing was quantized")
			}
			qm, dm := load(t, qdir, be), load(t, ddir, be)
			if !qm.embed.Quantized() || dm.embed.Quantized() {
				t.Fatalf("embedding quantized: %v (q) %v (d)", qm.embed.Quantized(), dm.embed.Quantized())
			}
			ids := randomIDs(11, 40, qm.Config().VocabSize)
			want, dc := familytest.Prefill(t, dm, kvcache.DefaultOptions(), ids, 16)
			got, qc := familytest.Prefill(t, qm, kvcache.DefaultOptions(), ids, 16)
			scale := familytest.MaxAbs(want)
			tol := quantTolerance * scale
			if tc.tol > 0 {
				tol = tc.tol * scale
			}
			if d := familytest.MaxDiff(got, want); d > tol {
				t.Fatalf("prompt logits differ by %.3g > %.3g (%.2g of max |logit|)", d, tol, d/scale)
			} else {
				t.Logf("prompt logits: max |Δ| %.2g of max |logit|", d/scale)
			}
			vocab := qm.Config().VocabSize
			next := familytest.Argmax(want[len(want)-vocab:])
			worst := 0.0
			for step := 0; step < 12; step++ {
				a, err := dm.Forward(dc, []int32{next}, true)
				if err != nil {
					t.Fatal(err)
				}
				b, err := qm.Forward(qc, []int32{next}, true)
				if err != nil {
					t.Fatal(err)
				}
				d := familytest.MaxDiff(b.F32(), a.F32())
				if d > tol {
					t.Fatalf("decode step %d: logits differ by %.3g > %.3g", step, d, tol)
				}
				worst = max(worst, d)
				// Same weights, float32-precise products: the greedy ids
				// agree exactly (the independent check, against
				// transformers' ids, is TestGolden's on tiny_b_q8g128 and
				// tiny_b_mixed).
				if ga, gb := familytest.Argmax(a.F32()), familytest.Argmax(b.F32()); ga != gb {
					t.Fatalf("decode step %d: greedy id %d, dequantized model %d (top-2 gap %.3g)", step, gb, ga, topGap(a.F32()))
				}
				next = familytest.Argmax(a.F32())
			}
			t.Logf("12 decode steps: max |Δ| %.2g of max |logit|", worst/scale)
			if qm.WeightBytes() >= dm.WeightBytes() {
				t.Errorf("quantized weight bytes %d not below dense %d", qm.WeightBytes(), dm.WeightBytes())
			}
		})
	}
}

// topGap is the difference between the largest and second largest value.
func topGap(x []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, v := range x {
		f := float64(v)
		if f > a {
			a, b = f, a
		} else if f > b {
			b = f
		}
	}
	return a - b
}
