package synth

import (
	"fmt"

	"mlxchat/tensor"
)

// gemma3TextFamily is the layout of mlx-community/gemma-3-1b-it-4bit (text
// only, model_type gemma3_text).
//
// Where it comes from:
//   - config.json: google/gemma-3-1b-it's (transformers 4.50.0.dev0), every
//     key written out as Gemma3TextConfig saved it then, values as
//     FAMILIES.md §1 and public test code quote them (26 layers of 1152,
//     4/1 heads of 256, ffn 6912, query_pre_attn_scalar 256, window 512
//     with pattern 6, rope 1e6 / local 1e4, no rope_scaling, vocab 262144,
//     max positions 32768, bos 2, eos [1, 106], pad 0).
//   - tensors: mlx-lm's gemma3_text.py as first released (2025-03-13,
//     61e64358): the Hugging Face names under model., zero-centred norm
//     weights (applied as 1 + w), four norms per layer and per-head q/k
//     norms; its sanitize copied embed_tokens into an lm_head that the
//     converter then quantized and stored, so the repository has an
//     lm_head although the embedding is tied.
//   - quantization: mlx-lm of March 2025 writes {"group_size": 64, "bits":
//     4} as "quantization" and "quantization_config", no "mode", no
//     per-module entries, and cast every other tensor to float16 (F16
//     norms, scales and biases).
//   - no generation_config.json (mlx-lm copies it since May 2025 only).
func gemma3TextFamily() family {
	ids := GemmaIDs()
	return family{
		repo: "mlx-community/gemma-3-1b-it-4bit",
		full: FamilyDims{Family: "gemma3_text", Vocab: 262144, Hidden: 1152, Intermediate: 6912, Layers: 26,
			Heads: 4, KVHeads: 1, HeadDim: 256, Window: 512, Pattern: 6, Tied: true, MaxPosition: 32768, IDs: ids},
		ids: ids,
		config: func(d FamilyDims) map[string]any {
			c := map[string]any{
				"architectures":           []string{"Gemma3ForCausalLM"},
				"attention_bias":          false,
				"attention_dropout":       0.0,
				"attn_logit_softcapping":  nil,
				"cache_implementation":    "hybrid",
				"final_logit_softcapping": nil,
				"head_dim":                d.HeadDim,
				"hidden_activation":       "gelu_pytorch_tanh",
				"hidden_size":             d.Hidden,
				"initializer_range":       0.02,
				"intermediate_size":       d.Intermediate,
				"max_position_embeddings": d.MaxPosition,
				"model_type":              "gemma3_text",
				"num_attention_heads":     d.Heads,
				"num_hidden_layers":       d.Layers,
				"num_key_value_heads":     d.KVHeads,
				"query_pre_attn_scalar":   d.HeadDim,
				"rms_norm_eps":            1e-06,
				"rope_local_base_freq":    10000,
				"rope_scaling":            nil,
				"rope_theta":              1000000,
				"sliding_window":          d.Window,
				"sliding_window_pattern":  d.Pattern,
				"torch_dtype":             "bfloat16",
				"transformers_version":    "4.50.0.dev0",
				"use_cache":               true,
				"vocab_size":              d.Vocab,
			}
			d.setIDs(c)
			return c
		},
		layerNorms:  gemma3LayerNorms,
		zeroCentred: true,
		tiedHead:    true,
		stored:      tensor.F16,
		quantConfig: true,
	}
}

// gemma3Family is the layout of mlx-community/gemma-3-4b-it-4bit
// (multimodal, model_type gemma3), converted by mlx-vlm.
//
// Where it comes from:
//   - config.json: google/gemma-3-4b-it's, which mlx-vlm copied as it is
//     with the quantization block added. Google's multimodal configs omit
//     every text and vision key equal to transformers' default; the 4B's
//     text_config names only hidden_size, intermediate_size, model_type,
//     num_hidden_layers, rope_scaling (linear, factor 8) and sliding_window
//     (1024), its vision_config the SigLIP sizes (as public code quotes
//     both, FAMILIES.md §1). textConfig applies that rule to any size.
//   - tensors: mlx-vlm's gemma3 (Blaizzy/mlx-vlm, the Gemma 3 release
//     2025-03-12, 777188a0, and 37e3af81 of the next day): the text model
//     under language_model.model., language_model.lm_head stored as a
//     quantized copy of the embedding (its sanitize adds it), the SigLIP
//     tower under vision_tower.vision_model. with the patch kernel in MLX
//     layout [out, kh, kw, in], and multi_modal_projector with a bare
//     [vision hidden, text hidden] projection and an RMS norm.
//   - quantization: that mlx-vlm quantized every module with to_quantized
//     whose input width is a multiple of 64, the vision tower included
//     (skipping multimodal modules came in July 2025): the tower's
//     attention projections, fc1 and position embedding are 4-bit, fc2
//     (input 4304) and the patch kernel stay dense. It wrote
//     {"group_size": 64, "bits": 4} as "quantization" only, and converted
//     every tensor to float16 first (F16 norms, scales and biases).
//   - no generation_config.json.
func gemma3Family() family {
	ids := SpecialIDs{BOS: -1, Pad: -1, EOS: []int{GemmaEOSID, GemmaEndOfTurnID}}
	return family{
		repo: "mlx-community/gemma-3-4b-it-4bit",
		full: FamilyDims{Family: "gemma3", Vocab: 262208, Hidden: 2560, Intermediate: 10240, Layers: 34,
			Heads: 8, KVHeads: 4, HeadDim: 256, Window: 1024, Pattern: 6, Tied: true, MaxPosition: 131072, IDs: ids,
			Vision: &VisionDims{Hidden: 1152, Intermediate: 4304, Layers: 27, Heads: 16, Patch: 14, Image: 896, Tokens: 256}},
		ids: ids,
		config: func(d FamilyDims) map[string]any {
			v := d.Vision
			c := map[string]any{
				"architectures":        []string{"Gemma3ForConditionalGeneration"},
				"boi_token_index":      255999,
				"eoi_token_index":      256000,
				"image_token_index":    262144,
				"initializer_range":    0.02,
				"mm_tokens_per_image":  v.Tokens,
				"model_type":           "gemma3",
				"text_config":          gemma3SparseText(d),
				"torch_dtype":          "bfloat16",
				"transformers_version": "4.50.0.dev0",
				"vision_config": map[string]any{
					"hidden_size": v.Hidden, "image_size": v.Image, "intermediate_size": v.Intermediate,
					"model_type": "siglip_vision_model", "num_attention_heads": v.Heads,
					"num_hidden_layers": v.Layers, "patch_size": v.Patch, "vision_use_head": false,
				},
			}
			d.setIDs(c)
			return c
		},
		layerNorms:  gemma3LayerNorms,
		zeroCentred: true,
		tiedHead:    true,
		stored:      tensor.F16,
	}
}

