package synth

import "mlxchat/tensor"

// olmo3Family is the layout of mlx-community/Olmo-3-7B-Instruct-4bit.
//
// Where it comes from:
//   - config.json: allenai/Olmo-3-7B-Instruct's as FAMILIES.md §4 lists it
//     (32 layers of 4096, 32/32 heads of 128, ffn 11008, vocab 100278, max
//     positions 65536, untied, rope_theta 500000, yarn factor 8 over 8192
//     with beta 32/1 and attention_factor 1.2079441541679836 in the legacy
//     rope_scaling key, sliding_window 4096, layer_types three sliding then
//     one full, eos 100257 only, pad 100277); the key set is transformers
//     4.57's Olmo3Config as saved ("dtype", not "torch_dtype"), the shape
//     of OLMo 3 configs quoted in public test code.
//   - tensors: mlx-lm's olmo3.py (added 2025-10-02, 9a4039a): no norm
//     before attention or MLP, post_attention_layernorm and
//     post_feedforward_layernorm, q_norm over all H*d and k_norm over all
//     K*d values, an lm_head (not tied).
//   - quantization: mlx-lm of November 2025 writes {"group_size": 64,
//     "bits": 4, "mode": "affine"} as "quantization" and
//     "quantization_config", no per-module entries (olmo3.py has no
//     quant_predicate), BF16 norms, scales and biases (torch_dtype kept).
//   - generation_config.json: copied by mlx-lm since May 2025; its content
//     (eos 100257, pad 100277) is assumed, not seen (FAMILIES.md §4: the
//     files name only 100257, so the engine adds <|im_end|> itself).
func olmo3Family() family {
	ids := SpecialIDs{BOS: -1, Pad: 100277, EOS: []int{100257}}
	return family{
		repo: "mlx-community/Olmo-3-7B-Instruct-4bit",
		full: FamilyDims{Family: "olmo3", Vocab: 100278, Hidden: 4096, Intermediate: 11008, Layers: 32,
			Heads: 32, KVHeads: 32, HeadDim: 128, Window: 4096, Pattern: 4, MaxPosition: 65536, IDs: ids},
		ids: ids,
		config: func(d FamilyDims) map[string]any {
			c := map[string]any{
				"architectures":           []string{"Olmo3ForCausalLM"},
				"attention_bias":          false,
				"attention_dropout":       0.0,
				"dtype":                   "bfloat16",
				"hidden_act":              "silu",
				"hidden_size":             d.Hidden,
				"initializer_range":       0.02,
				"intermediate_size":       d.Intermediate,
				"layer_types":             d.layerTypes(),
				"max_position_embeddings": d.MaxPosition,
				"model_type":              "olmo3",
				"num_attention_heads":     d.Heads,
				"num_hidden_layers":       d.Layers,
				"num_key_value_heads":     d.KVHeads,
				"rms_norm_eps":            1e-06,
				"rope_scaling": map[string]any{"attention_factor": 1.2079441541679836, "beta_fast": 32.0, "beta_slow": 1.0,
					"factor": 8.0, "original_max_position_embeddings": 8192, "rope_type": "yarn"},
				"rope_theta":           500000,
				"sliding_window":       d.Window,
				"tie_word_embeddings":  d.Tied,
				"transformers_version": "4.57.0",
				"use_cache":            true,
				"vocab_size":           d.Vocab,
			}
			if d.HeadDim*d.Heads != d.Hidden {
				c["head_dim"] = d.HeadDim
			}
			d.setIDs(c)
			return c
		},
		generation: func(d FamilyDims) map[string]any {
			g := map[string]any{"transformers_version": "4.57.0"}
			d.setIDs(g)
			return g
		},
		layerNorms: func(norm func(string, int), d FamilyDims, l string) {
			norm(l+"post_attention_layernorm", d.Hidden)
			norm(l+"post_feedforward_layernorm", d.Hidden)
			norm(l+"self_attn.q_norm", d.Heads*d.HeadDim)
			norm(l+"self_attn.k_norm", d.KVHeads*d.HeadDim)
		},
		stored:      tensor.BF16,
		quantMode:   true,
		quantConfig: true,
	}
}
