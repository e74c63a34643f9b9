package gemma3n

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/models/checkpoint"
	"mlxchat/models/synth"
)

// FuzzParseConfig feeds arbitrary config.json bytes (seeded with the tiny
// model's) to ParseConfig: it must never panic, every error is one line
// naming the file, and an accepted configuration has sizes within the
// sane ranges and per-layer tables of num_hidden_layers entries.
func FuzzParseConfig(f *testing.F) {
	dir := f.TempDir()
	if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4, GroupSize: 64, Seed: 1}); err != nil {
		f.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"model_type":"gemma3n","text_config":{"num_hidden_layers":-1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		root, err := checkpoint.ParseConfig("m/config.json", data)
		if err != nil {
			return
		}
		c, err := ParseConfig(root)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "m/config.json") || strings.Contains(msg, "\n") {
				t.Fatalf("error is not one line naming config.json: %q", msg)
			}
			return
		}
		if c.Layers < 1 || c.Layers > checkpoint.MaxLayers || c.Vocab > checkpoint.MaxVocab || c.HeadDim > checkpoint.MaxHeadDim {
			t.Fatalf("accepted sizes out of range: %+v", c)
		}
		if len(c.Intermediate) != c.Layers || len(c.Sliding) != c.Layers || len(c.Sparsity) != c.Layers {
			t.Fatalf("per-layer tables of %d/%d/%d entries for %d layers", len(c.Intermediate), len(c.Sliding), len(c.Sparsity), c.Layers)
		}
		_ = c.SharedFrom()
	})
}
