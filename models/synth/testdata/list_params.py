#!/usr/bin/env python3
"""List every parameter of Gemma 3n E2B (name, shape, dtype) on the meta device.

Run on a machine with torch + transformers (5.x); no weights are downloaded and
no memory is allocated for them. Writes gemma3n_e2b_params.json into $OUT (or
the current directory). The Go package models/synth reads the committed copy
to build a full-size synthetic checkpoint with the layout of
mlx-community/gemma-3n-E2B-it-4bit.

E2B differs from transformers' Gemma3nTextConfig defaults (which describe E4B):
30 layers, MLP width 8192 on every layer, the last 10 layers share KV.
"""
import importlib.util
import json
import os
import sys

import torch
import transformers
from transformers import (
    Gemma3nAudioConfig,
    Gemma3nConfig,
    Gemma3nTextConfig,
    Gemma3nVisionConfig,
)
from transformers.models.gemma3n import modeling_gemma3n as m

LAYERS = 30
TEXT = dict(
    vocab_size=262400,
    vocab_size_per_layer_input=262144,
    hidden_size=2048,
    hidden_size_per_layer_input=256,
    intermediate_size=[8192] * LAYERS,
    num_hidden_layers=LAYERS,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=256,
    sliding_window=512,
    num_kv_shared_layers=10,
    laurel_rank=64,
    altup_num_inputs=4,
    max_position_embeddings=32768,
    rms_norm_eps=1e-6,
    final_logit_softcapping=30.0,
)


def describe(module, prefix, out):
    """Append (name, shape, dtype, kind) for every persistent tensor."""
    seen = set()
    for name, p in module.named_parameters(remove_duplicate=True):
        out.append({"name": prefix + name, "shape": list(p.shape), "dtype": str(p.dtype).replace("torch.", ""), "kind": "param"})
        seen.add(prefix + name)
    sd = module.state_dict()
    for name, t in sd.items():
        if prefix + name in seen:
            continue
        out.append({"name": prefix + name, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "kind": "buffer"})


def main():
    out_dir = os.environ.get("OUT", ".")
    notes = []
    timm_ok = importlib.util.find_spec("timm") is not None
    notes.append(f"timm available: {timm_ok}")
    text_cfg = Gemma3nTextConfig(**TEXT)
    audio_cfg = Gemma3nAudioConfig()
    vision_cfg = Gemma3nVisionConfig()
    cfg = Gemma3nConfig(text_config=text_cfg, vision_config=vision_cfg, audio_config=audio_cfg)
    tensors = []
    with torch.device("meta"):
        try:
            model = m.Gemma3nForConditionalGeneration(cfg)
            describe(model, "", tensors)
            tied = model.lm_head.weight is model.model.language_model.embed_tokens.weight
            notes.append(f"full Gemma3nForConditionalGeneration instantiated; lm_head tied to embed_tokens: {tied}")
        except Exception as e:  # timm missing: build the parts that need no timm
            notes.append(f"full model failed ({type(e).__name__}: {e}); listing parts without the vision tower")
            tensors = []
            describe(m.Gemma3nTextModel(text_cfg), "model.language_model.", tensors)
            describe(m.Gemma3nAudioEncoder(audio_cfg), "model.audio_tower.", tensors)
            describe(m.Gemma3nMultimodalEmbedder(vision_cfg, text_cfg), "model.embed_vision.", tensors)
            describe(m.Gemma3nMultimodalEmbedder(audio_cfg, text_cfg), "model.embed_audio.", tensors)
    try:
        cfg_dict = cfg.to_dict()
    except Exception as e:
        notes.append(f"config to_dict failed: {e}")
        cfg_dict = {"text_config": text_cfg.to_dict(), "audio_config": audio_cfg.to_dict()}
    total = 0
    for t in tensors:
        n = 1
        for d in t["shape"]:
            n *= d
        total += n
    doc = {
        "source": "models/synth/testdata/list_params.py",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "notes": notes,
        "total_elements": total,
        "config": cfg_dict,
        "tensors": tensors,
    }
    path = os.path.join(out_dir, "gemma3n_e2b_params.json")
    with open(path, "w") as f:
        # One tensor per line keeps the committed file diffable.
        f.write("{\n")
        keys = [k for k in doc if k != "tensors"]
        for k in keys:
            f.write(f" {json.dumps(k)}: {json.dumps(doc[k], sort_keys=True, default=str)},\n")
        f.write(' "tensors": [\n')
        f.write(",\n".join("  " + json.dumps(t) for t in tensors))
        f.write("\n ]\n}\n")
    print("\n".join(notes))
    print(f"{len(tensors)} tensors, {total} elements -> {path}")
    for t in tensors[:5]:
        print(t)


if __name__ == "__main__":
    sys.exit(main())
