package synth_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mlxchat/models/checkpoint"
	"mlxchat/models/synth"
	"mlxchat/tensor"
)

func TestTinyDeterministic(t *testing.T) {
	read := func(seed uint64) []byte {
		dir := t.TempDir()
		if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := read(7), read(7), read(8)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed gave different bytes")
	}
	if bytes.Equal(a, c) {
		t.Fatal("different seeds gave the same bytes")
	}
}

// TestTinyValuesSane opens tiny checkpoints and checks every float tensor
// is finite and every quantized matrix dequantizes to bounded values, so a
// forward pass on them gives finite logits.
func TestTinyValuesSane(t *testing.T) {
	for _, opt := range []synth.Options{{Bits: 4}, {Bits: 8, GroupSize: 32, ScaleDType: tensor.F16}, {DenseDType: tensor.F32}} {
		dir := t.TempDir()
		res, err := synth.WriteTiny(dir, opt)
		if err != nil {
			t.Fatal(err)
		}
		c, err := checkpoint.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Names()) != res.Tensors || c.TotalBytes() != res.Bytes {
			t.Fatalf("wrote %d tensors %d bytes, read %d %d", res.Tensors, res.Bytes, len(c.Names()), c.TotalBytes())
		}
		for _, n := range c.Names() {
			x, err := c.Tensor(n)
			if err != nil {
				t.Fatal(err)
			}
			if x.DType == tensor.U32 {
				continue
			}
			if x.DType != opt.ScaleDType && x.DType != tensor.BF16 && x.DType != tensor.F32 && x.DType != tensor.F16 {
				t.Fatalf("%s: dtype %s", n, x.DType)
			}
			v, _ := x.ToF32()
			for _, f := range v {
				if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) || math.Abs(float64(f)) > 2 {
					t.Fatalf("%s: value %v", n, f)
				}
			}
		}
		for _, p := range res.Quantized {
			m, err := c.Matrix(p)
			if err != nil {
				t.Fatal(err)
			}
			if m.Bits != opt.Bits {
				t.Fatalf("%s: bits %d", p, m.Bits)
			}
		}
		c.Close()
	}
}

