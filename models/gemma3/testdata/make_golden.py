#!/usr/bin/env python3
"""Golden fixtures for the Go Gemma 3 text decoder (package models/gemma3).

Run from the repository root on a machine with torch and transformers
(transformers 5.17, torch 2.11 on the project's device machine; no network):

    python3 models/gemma3/testdata/make_golden.py [NAME ...]

or every family at once with models/blocks/testdata/make_goldens.py. The
machinery (weights, MLX quantization, explicit trimmed masks, file layout)
is models/blocks/testdata/goldenlib.py; its docstring says what each file
holds. The reference is transformers' Gemma3ForCausalLM in float32, eager
attention; for the multimodal layouts the text model transformers builds
from the checkpoint's text_config.

Configurations:
  text_a  gemma3_text, `model.` names, legacy keys (rope_theta,
          rope_local_base_freq, rope_scaling linear x4 on global layers,
          sliding_window_pattern 3: layer 2 global, layer 3 sliding), head_dim 32 !=
          hidden/heads, query_pre_attn_scalar 24 != head_dim, window 16;
          4-bit (group 64: down_proj, 96 wide, stays dense) and 8-bit (group
          32) variants and the trimmed case.
  mm_b    gemma3 multimodal as Google ships it: sparse text_config that
          omits every key equal to transformers' Gemma3TextConfig default
          (8 heads over 4 KV heads, query_pre_attn_scalar 256, rope bases
          1e6/1e4, eps, pattern 6 so layer 5 is global and layer 6 sliding
          again), mlx-vlm names (`language_model.model.`) with vision tensors
          to skip, torch_dtype bfloat16 (sqrt(96) rounds to 9.8125), window
          8, stop ids only in config.json; 4-bit group 32 variant.
  v5_c    gemma3 multimodal as transformers 5 saves it: `model.language_model.`
          names, explicit layer_types, rope_parameters per layer type
          (linear x2 at base 5e5 on full layers) and a final logit softcap
          of 10.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "blocks", "testdata"))
import goldenlib  # noqa: E402

GEN = {"bos_token_id": 2, "eos_token_id": [1, 106], "pad_token_id": 0}

SPECS = [
    dict(
        name="text_a", seed=101, prefix="model.", text_key=None, one_plus_w=True, bos=2,
        prompt_len=40, gen=24, quant=[(4, 64), (8, 32)],
        trim=dict(prompt_len=90, gen=48, chunk=16, max_kv=32, sink=4),
        generation_config=GEN,
        config={
            "architectures": ["Gemma3ForCausalLM"],
            "model_type": "gemma3_text",
            "vocab_size": 256,
            "hidden_size": 64,
            "intermediate_size": 96,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 32,
            "query_pre_attn_scalar": 24,
            "sliding_window": 16,
            "sliding_window_pattern": 3,
            "rope_theta": 1000000.0,
            "rope_local_base_freq": 10000.0,
            "rope_scaling": {"rope_type": "linear", "factor": 4.0},
            "rms_norm_eps": 1e-6,
            "hidden_activation": "gelu_pytorch_tanh",
            "max_position_embeddings": 4096,
            "final_logit_softcapping": None,
            "attn_logit_softcapping": None,
            "bos_token_id": 2,
            "eos_token_id": 1,
            "pad_token_id": 0,
            "tie_word_embeddings": True,
            "torch_dtype": "float32",
        },
    ),
    dict(
        name="mm_b", seed=202, prefix="language_model.model.", text_key="text_config", one_plus_w=True, bos=2,
        prompt_len=40, gen=24, quant=[(4, 32)], bf16_embed_scale=True,
        generation_config=None,
        extra_tensors={
            "vision_tower.vision_model.embeddings.patch_embedding.weight": [32, 3, 14, 14],
            "vision_tower.vision_model.post_layernorm.weight": [32],
            "multi_modal_projector.mm_input_projection_weight": [32, 96],
            "multi_modal_projector.mm_soft_emb_norm.weight": [32],
        },
        config={
            "architectures": ["Gemma3ForConditionalGeneration"],
            "model_type": "gemma3",
            "boi_token_index": 250,
            "eoi_token_index": 251,
            "image_token_index": 252,
            "mm_tokens_per_image": 4,
            "eos_token_id": [1, 106],
            "initializer_range": 0.02,
            "torch_dtype": "bfloat16",
            "text_config": {
                "model_type": "gemma3_text",
                "hidden_size": 96,
                "intermediate_size": 64,
                "num_hidden_layers": 7,
                "head_dim": 16,
                "sliding_window": 8,
                "vocab_size": 256,
                "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
            },
            "vision_config": {
                "model_type": "siglip_vision_model",
                "hidden_size": 32,
                "intermediate_size": 64,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "image_size": 28,
                "patch_size": 14,
                "vision_use_head": False,
            },
        },
    ),
    dict(
        name="v5_c", seed=303, prefix="model.language_model.", text_key="text_config", one_plus_w=True, bos=2,
        prompt_len=40, gen=24, quant=[],
        generation_config=GEN,
        config={
            "architectures": ["Gemma3ForConditionalGeneration"],
            "model_type": "gemma3",
            "torch_dtype": "float32",
            "text_config": {
                "model_type": "gemma3_text",
                "vocab_size": 256,
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 5,
                "num_attention_heads": 2,
                "num_key_value_heads": 1,
                "head_dim": 32,
                "query_pre_attn_scalar": 32,
                "sliding_window": 12,
                "layer_types": ["sliding_attention", "full_attention", "sliding_attention",
                                "sliding_attention", "full_attention"],
                "rope_parameters": {
                    "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 500000.0},
                    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                },
                "final_logit_softcapping": 10.0,
                "attn_logit_softcapping": None,
                "rms_norm_eps": 1e-6,
                "bos_token_id": 2,
                "eos_token_id": [1, 106],
                "pad_token_id": 0,
                "tie_word_embeddings": True,
            },
        },
    ),
]

if __name__ == "__main__":
    sys.exit(goldenlib.main(SPECS, os.path.dirname(os.path.abspath(__file__))))
