package gemma3n

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models/checkpoint"
	"mlxchat/models/synth"
	"mlxchat/tensor"
)

// quantizePair writes two checkpoints made from the dense checkpoint in
// src: q, where every matrix MLX would quantize (2-D ".weight" tensors
// whose input size is a multiple of the group, except AltUp's coefficient
// matrices) is quantized with tensor.QuantizeAffine, and d, where those
// matrices are stored dense as the F32 values the quantized ones
// dequantize to. Both carry src's config.json (q with a quantization
// block) and generation_config.json.
func quantizePair(t *testing.T, src string, bits, group int) (q, d string, nq int) {
	t.Helper()
	ck, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	q, d = t.TempDir(), t.TempDir()
	var qs, ds []synth.TensorSpec
	for _, name := range ck.Names() {
		x, err := ck.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		keep := synth.TensorSpec{Name: name, DType: x.DType, Shape: x.Shape, Data: x.Data}
		quantizable := len(x.Shape) == 2 && strings.HasSuffix(name, ".weight") &&
			!strings.Contains(name, "_coefs.") && x.Shape[1]%group == 0 && x.DType.IsFloat()
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
		base := strings.TrimSuffix(name, ".weight")
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
			cfg["quantization"] = map[string]any{"group_size": group, "bits": bits}
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

// quantTolerance bounds quantized-vs-dequantized prompt logits relative to
// the largest logit. Both models hold the same float32 weights
// (scale·q + bias is exact in float32 for BF16 scales and 4/8-bit codes);
// the CPU prefill kernels (four float rows per pass) only sum in another
// order (Σ_g s_g·Σq·x + b_g·Σx), ~1e-5 relative per product.
const quantTolerance = 1e-4

// quantDecodeTolerance is the same bound for single-token steps, which the
// CPU backend runs through its decode matvec: it rounds x to int16 per
// group of 64 (tensor/cpu/doc.go) and, measured on one unit-scale 4-bit
// product, is off by ~1e-4 absolute (the float prefill path by ~1e-5).
// Through 10 layers of norms and attention that grew to 1.2e-3 of the
// largest logit over 12 steps, so the bound is 1e-2: still far below what a
// wrong scale, bias, group or nibble order does (O(1) changes), and the
// greedy ids must agree as well.
const quantDecodeTolerance = 1e-2

// TestQuantizedMatchesDequantized runs a model quantized with the project's
// MLX quantizer against a dense model holding exactly the dequantized
// weights: prompt logits (chunked) and a greedy decode must agree.
func TestQuantizedMatchesDequantized(t *testing.T) {
	cases := []struct {
		name        string
		src         string
		bits, group int
	}{
		{"synthetic 4-bit g64", "", 4, 64},
		{"golden tiny_a 4-bit g64 (mixed dense)", filepath.Join("testdata", "tiny_a"), 4, 64},
		{"golden tiny_b 8-bit g32", filepath.Join("testdata", "tiny_b"), 8, 32},
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
			qdir, ddir, nq := quantizePair(t, src, tc.bits, tc.group)
			if nq == 0 {
				t.Fatal("nothing was quantized")
			}
			qm, dm := load(t, qdir, be), load(t, ddir, be)
			if !qm.embed.Quantized() || dm.embed.Quantized() {
				t.Fatalf("embedding quantized: %v (q) %v (d)", qm.embed.Quantized(), dm.embed.Quantized())
			}
			ids := randomIDs(11, 40, qm.Config().VocabSize)
			want, dc := prefill(t, dm, kvcache.DefaultOptions(), ids, 16)
			got, qc := prefill(t, qm, kvcache.DefaultOptions(), ids, 16)
			scale := maxAbs(want)
			if d := maxDiff(got, want); d > quantTolerance*scale {
				t.Fatalf("prompt logits differ by %.3g > %.3g", d, quantTolerance*scale)
			}
			vocab := qm.Config().VocabSize
			next := argmax(want[len(want)-vocab:])
			for step := 0; step < 12; step++ {
				a, err := dm.Forward(dc, []int32{next}, true)
				if err != nil {
					t.Fatal(err)
				}
				b, err := qm.Forward(qc, []int32{next}, true)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxDiff(b.F32(), a.F32()); d > quantDecodeTolerance*scale {
					t.Fatalf("decode step %d: logits differ by %.3g", step, d)
				}
				// The greedy ids must agree wherever the dense top two
				// logits are further apart than the tolerance allows the
				// quantized ones to move (tiny_b has near ties).
				if argmax(b.F32()) != argmax(a.F32()) && topGap(a.F32()) > 2*quantDecodeTolerance*scale {
					t.Fatalf("decode step %d: greedy ids differ (top-2 gap %.3g)", step, topGap(a.F32()))
				}
				next = argmax(a.F32())
			}
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
