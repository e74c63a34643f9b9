package qwen3

import (
	"testing"

	"mlxchat/models/familytest"
	"mlxchat/tensor/cpu"
)

// TestBadCheckpoints breaks copies of the golden checkpoints one way at a
// time (a missing tensor, a wrong shape, a config key out of range or
// unsupported) and requires a one-line error naming the tensor or key.
func TestBadCheckpoints(t *testing.T) {
	be := cpu.New(1)
	t.Cleanup(be.Close)
	load := familytest.Loads(Load, be)
	type bad = familytest.BadCase
	familytest.CheckBad(t, familytest.Dir("q3_a"), load, []bad{
		{Name: "missing k_norm", Drop: "model.layers.3.self_attn.k_norm.weight", Want: "model.layers.3.self_attn.k_norm.weight"},
		{Name: "short q_norm", Shrink: "model.layers.0.self_attn.q_norm.weight", Want: "model.layers.0.self_attn.q_norm.weight"},
		{Name: "short embedding", Shrink: "model.embed_tokens.weight", Want: "embed_tokens"},
		{Name: "sliding", Config: map[string]any{"use_sliding_window": true}, Want: "use_sliding_window"},
		{Name: "head_dim", Config: map[string]any{"head_dim": 5000}, Want: "head_dim"},
		{Name: "kv heads", Config: map[string]any{"num_key_value_heads": 8}, Want: "num_key_value_heads"},
		{Name: "intermediate", Config: map[string]any{"intermediate_size": 64}, Want: "model.layers.0.mlp.gate_proj"},
		{Name: "rope", Config: map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn"}}, Want: "rope_scaling.factor"},
	})
	familytest.CheckBad(t, familytest.Dir("q3_a_q4"), load, []bad{
		{Name: "missing scales", Drop: "model.layers.0.mlp.gate_proj.scales", Want: "model.layers.0.mlp.gate_proj"},
		{Name: "short biases", Shrink: "model.layers.1.self_attn.k_proj.biases", Want: "model.layers.1.self_attn.k_proj"},
		{Name: "bits", Config: map[string]any{"quantization.bits": 3}, Want: "bits 3"},
	})
}
