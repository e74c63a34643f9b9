package cohere2

import (
	"testing"

	"mlxchat/models/blocks"
	"mlxchat/models/familytest"
	"mlxchat/tensor/cpu"
)

// TestGolden runs every fixture of testdata/make_golden.py (transformers on
// tiny random configs) on the CPU backend: logits one-shot, chunked and
// decoded, the RoPE tables, scales and layer types transformers used, and
// the trimmed max-kv scenario of c2_a.
func TestGolden(t *testing.T) {
	be := cpu.New(2)
	t.Cleanup(be.Close)
	familytest.RunGolden(t, be, Load, func(m *Model) *blocks.Decoder { return m.Decoder }, []familytest.Case{
		{Name: "c2_a", Stops: []int32{250, 251}, BOS: 5, Trim: true},
		{Name: "c2_a_q4", Stops: []int32{250, 251}, BOS: 5},
		{Name: "c2_a_q8", Stops: []int32{250, 251}, BOS: 5},
		{Name: "c2_b", Stops: []int32{250, 251}, BOS: 5},
	})
}
