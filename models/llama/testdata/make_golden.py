#!/usr/bin/env python3
"""Golden fixtures for the Go Llama decoder (package models/llama).

Run from the repository root on a machine with torch and transformers
(transformers 5.17, torch 2.11 on the project's device machine; no network):

    python3 models/llama/testdata/make_golden.py [NAME ...]

or every family at once with models/blocks/testdata/make_goldens.py. The
machinery is models/blocks/testdata/goldenlib.py (its docstring says what
each file holds). The reference is transformers' LlamaForCausalLM in
float32 with eager attention.

Configurations:
  l3_a  Llama 3.2 shape: legacy rope_scaling with rope_type llama3 (factor 8,
        low/high frequency factors 1/4, original context 64, base 5e5: with
        head_dim 16 the pairs fall in all three bands: kept, blended,
        divided), tied embeddings, 4 heads over 2 KV heads, stop ids
        [2, 4] in generation_config.json ([2, 3, 4] in config.json); 4-bit
        (group 64) and 8-bit (group 32) variants and the trimmed case
        (all layers global: sink 4 + recent keys under max-kv 32).
  l3_b  transformers-5 keys: a flat rope_parameters dict with the llama3
        table (factor 4, original context 32, base 1e4); untied lm_head;
        q/k/v/o and MLP biases (attention_bias, mlp_bias); head_dim 24 !=
        hidden/heads; one KV head; stop ids only in config.json.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "blocks", "testdata"))
import goldenlib  # noqa: E402

SPECS = [
    dict(
        name="l3_a", seed=111, prefix="model.", text_key=None, bos=1,
        prompt_len=40, gen=24, quant=[(4, 64), (8, 32)],
        trim=dict(prompt_len=90, gen=48, chunk=16, max_kv=32, sink=4),
        generation_config={"bos_token_id": 1, "eos_token_id": [2, 4], "do_sample": True, "temperature": 0.6},
        config={
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": 256,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "hidden_act": "silu",
            "rms_norm_eps": 1e-5,
            "rope_theta": 500000.0,
            "rope_scaling": {
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
                "rope_type": "llama3",
            },
            "max_position_embeddings": 512,
            "attention_bias": False,
            "mlp_bias": False,
            "tie_word_embeddings": True,
            "bos_token_id": 1,
            "eos_token_id": [2, 3, 4],
            "torch_dtype": "bfloat16",
        },
    ),
    dict(
        name="l3_b", seed=222, prefix="model.", text_key=None, bos=1,
        prompt_len=40, gen=24, quant=[],
        generation_config=None,
        config={
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": 256,
            "hidden_size": 64,
            "intermediate_size": 96,
            "num_hidden_layers": 3,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "head_dim": 24,
            "hidden_act": "silu",
            "rms_norm_eps": 1e-5,
            "rope_parameters": {
                "rope_type": "llama3",
                "rope_theta": 10000.0,
                "factor": 4.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 32,
            },
            "max_position_embeddings": 256,
            "attention_bias": True,
            "mlp_bias": True,
            "tie_word_embeddings": False,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "dtype": "bfloat16",
        },
    ),
]

if __name__ == "__main__":
    sys.exit(goldenlib.main(SPECS, os.path.dirname(os.path.abspath(__file__))))
