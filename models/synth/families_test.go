package synth_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"mlxchat/models/synth"
	"mlxchat/tensor"
)

// TestFullLayoutDetails checks the layout facts of the full-size family
// checkpoints that a loader test would not notice: which modules the
// converter left dense, the tied lm_head copies of the Gemma 3
// conversions, and the quantization block's keys.
func TestFullLayoutDetails(t *testing.T) {
	specs := func(fam string) map[string]synth.TensorSpec {
		d, err := synth.FullFamily(fam)
		if err != nil {
			t.Fatal(err)
		}
		s, err := synth.FamilySpecs(d, synth.Options{Bits: 4})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]synth.TensorSpec{}
		for _, x := range s {
			m[x.Name] = x
		}
		return m
	}
	g := specs("gemma3")
	for name, want := range map[string][]int{
		"language_model.model.embed_tokens.weight":                            {262208, 320},
		"language_model.lm_head.weight":                                       {262208, 320},
		"vision_tower.vision_model.encoder.layers.26.self_attn.q_proj.weight": {1152, 144},
		"vision_tower.vision_model.encoder.layers.26.mlp.fc2.weight":          {1152, 4304},
		"vision_tower.vision_model.embeddings.patch_embedding.weight":         {1152, 14, 14, 3},
		"vision_tower.vision_model.embeddings.position_embedding.weight":      {4096, 144},
		"multi_modal_projector.mm_input_projection_weight":                    {1152, 2560},
	} {
		s, ok := g[name]
		if !ok {
			t.Errorf("gemma3: no %s", name)
			continue
		}
		if len(s.Shape) != len(want) || s.Shape[0] != want[0] || s.Shape[len(want)-1] != want[len(want)-1] {
			t.Errorf("gemma3 %s: shape %v, want %v", name, s.Shape, want)
		}
	}
	if _, ok := g["vision_tower.vision_model.encoder.layers.0.mlp.fc2.scales"]; ok {
		t.Error("gemma3: fc2 (input 4304) is quantized")
	}
	if _, ok := specs("gemma3_text")["lm_head.scales"]; !ok {
		t.Error("gemma3_text: no quantized lm_head copy")
	}
	for fam, head := range map[string]bool{"llama": false, "qwen3": false, "cohere2": false, "olmo3": true} {
		if _, ok := specs(fam)["lm_head.weight"]; ok != head {
			t.Errorf("%s: lm_head present %v, want %v", fam, ok, head)
		}
	}
	if s := specs("olmo3")["model.layers.0.self_attn.k_norm.weight"]; s.Shape[0] != 4096 {
		t.Errorf("olmo3 k_norm %v, want the full K*d width 4096", s.Shape)
	}
	for fam, want := range map[string][2]bool{ // mode, quantization_config
		"llama": {false, true}, "qwen3": {false, true}, "olmo3": {true, true}, "gemma3": {false, false}, "cohere2": {false, true},
	} {
		d, err := synth.TinyFamily(fam)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if _, err := synth.WriteFamily(dir, d, synth.Options{Bits: 4, ZeroData: true}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(data, &cfg); err != nil {
			t.Fatal(err)
		}
		q, _ := cfg["quantization"].(map[string]any)
		_, hasMode := q["mode"]
		_, hasQC := cfg["quantization_config"]
		if q["group_size"] != 64.0 || q["bits"] != 4.0 || hasMode != want[0] || hasQC != want[1] {
			t.Errorf("%s: quantization %v, quantization_config present %v; want mode %v, quantization_config %v", fam, q, hasQC, want[0], want[1])
		}
	}
	for fam, want := range map[string]tensor.DType{"llama": tensor.F16, "qwen3": tensor.BF16, "olmo3": tensor.BF16, "gemma3": tensor.F16} {
		if dt, err := synth.StoredDType(fam); err != nil || dt != want {
			t.Errorf("%s stores %s, want %s", fam, dt, want)
		}
	}
}

// ZeroData writes no data: the files are holes.
func TestZeroDataSparse(t *testing.T) {
	d, err := synth.FullFamily("olmo3")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := synth.WriteFamily(dir, d, synth.Options{Bits: 4, ZeroData: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, res.Files[0]))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < res.Bytes {
		t.Fatalf("file of %d bytes holds %d bytes of tensors", st.Size(), res.Bytes)
	}
	f, err := os.Open(filepath.Join(dir, res.Files[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	if _, err := f.ReadAt(buf, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	for _, b := range buf {
		if b != 0 {
			t.Fatal("ZeroData wrote data")
		}
	}
}
