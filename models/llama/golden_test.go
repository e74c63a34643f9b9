package llama

import (
	"path/filepath"
	"slices"
	"testing"

	"mlxchat/models/familytest"
	"mlxchat/tensor/cpu"
)

// TestGolden runs every fixture of testdata/make_golden.py (transformers on
// tiny random configs) on the CPU backend: logits one-shot, chunked and
// decoded, the RoPE tables, scales and layer types transformers used, and
// the trimmed max-kv scenario of l3_a.
func TestGolden(t *testing.T) {
	be := cpu.New(2)
	t.Cleanup(be.Close)
	for _, tc := range []struct {
		name  string
		stops []int32
		bos   int32
	}{
		{"l3_a", []int32{2, 4}, 1},
		{"l3_a_q4", []int32{2, 4}, 1},
		{"l3_a_q8", []int32{2, 4}, 1},
		{"l3_b", []int32{2}, 1},
	} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			dir := familytest.Dir(name)
			familytest.Need(t, filepath.Join(dir, "golden.safetensors"))
			m, err := Load(dir, be)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			g := familytest.Check(t, m, filepath.Join(dir, "golden.safetensors"))
			familytest.CheckLayout(t, g, m.Decoder)
			if info := m.Config(); !slices.Equal(info.StopIDs, tc.stops) || info.BOSID != tc.bos {
				t.Errorf("stop ids %v, bos %d; want %v, %d", info.StopIDs, info.BOSID, tc.stops, tc.bos)
			}
			if name == "l3_a" {
				familytest.CheckTrim(t, m, filepath.Join(dir, "golden_trim.safetensors"))
			}
		})
	}
}
