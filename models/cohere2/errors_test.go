package cohere2

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
	familytest.CheckBad(t, familytest.Dir("c2_a"), load, []bad{
		{Name: "missing input norm", Drop: "model.layers.1.input_layernorm.weight", Want: "model.layers.1.input_layernorm.weight"},
		{Name: "short v_proj", Shrink: "model.layers.3.self_attn.v_proj.weight", Want: "model.layers.3.self_attn.v_proj"},
		{Name: "logit scale", Config: map[string]any{"logit_scale": 0}, Want: "logit_scale"},
		{Name: "eps", Config: map[string]any{"layer_norm_eps": 2}, Want: "layer_norm_eps"},
		{Name: "pattern", Config: map[string]any{"sliding_window_pattern": -2}, Want: "sliding_window_pattern"},
		{Name: "heads", Config: map[string]any{"num_attention_heads": 5}, Want: "num_attention_heads"},
		{Name: "qk norm", Config: map[string]any{"use_qk_norm": true}, Want: "use_qk_norm"},
	})
	familytest.CheckBad(t, familytest.Dir("c2_a_q4"), load, []bad{
		{Name: "missing scales", Drop: "model.layers.0.mlp.gate_proj.scales", Want: "model.layers.0.mlp.gate_proj"},
		{Name: "short biases", Shrink: "model.layers.1.self_attn.k_proj.biases", Want: "model.layers.1.self_attn.k_proj"},
		{Name: "bits", Config: map[string]any{"quantization.bits": 3}, Want: "bits 3"},
	})
}
