package models

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models/synth"
	"mlxchat/tensor/cpu"
)

func TestLoad(t *testing.T) {
	be := cpu.New(1)
	defer be.Close()
	dir := t.TempDir()
	if _, err := synth.WriteTiny(dir, synth.Options{Seed: 1, Bits: 4}); err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.(io.Closer).Close()
	info := m.Config()
	if info.ModelType != "gemma3n" || info.VocabSize != 512 || len(info.Layers) != info.NumLayers || m.WeightBytes() <= 0 {
		t.Fatalf("info %+v, weight bytes %d", info, m.WeightBytes())
	}
	c, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	lg, err := m.Forward(c, []int32{2, 10, 20}, true)
	if err != nil {
		t.Fatal(err)
	}
	if lg.Shape[0] != 1 || lg.Shape[1] != 512 {
		t.Fatalf("logits %v", lg.Shape)
	}

	for _, tc := range []struct {
		name, config, want string
	}{
		{"unknown type", `{"model_type":"llama4"}`, `model_type "llama4" not supported`},
		{"no type", `{"hidden_size":4}`, "model_type"},
	} {
		bad := t.TempDir()
		if err := os.WriteFile(filepath.Join(bad, "config.json"), []byte(tc.config), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(bad, be); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := Load(dir, nil); err == nil {
		t.Error("nil backend accepted")
	}
}
