#!/usr/bin/env python3
"""Golden fixtures for the Go Qwen3 (dense) decoder (package models/qwen3).

Run from the repository root on a machine with torch and transformers
(transformers 5.17, torch 2.11 on the project's device machine; no network):

    python3 models/qwen3/testdata/make_golden.py [NAME ...]

or every family at once with models/blocks/testdata/make_goldens.py. The
machinery is models/blocks/testdata/goldenlib.py (its docstring says what
each file holds). The reference is transformers' Qwen3ForCausalLM in
float32 with eager attention.

Configurations:
  q3_a  head_dim 32 != hidden/heads (16), per-head q/k RMSNorm, untied
        lm_head, base 1e6, use_sliding_window false with a sliding_window key
        present (must be ignored), stop ids [251, 250] in
        generation_config.json; 4-bit (group 64) and 8-bit (group 32)
        variants and the trimmed case (all layers global).
  q3_b  tied embeddings, 2 heads over 1 KV head of 48, flat rope_parameters
        (base 5e6), two layers.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "blocks", "testdata"))
import goldenlib  # noqa: E402

SPECS = [
    dict(
        name="q3_a", seed=131, prefix="model.", text_key=None, bos=None,
        prompt_len=40, gen=24, quant=[(4, 64), (8, 32)],
        trim=dict(prompt_len=90, gen=48, chunk=16, max_kv=32, sink=4),
        generation_config={"bos_token_id": 250, "eos_token_id": [251, 250], "pad_token_id": 250},
        config={
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "vocab_size": 256,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 32,
            "hidden_act": "silu",
            "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0,
            "rope_scaling": None,
            "max_position_embeddings": 2048,
            "use_sliding_window": False,
            "sliding_window": 8,
            "max_window_layers": 2,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "tie_word_embeddings": False,
            "bos_token_id": 250,
            "eos_token_id": 251,
            "torch_dtype": "bfloat16",
        },
    ),
    dict(
        name="q3_b", seed=232, prefix="model.", text_key=None, bos=None,
        prompt_len=40, gen=24, quant=[],
        generation_config={"eos_token_id": 251},
        config={
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "vocab_size": 256,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": 48,
            "hidden_act": "silu",
            "rms_norm_eps": 1e-6,
            "rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0},
            "max_position_embeddings": 1024,
            "use_sliding_window": False,
            "attention_bias": False,
            "tie_word_embeddings": True,
            "bos_token_id": 250,
            "eos_token_id": 251,
            "dtype": "bfloat16",
        },
    ),
]

if __name__ == "__main__":
    sys.exit(goldenlib.main(SPECS, os.path.dirname(os.path.abspath(__file__))))
