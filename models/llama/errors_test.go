package llama

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
	familytest.CheckBad(t, familytest.Dir("l3_b"), load, []bad{
		{Name: "missing bias", Drop: "model.layers.0.mlp.down_proj.bias", Want: "model.layers.0.mlp.down_proj.bias"},
		{Name: "short lm_head", Shrink: "lm_head.weight", Want: "lm_head"},
		{Name: "short o_proj", Shrink: "model.layers.2.self_attn.o_proj.weight", Want: "model.layers.2.self_attn.o_proj"},
		{Name: "missing norm", Drop: "model.layers.1.post_attention_layernorm.weight", Want: "model.layers.1.post_attention_layernorm.weight"},
		{Name: "head_dim", Config: map[string]any{"head_dim": 16}, Want: "model.layers.0.self_attn.q_proj"},
		{Name: "low/high", Config: map[string]any{"rope_parameters.high_freq_factor": 0.5}, Want: "rope_parameters.high_freq_factor"},
		{Name: "rope type", Config: map[string]any{"rope_parameters.rope_type": "longrope"}, Want: "rope_parameters.rope_type"},
		{Name: "activation", Config: map[string]any{"hidden_act": "gelu"}, Want: "hidden_act"},
		{Name: "hidden", Config: map[string]any{"hidden_size": -4}, Want: "hidden_size"},
		{Name: "layer_types", Config: map[string]any{"layer_types": []string{"sliding_attention", "full_attention", "full_attention"}}, Want: "sliding_window"},
		{Name: "eos", Config: map[string]any{"eos_token_id": "x"}, Want: "eos_token_id"},
	})
	familytest.CheckBad(t, familytest.Dir("l3_a_q4"), load, []bad{
		{Name: "missing scales", Drop: "model.layers.0.mlp.gate_proj.scales", Want: "model.layers.0.mlp.gate_proj"},
		{Name: "short biases", Shrink: "model.layers.1.self_attn.k_proj.biases", Want: "model.layers.1.self_attn.k_proj"},
		{Name: "bits", Config: map[string]any{"quantization.bits": 3}, Want: "bits 3"},
	})
}