// gemma3SparseText is the text_config of a multimodal Gemma 3 config.json:
// model_type and every size that differs from transformers'
// Gemma3TextConfig default, as Google's configs are written.
func gemma3SparseText(d FamilyDims) map[string]any {
	t := map[string]any{"model_type": "gemma3_text"}
	for _, k := range []struct {
		key       string
		value, is int
	}{
		{"vocab_size", d.Vocab, 262208}, {"hidden_size", d.Hidden, 2304}, {"intermediate_size", d.Intermediate, 9216},
		{"num_hidden_layers", d.Layers, 26}, {"num_attention_heads", d.Heads, 8}, {"num_key_value_heads", d.KVHeads, 4},
		{"head_dim", d.HeadDim, 256}, {"query_pre_attn_scalar", d.HeadDim, 256}, {"sliding_window", d.Window, 4096},
		{"sliding_window_pattern", d.Pattern, 6}, {"max_position_embeddings", d.MaxPosition, 131072},
	} {
		if k.value != k.is {
			t[k.key] = k.value
		}
	}
	t["rope_scaling"] = map[string]any{"factor": 8.0, "rope_type": "linear"}
	return t
}

// gemma3LayerNorms adds Gemma 3's sandwich norms and per-head q/k norms.
func gemma3LayerNorms(norm func(string, int), d FamilyDims, l string) {
	for _, n := range []string{"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"} {
		norm(l+n, d.Hidden)
	}
	norm(l+"self_attn.q_norm", d.HeadDim)
	norm(l+"self_attn.k_norm", d.HeadDim)
}

// siglipSpecs adds the SigLIP vision tower and the multimodal projector of
// a Gemma 3 checkpoint in mlx-vlm naming; textHidden is the language
// model's width.
func (b *builder) siglipSpecs(v VisionDims, textHidden int) error {
	const p = "vision_tower.vision_model."
	H := v.Hidden
	side := v.Image / v.Patch
	fan := v.Patch * v.Patch * 3
	b.vector(p+"embeddings.patch_embedding.weight", 0, uniformBound(fan), H, v.Patch, v.Patch, 3)
	b.vector(p+"embeddings.patch_embedding.bias", 0, 0.02, H)
	if err := b.matrix(p+"embeddings.position_embedding", side*side, H); err != nil {
		return err
	}
	layerNorm := func(name string) {
		b.vector(name+".weight", 1, 0.1, H)
		b.vector(name+".bias", 0, 0.02, H)
	}
	for i := 0; i < v.Layers; i++ {
		l := fmt.Sprintf("%sencoder.layers.%d.", p, i)
		layerNorm(l + "layer_norm1")
		layerNorm(l + "layer_norm2")
		for _, m := range []struct {
			path    string
			out, in int
		}{
			{"self_attn.q_proj", H, H}, {"self_attn.k_proj", H, H}, {"self_attn.v_proj", H, H}, {"self_attn.out_proj", H, H},
			{"mlp.fc1", v.Intermediate, H}, {"mlp.fc2", H, v.Intermediate},
		} {
			if err := b.matrix(l+m.path, m.out, m.in); err != nil {
				return err
			}
			b.vector(l+m.path+".bias", 0, 0.02, m.out)
		}
	}
	layerNorm(p + "post_layernorm")
	b.vector("multi_modal_projector.mm_input_projection_weight", 0, uniformBound(H), H, textHidden)
	b.vector("multi_modal_projector.mm_soft_emb_norm.weight", 0, 0.1, H)
	return nil
}
