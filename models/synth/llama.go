package synth

import "mlxchat/tensor"

// llamaFamily is the layout of mlx-community/Llama-3.2-3B-Instruct-4bit.
//
// Where it comes from:
//   - config.json: meta-llama/Llama-3.2-3B-Instruct's, which mlx-lm copies
//     with its keys sorted and the quantization block added. The keys and
//     values are those of the Llama-3.2-3B config quoted in public code
//     (github.com/citsjtu2020/LLM-Prof, sglang/Model_Config.md), with the
//     Instruct model's eos_token_id list [128001, 128008, 128009]
//     (FAMILIES.md §2: the list sits in the instruct config.json itself).
//   - tensors: mlx-lm's llama.py (ml-explore/mlx-lm, the September 2024
//     revision d9ddcea): the Hugging Face names under model., the rotary
//     inv_freq buffers dropped, no lm_head when tie_word_embeddings is set.
//   - quantization: mlx-lm's quantize_model of that revision quantizes every
//     Linear and Embedding, writes {"group_size": 64, "bits": 4} as both
//     "quantization" and "quantization_config" (no "mode" key: that came
//     with mlx-lm 0.27, August 2025) and no per-module entries; its convert
//     cast every other tensor to float16 when quantizing (the default kept
//     until mlx-lm started to honour torch_dtype, April 2025), so norms,
//     scales and biases are F16.
//   - no generation_config.json: mlx-lm copies it since May 2025 only.
func llamaFamily() family {
	ids := SpecialIDs{BOS: 128000, Pad: -1, EOS: []int{128001, 128008, 128009}}
	return family{
		repo: "mlx-community/Llama-3.2-3B-Instruct-4bit",
		full: FamilyDims{Family: "llama", Vocab: 128256, Hidden: 3072, Intermediate: 8192, Layers: 28,
			Heads: 24, KVHeads: 8, HeadDim: 128, Tied: true, MaxPosition: 131072, IDs: ids},
		ids: ids,
		config: func(d FamilyDims) map[string]any {
			c := map[string]any{
				"architectures":           []string{"LlamaForCausalLM"},
				"attention_bias":          false,
				"attention_dropout":       0.0,
				"head_dim":                d.HeadDim,
				"hidden_act":              "silu",
				"hidden_size":             d.Hidden,
				"initializer_range":       0.02,
				"intermediate_size":       d.Intermediate,
				"max_position_embeddings": d.MaxPosition,
				"mlp_bias":                false,
				"model_type":              "llama",
				"num_attention_heads":     d.Heads,
				"num_hidden_layers":       d.Layers,
				"num_key_value_heads":     d.KVHeads,
				"pretraining_tp":          1,
				"rms_norm_eps":            1e-05,
				"rope_scaling": map[string]any{"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
					"original_max_position_embeddings": 8192, "rope_type": "llama3"},
				"rope_theta":           500000.0,
				"tie_word_embeddings":  d.Tied,
				"torch_dtype":          "bfloat16",
				"transformers_version": "4.45.0.dev0",
				"use_cache":            true,
				"vocab_size":           d.Vocab,
			}
			d.setIDs(c)
			return c
		},
		layerNorms: func(norm func(string, int), d FamilyDims, l string) {
			norm(l+"input_layernorm", d.Hidden)
			norm(l+"post_attention_layernorm", d.Hidden)
		},
		stored:      tensor.F16,
		quantConfig: true,
	}
}
