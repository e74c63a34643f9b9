package synth

import "mlxchat/tensor"

// cohere2Family is the layout of mlx-community/c4ai-command-r7b-12-2024-4bit.
//
// Where it comes from:
//   - config.json: CohereForAI/c4ai-command-r7b-12-2024's (transformers
//     4.48.0.dev0) as FAMILIES.md §5 lists it (32 layers of 4096, 32/8
//     heads, ffn 14336, vocab 256000, rope_theta 50000, layer_norm_eps
//     1e-5, sliding_window 4096 with sliding_window_pattern 4, logit_scale
//     0.25, tied, max positions 8192 in the mlx-community copy, bos 5, eos
//     255001, pad 0), plus the Cohere-specific keys public loaders check on
//     it (order_of_interleaved_layers "local_attn_first",
//     position_embedding_type "rope_gptj", rotary_pct 1.0,
//     use_gated_activation, use_embedding_sharing, use_parallel_block,
//     use_parallel_embedding).
//   - tensors: mlx-lm's cohere2.py (added 2024-12-16, d119af9): one
//     input_layernorm per layer and a final norm, LayerNorms without bias
//     (layer_norm_bias false), no q/k norms, no lm_head (tied).
//   - quantization: mlx-lm of December 2024 writes {"group_size": 64,
//     "bits": 4} as "quantization" and "quantization_config", no "mode",
//     no per-module entries, and cast the unquantized tensors to float16
//     (F16 norms, scales and biases).
//   - no generation_config.json (mlx-lm copies it since May 2025 only).
func cohere2Family() family {
	ids := SpecialIDs{BOS: 5, Pad: 0, EOS: []int{255001}}
	return family{
		repo: "mlx-community/c4ai-command-r7b-12-2024-4bit",
		full: FamilyDims{Family: "cohere2", Vocab: 256000, Hidden: 4096, Intermediate: 14336, Layers: 32,
			Heads: 32, KVHeads: 8, HeadDim: 128, Window: 4096, Pattern: 4, Tied: true, MaxPosition: 8192, IDs: ids},
		ids: ids,
		config: func(d FamilyDims) map[string]any {
			c := map[string]any{
				"architectures":               []string{"Cohere2ForCausalLM"},
				"attention_bias":              false,
				"attention_dropout":           0.0,
				"cache_implementation":        "hybrid",
				"head_dim":                    d.HeadDim,
				"hidden_act":                  "silu",
				"hidden_size":                 d.Hidden,
				"initializer_range":           0.02,
				"intermediate_size":           d.Intermediate,
				"layer_norm_eps":              1e-05,
				"logit_scale":                 0.25,
				"max_position_embeddings":     d.MaxPosition,
				"model_type":                  "cohere2",
				"num_attention_heads":         d.Heads,
				"num_hidden_layers":           d.Layers,
				"num_key_value_heads":         d.KVHeads,
				"order_of_interleaved_layers": "local_attn_first",
				"position_embedding_type":     "rope_gptj",
				"rope_scaling":                nil,
				"rope_theta":                  50000.0,
				"rotary_pct":                  1.0,
				"sliding_window":              d.Window,
				"sliding_window_pattern":      d.Pattern,
				"torch_dtype":                 "bfloat16",
				"transformers_version":        "4.48.0.dev0",
				"use_cache":                   true,
				"use_embedding_sharing":       d.Tied,
				"use_gated_activation":        true,
				"use_parallel_block":          true,
				"use_parallel_embedding":      true,
				"vocab_size":                  d.Vocab,
			}
			d.setIDs(c)
			return c
		},
		layerNorms: func(norm func(string, int), d FamilyDims, l string) {
			norm(l+"input_layernorm", d.Hidden)
		},
		stored:      tensor.F16,
		quantConfig: true,
	}
}
