package synth

import "mlxchat/tensor"

// qwen3Family is the layout of mlx-community/Qwen3-4B-4bit.
//
// Where it comes from:
//   - config.json: Qwen/Qwen3-4B's (transformers 4.51.0), which mlx-lm copies
//     with its keys sorted and the quantization block added. Sizes and ids as
//     FAMILIES.md §3 lists them and as public code quotes the 4B config
//     (hidden 2560, head_dim 128 != 2560/32, 36 layers, 32/8 heads, ffn 9728,
//     max positions 40960, rope_theta 1e6, tied, bos 151643, eos 151645 only);
//     the remaining keys (max_window_layers, sliding_window null,
//     use_sliding_window false, rope_scaling null) are those of every Qwen3
//     dense config.
//   - tensors: mlx-lm's qwen3.py (added 2025-04-28, 5c2c18d): the Hugging
//     Face names under model., per-head q_norm/k_norm of head_dim, lm_head
//     dropped when tied.
//   - quantization: mlx-lm's quantize_model of that time writes
//     {"group_size": 64, "bits": 4} as "quantization" and
//     "quantization_config", no "mode" and no per-module entries; since
//     2025-04-23 convert keeps torch_dtype, so norms, scales and biases are
//     BF16.
//   - no generation_config.json: the repository was converted before
//     mlx-lm copied it (2025-05-02).
func qwen3Family() family {
	ids := SpecialIDs{BOS: 151643, Pad: -1, EOS: []int{151645}}
	return family{
		repo: "mlx-community/Qwen3-4B-4bit",
		full: FamilyDims{Family: "qwen3", Vocab: 151936, Hidden: 2560, Intermediate: 9728, Layers: 36,
			Heads: 32, KVHeads: 8, HeadDim: 128, Tied: true, MaxPosition: 40960, IDs: ids},
		ids: ids,
		config: func(d FamilyDims) map[string]any {
			c := map[string]any{
				"architectures":           []string{"Qwen3ForCausalLM"},
				"attention_bias":          false,
				"attention_dropout":       0.0,
				"head_dim":                d.HeadDim,
				"hidden_act":              "silu",
				"hidden_size":             d.Hidden,
				"initializer_range":       0.02,
				"intermediate_size":       d.Intermediate,
				"max_position_embeddings": d.MaxPosition,
				"max_window_layers":       d.Layers,
				"model_type":              "qwen3",
				"num_attention_heads":     d.Heads,
				"num_hidden_layers":       d.Layers,
				"num_key_value_heads":     d.KVHeads,
				"rms_norm_eps":            1e-06,
				"rope_scaling":            nil,
				"rope_theta":              1000000,
				"sliding_window":          nil,
				"tie_word_embeddings":     d.Tied,
				"torch_dtype":             "bfloat16",
				"transformers_version":    "4.51.0",
				"use_cache":               true,
				"use_sliding_window":      false,
				"vocab_size":              d.Vocab,
			}
			d.setIDs(c)
			return c
		},
		layerNorms: func(norm func(string, int), d FamilyDims, l string) {
			norm(l+"input_layernorm", d.Hidden)
			norm(l+"post_attention_layernorm", d.Hidden)
			norm(l+"self_attn.q_norm", d.HeadDim)
			norm(l+"self_attn.k_norm", d.HeadDim)
		},
		stored:      tensor.BF16,
		quantConfig: true,
	}
}
