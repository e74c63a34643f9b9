package gemma3

import (
	"path/filepath"
	"slices"
	"testing"

	"mlxchat/models/blocks"
	"mlxchat/models/familytest"
	"mlxchat/tensor/cpu"
)

// TestGolden runs every fixture of testdata/make_golden.py (transformers'
// Gemma3ForCausalLM on tiny random configs) on the CPU backend.
func TestGolden(t *testing.T) {
	be := cpu.New(2)
	t.Cleanup(be.Close)
	familytest.RunGolden(t, be, Load, func(m *Model) *blocks.Decoder { return m.Decoder }, []familytest.Case{
		{Name: "text_a", Stops: []int32{1, 106}, BOS: 2, Trim: true},
		{Name: "text_a_q4", Stops: []int32{1, 106}, BOS: 2},
		{Name: "text_a_q8", Stops: []int32{1, 106}, BOS: 2},
		{Name: "mm_b", Stops: []int32{1, 106}, BOS: 2},
		{Name: "mm_b_q4", Stops: []int32{1, 106}, BOS: 2},
		{Name: "v5_c", Stops: []int32{1, 106}, BOS: 2},
	})
}

// TestGoldenInfo checks what the fixtures' configs say beyond the logits:
// stop ids (generation_config.json, else config.json's top level), BOS,
// the tensor prefix each layout uses, and the sparse config's defaults.
func TestGoldenInfo(t *testing.T) {
	be := cpu.New(1)
	t.Cleanup(be.Close)
	for _, tc := range []struct {
		name    string
		heads   int
		qpas    float64
		softcap float64
	}{{"text_a", 4, 24, 0}, {"mm_b", 8, 256, 0}, {"v5_c", 2, 32, 10}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := familytest.Dir(tc.name)
			familytest.Need(t, filepath.Join(dir, "golden.safetensors"))
			m, err := Load(dir, be)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			info, c := m.Config(), m.TextConfig()
			if !slices.Equal(info.StopIDs, []int32{1, 106}) || info.BOSID != 2 {
				t.Errorf("stop ids %v, bos %d; want [1 106], 2", info.StopIDs, info.BOSID)
			}
			if c.Sizes.Heads != tc.heads || c.QueryScalar != tc.qpas || c.FinalSoftcap != tc.softcap || !c.Tied {
				t.Errorf("parsed %+v", c)
			}
		})
	}
}
