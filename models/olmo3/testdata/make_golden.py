#!/usr/bin/env python3
"""Golden fixtures for the Go OLMo 3 decoder (package models/olmo3).

Run from the repository root on a machine with torch and transformers
(transformers 5.17, torch 2.11 on the project's device machine; no network):

    python3 models/olmo3/testdata/make_golden.py [NAME ...]

or every family at once with models/blocks/testdata/make_goldens.py. The
machinery is models/blocks/testdata/goldenlib.py (its docstring says what
each file holds). The reference is transformers' Olmo3ForCausalLM in
float32 with eager attention, with YaRN (and its attention factor) on the
full-attention layers only: sliding layers get transformers' own default
rotary table for the same base (goldenlib.py explains why and logs whether
the installed transformers already does so).

Configurations:
  o3_a  legacy rope_scaling yarn (factor 8, original context 4096, beta
        32/1, explicit attention_factor 1.2079441541679836; with head_dim 16
        and base 5e5 the ramp spans pairs 1..4), layer types from the
        default pattern (layer 3 full), window 16, full-width q/k norms
        over 4 heads / 2 KV heads, untied lm_head; 4-bit (group 64) and 8-bit
        (group 32) variants and the trimmed case.
  o3_b  the transformers 5.0 pre-release format: a flat rope_parameters dict
        with yarn (factor 4, original 1024, base 1e4, no attention_factor:
        0.1 ln 4 + 1) and no rope_scaling key; explicit layer_types
        alternating sliding/full; MHA; window 8. transformers 5.17 rejects
        a flat rope_parameters for olmo3 (it wants one entry per layer
        type), so it is given the per-type form that config means: yarn on
        full_attention, the default table at the same base on
        sliding_attention (the rule models/olmo3 reads a flat dict by).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "blocks", "testdata"))
import goldenlib  # noqa: E402

SPECS = [
    dict(
        name="o3_a", seed=141, prefix="model.", text_key=None, bos=None, rope_override="olmo3",
        prompt_len=40, gen=24, quant=[(4, 64), (8, 32)],
        trim=dict(prompt_len=90, gen=48, chunk=16, max_kv=32, sink=4),
        generation_config={"eos_token_id": 250, "pad_token_id": 251},
        config={
            "architectures": ["Olmo3ForCausalLM"],
            "model_type": "olmo3",
            "vocab_size": 256,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "hidden_act": "silu",
            "rms_norm_eps": 1e-6,
            "rope_theta": 500000.0,
            "rope_scaling": {
                "rope_type": "yarn",
                "factor": 8.0,
                "original_max_position_embeddings": 4096,
                "beta_fast": 32,
                "beta_slow": 1,
                "attention_factor": 1.2079441541679836,
            },
            "sliding_window": 16,
            "max_position_embeddings": 32768,
            "attention_bias": False,
            "tie_word_embeddings": False,
            "eos_token_id": 250,
            "pad_token_id": 251,
            "torch_dtype": "bfloat16",
        },
    ),
    dict(
        name="o3_b", seed=242, prefix="model.", text_key=None, bos=None, rope_override="olmo3",
        prompt_len=40, gen=24, quant=[],
        generation_config=None,
        config={
            "architectures": ["Olmo3ForCausalLM"],
            "model_type": "olmo3",
            "vocab_size": 256,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "hidden_act": "silu",
            "rms_norm_eps": 1e-6,
            "rope_parameters": {
                "rope_type": "yarn",
                "rope_theta": 10000.0,
                "factor": 4.0,
                "original_max_position_embeddings": 1024,
            },
            "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
            "sliding_window": 8,
            "max_position_embeddings": 4096,
            "attention_bias": False,
            "tie_word_embeddings": False,
            "eos_token_id": 250,
            "pad_token_id": 251,
            "torch_dtype": "float32",
        },
    ),
]

# o3_b as transformers 5.17 accepts it (see the docstring).
SPECS[1]["hf_config"] = dict(SPECS[1]["config"], rope_parameters={
    "full_attention": dict(SPECS[1]["config"]["rope_parameters"]),
    "sliding_attention": {"rope_type": "default", "rope_theta": SPECS[1]["config"]["rope_parameters"]["rope_theta"]},
})

if __name__ == "__main__":
    sys.exit(goldenlib.main(SPECS, os.path.dirname(os.path.abspath(__file__))))
