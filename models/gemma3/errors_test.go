package gemma3

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
	del := familytest.Delete
	familytest.CheckBad(t, familytest.Dir("text_a"), load, []bad{
		{Name: "missing q_norm", Drop: "model.layers.1.self_attn.q_norm.weight", Want: "model.layers.1.self_attn.q_norm.weight"},
		{Name: "short up_proj", Shrink: "model.layers.0.mlp.up_proj.weight", Want: "model.layers.0.mlp.up_proj"},
		{Name: "missing final norm", Drop: "model.norm.weight", Want: "model.norm.weight"},
		{Name: "heads 0", Config: map[string]any{"num_attention_heads": 0}, Want: "num_attention_heads"},
		{Name: "kv heads not a divisor", Config: map[string]any{"num_key_value_heads": 3}, Want: "num_key_value_heads"},
		{Name: "odd head_dim", Config: map[string]any{"head_dim": 31}, Want: "head_dim"},
		{Name: "no window", Config: map[string]any{"sliding_window": del}, Want: "sliding_window"},
		{Name: "window 0", Config: map[string]any{"sliding_window": 0}, Want: "sliding_window"},
		{Name: "pattern 0", Config: map[string]any{"sliding_window_pattern": 0}, Want: "sliding_window_pattern"},
		{Name: "layer_types length", Config: map[string]any{"layer_types": []string{"full_attention"}}, Want: "layer_types"},
		{Name: "layer type", Config: map[string]any{"layer_types": []string{"full_attention", "x", "full_attention", "full_attention"}}, Want: "layer_types[1]"},
		{Name: "rope factor", Config: map[string]any{"rope_scaling.factor": 0.5}, Want: "rope_scaling.factor"},
		{Name: "rope type", Config: map[string]any{"rope_scaling.rope_type": "dynamic"}, Want: "rope_scaling.rope_type"},
		{Name: "rope theta", Config: map[string]any{"rope_theta": -1}, Want: "rope_theta"},
		{Name: "qpas", Config: map[string]any{"query_pre_attn_scalar": 0}, Want: "query_pre_attn_scalar"},
		{Name: "eps", Config: map[string]any{"rms_norm_eps": 2}, Want: "rms_norm_eps"},
		{Name: "attention softcap", Config: map[string]any{"attn_logit_softcapping": 50}, Want: "attn_logit_softcapping"},
		{Name: "bidirectional", Config: map[string]any{"use_bidirectional_attention": true}, Want: "use_bidirectional_attention"},
		{Name: "activation", Config: map[string]any{"hidden_activation": "relu"}, Want: "hidden_activation"},
		{Name: "vocab", Config: map[string]any{"vocab_size": 300}, Want: "vocab_size"},
		{Name: "layers", Config: map[string]any{"num_hidden_layers": 5000}, Want: "num_hidden_layers"},
		{Name: "bos", Config: map[string]any{"bos_token_id": 999}, Want: "bos_token_id"},
	})
	familytest.CheckBad(t, familytest.Dir("text_a_q4"), load, []bad{
		{Name: "missing scales", Drop: "model.layers.0.mlp.gate_proj.scales", Want: "model.layers.0.mlp.gate_proj"},
		{Name: "short biases", Shrink: "model.layers.1.self_attn.k_proj.biases", Want: "model.layers.1.self_attn.k_proj"},
		{Name: "bits", Config: map[string]any{"quantization.bits": 3}, Want: "bits 3"},
	})
}