// TestE2BMatchesTransformers compares the E2B layout synth writes (dense,
// without the unused KV-shared projections) with the parameter list
// transformers produced, after mlx-vlm's renaming and kernel transposes.
func TestE2BMatchesTransformers(t *testing.T) {
	params, err := synth.LoadE2BParams()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{}
	for _, p := range params.Tensors {
		if p.Name == "lm_head.weight" {
			continue // tied to embed_tokens; never stored
		}
		name := p.Name
		if strings.HasPrefix(name, "model.language_model.") {
			name = "language_model.model." + strings.TrimPrefix(name, "model.language_model.")
		} else {
			name = strings.TrimPrefix(name, "model.")
		}
		want[name] = synth.MLXVLMShape(name, p.Shape)
	}
	specs, err := synth.Specs(synth.E2BGemma3n(), synth.Options{OmitSharedKV: true, Towers: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int{}
	for _, s := range specs {
		got[s.Name] = s.Shape
		if w, ok := want[s.Name]; !ok {
			t.Errorf("synth writes %s %v, transformers has no such parameter", s.Name, s.Shape)
		} else if !slices.Equal(w, s.Shape) {
			t.Errorf("%s: synth shape %v, transformers %v", s.Name, s.Shape, w)
		}
	}
	for n, s := range want {
		if _, ok := got[n]; !ok {
			t.Errorf("transformers has %s %v, synth does not write it", n, s)
		}
	}
	// The real upload keeps the unused k/v projections of layers 20-29.
	full, err := synth.Specs(synth.E2BGemma3n(), synth.Options{Towers: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(full)-len(specs) != 30 {
		t.Fatalf("KV-shared layers add %d tensors, want 30 (10 layers x k_proj, v_proj, k_norm)", len(full)-len(specs))
	}
}

// TestE2BQuantLayout checks which modules the 4-bit E2B layout quantizes:
// every linear/embedding outside the towers whose input is a multiple of 64.
func TestE2BQuantLayout(t *testing.T) {
	specs, err := synth.Specs(synth.E2BGemma3n(), synth.Options{Bits: 4, Towers: true})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]synth.TensorSpec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	var bytesTotal int64
	for _, s := range specs {
		bytesTotal += s.Bytes()
		tower := strings.HasPrefix(s.Name, "vision_tower.") || strings.HasPrefix(s.Name, "audio_tower.")
		if strings.HasSuffix(s.Name, ".scales") {
			if tower || s.DType != tensor.BF16 {
				t.Errorf("%s: quantized tower or scale dtype %s", s.Name, s.DType)
			}
			w := byName[strings.TrimSuffix(s.Name, ".scales")+".weight"]
			if w.DType != tensor.U32 || w.Shape[1]*8 != s.Shape[1]*64 {
				t.Errorf("%s: weight %s%v vs scales %v", s.Name, w.DType, w.Shape, s.Shape)
			}
		}
		if strings.HasSuffix(s.Name, "prediction_coefs.weight") || strings.HasSuffix(s.Name, "correction_coefs.weight") {
			if s.DType != tensor.BF16 {
				t.Errorf("%s should stay dense BF16, got %s", s.Name, s.DType)
			}
		}
	}
	for _, m := range []string{"language_model.model.embed_tokens", "language_model.model.embed_tokens_per_layer",
		"language_model.model.layers.29.laurel.linear_right", "language_model.model.layers.0.altup.modality_router",
		"embed_vision.embedding", "embed_audio.embedding_projection"} {
		if _, ok := byName[m+".scales"]; !ok {
			t.Errorf("%s is not quantized", m)
		}
	}
	if w := byName["language_model.model.embed_tokens_per_layer.weight"]; !slices.Equal(w.Shape, []int{262144, 7680 / 8}) {
		t.Errorf("per-layer embedding shape %v", w.Shape)
	}
	t.Logf("E2B 4-bit with towers: %d tensors, %.2f GB", len(specs), float64(bytesTotal)/1e9)
}

func TestWriteSafetensorsErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name  string
		specs []synth.TensorSpec
		want  string
	}{
		{"duplicate", []synth.TensorSpec{{Name: "a", DType: tensor.F32, Shape: []int{1}}, {Name: "a", DType: tensor.F32, Shape: []int{1}}}, `duplicate tensor name "a"`},
		{"data size", []synth.TensorSpec{{Name: "a", DType: tensor.F32, Shape: []int{2}, Data: make([]byte, 4)}}, "needs 8 bytes, got 4"},
		{"uniform int", []synth.TensorSpec{{Name: "a", DType: tensor.U32, Shape: []int{2}}}, "uniform fill needs a float dtype"},
		{"bad dtype", []synth.TensorSpec{{Name: "a", Shape: []int{2}}}, "bad dtype"},
	}
	for _, tc := range cases {
		err := synth.WriteSafetensors(filepath.Join(dir, tc.name), tc.specs, nil, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, opt := range []synth.Options{{Bits: 3}, {Bits: 4, GroupSize: 48}, {Towers: true, Naming: synth.NamingMLXLM}} {
		if _, err := synth.WriteTiny(t.TempDir(), opt); err == nil {
			t.Errorf("options %+v accepted", opt)
		}
	}
}

func TestNamingMLXLM(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4, Naming: synth.NamingMLXLM, OmitSharedKV: true}); err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p, ok := c.HasPrefix("language_model.model.", "model.language_model."); !ok || p != "model.language_model." {
		t.Fatalf("prefix %q", p)
	}
	if c.Has("model.language_model.layers.9.self_attn.k_proj.weight") || !c.Has("model.language_model.layers.5.self_attn.k_proj.weight") {
		t.Fatal("OmitSharedKV did not drop exactly the shared layers' k_proj")
	}
}

// TestFastQuantSane writes tiny dims with the fast quantized fill the
// full-size E2B writer uses and checks every quantized weight dequantizes
// to a finite value within the intended +-sqrt(3/in) (plus scale jitter).
func TestFastQuantSane(t *testing.T) {
	dir := t.TempDir()
	res, err := synth.WriteGemma3n(dir, synth.TinyGemma3n(), synth.Options{Bits: 4, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range res.Quantized {
		m, err := c.Matrix(p)
		if err != nil {
			t.Fatal(err)
		}
		scales, _ := m.Scales.ToF32()
		biases, _ := m.Biases.ToF32()
		bound := math.Sqrt(3 / float64(m.In))
		words := m.W.U32()
		per := m.In / 8
		for r := 0; r < m.Out; r++ {
			for i := 0; i < m.In; i++ {
				q := words[r*per+i/8] >> (4 * (i % 8)) & 0xf
				g := r*(m.In/m.GroupSize) + i/m.GroupSize
				w := float64(scales[g])*float64(q) + float64(biases[g])
				if math.IsNaN(w) || math.Abs(w) > 1.15*bound {
					t.Fatalf("%s[%d,%d] = %v outside +-%v", p, r, i, w, bound)
				}
			}
		}
	}
}
