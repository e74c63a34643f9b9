package olmo3

import (
	"testing"

	"mlxchat/models/blocks"
	"mlxchat/models/familytest"
	"mlxchat/tensor/cpu"
)

// TestGolden runs every fixture of testdata/make_golden.py (transformers on
// tiny random configs) on the CPU backend: logits one-shot, chunked and
// decoded, the RoPE tables, scales and layer types transformers used, and
// the trimmed max-kv scenario of o3_a.
func TestGolden(t *testing.T) {
	be := cpu.New(2)
	t.Cleanup(be.Close)
	familytest.RunGolden(t, be, Load, func(m *Model) *blocks.Decoder { return m.Decoder }, []familytest.Case{
		{Name: "o3_a", Stops: []int32{250}, BOS: -1, Trim: true},
		{Name: "o3_a_q4", Stops: []int32{250}, BOS: -1},
		{Name: "o3_a_q8", Stops: []int32{250}, BOS: -1},
		{Name: "o3_b", Stops: []int32{250}, BOS: -1},
	})
}
