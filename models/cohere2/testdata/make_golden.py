#!/usr/bin/env python3
"""Golden fixtures for the Go Cohere2 (Command R7B) decoder (package models/cohere2).

Run from the repository root on a machine with torch and transformers
(transformers 5.17, torch 2.11 on the project's device machine; no network):

    python3 models/cohere2/testdata/make_golden.py [NAME ...]

or every family at once with models/blocks/testdata/make_goldens.py. The
machinery is models/blocks/testdata/goldenlib.py (its docstring says what
each file holds). The reference is transformers' Cohere2ForCausalLM in
float32 with eager attention.

Configurations:
  c2_a  layer types from sliding_window_pattern 2: a sliding layer (window
        16, interleaved RoPE at base 5e4) followed by a NoPE global layer,
        twice; parallel block on one weight-only LayerNorm; tied embeddings
        with logit_scale 0.25; stop ids [250, 251] in
        generation_config.json; 4-bit (group 64) and 8-bit (group 32)
        variants and the trimmed case.
  c2_b  explicit layer_types (two sliding, one global), logit_scale omitted
        (transformers' default 0.0625), window 8, 2 heads over 1 KV head,
        flat rope_parameters (base 1e4).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "blocks", "testdata"))
import goldenlib  # noqa: E402

SPECS = [
    dict(
        name="c2_a", seed=151, prefix="model.", text_key=None, bos=5, nope_full=True,
        prompt_len=40, gen=24, quant=[(4, 64), (8, 32)],
        trim=dict(prompt_len=90, gen=48, chunk=16, max_kv=32, sink=4),
        generation_config={"bos_token_id": 5, "eos_token_id": [250, 251], "pad_token_id": 0},
        config={
            "architectures": ["Cohere2ForCausalLM"],
            "model_type": "cohere2",
            "vocab_size": 256,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "hidden_act": "silu",
            "layer_norm_eps": 1e-5,
            "rope_theta": 50000.0,
            "rope_scaling": None,
            "sliding_window": 16,
            "sliding_window_pattern": 2,
            "logit_scale": 0.25,
            "max_position_embeddings": 8192,
            "attention_bias": False,
            "tie_word_embeddings": True,
            "bos_token_id": 5,
            "eos_token_id": 250,
            "pad_token_id": 0,
            "torch_dtype": "bfloat16",
        },
    ),
    dict(
        name="c2_b", seed=252, prefix="model.", text_key=None, bos=5, nope_full=True,
        prompt_len=40, gen=24, quant=[],
        generation_config=None,
        config={
            "architectures": ["Cohere2ForCausalLM"],
            "model_type": "cohere2",
            "vocab_size": 256,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 3,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "hidden_act": "silu",
            "layer_norm_eps": 1e-5,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
            "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
            "sliding_window": 8,
            "max_position_embeddings": 8192,
            "attention_bias": False,
            "tie_word_embeddings": True,
            "bos_token_id": 5,
            "eos_token_id": [250, 251],
            "pad_token_id": 0,
            "torch_dtype": "float32",
        },
    ),
]

if __name__ == "__main__":
    sys.exit(goldenlib.main(SPECS, os.path.dirname(os.path.abspath(__file__))))
