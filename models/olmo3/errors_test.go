package olmo3

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
	familytest.CheckBad(t, familytest.Dir("o3_a"), load, []bad{
		{Name: "short k_norm", Shrink: "model.layers.0.self_attn.k_norm.weight", Want: "model.layers.0.self_attn.k_norm.weight"},
		{Name: "missing post-ff norm", Drop: "model.layers.2.post_feedforward_layernorm.weight", Want: "model.layers.2.post_feedforward_layernorm.weight"},
		{Name: "beta", Config: map[string]any{"rope_scaling.beta_fast": -1}, Want: "rope_scaling.beta_fast"},
		{Name: "attention factor", Config: map[string]any{"rope_scaling.attention_factor": "big"}, Want: "rope_scaling.attention_factor"},
		{Name: "mscale", Config: map[string]any{"rope_scaling.attention_factor": del, "rope_scaling.mscale": "x"}, Want: "rope_scaling.mscale"},
		{Name: "layer type", Config: map[string]any{"layer_types": []string{"sliding_attention", "chunked_attention", "full_attention", "full_attention"}}, Want: "layer_types[1]"},
		{Name: "window", Config: map[string]any{"sliding_window": 0}, Want: "sliding_window"},
		{Name: "no window", Config: map[string]any{"sliding_window": del}, Want: "sliding_window"},
	})
	familytest.CheckBad(t, familytest.Dir("o3_a_q4"), load, []bad{
		{Name: "missing scales", Drop: "model.layers.0.mlp.gate_proj.scales", Want: "model.layers.0.mlp.gate_proj"},
		{Name: "short biases", Shrink: "model.layers.1.self_attn.k_proj.biases", Want: "model.layers.1.self_attn.k_proj"},
		{Name: "bits", Config: map[string]any{"quantization.bits": 3}, Want: "bits 3"},
	})
}
