#!/usr/bin/env python3
"""Golden fixtures for the Go Gemma 3n text decoder (package models/gemma3n).

Run on a machine with torch and transformers (5.17 was used):

    python3 models/gemma3n/testdata/make_golden.py models/gemma3n/testdata

For each tiny random configuration below it writes a folder holding

  config.json            the configuration as an MLX checkpoint carries it
  generation_config.json stop ids (eos 1, <end_of_turn> 106)
  model.safetensors      the weights, BF16, in the MLX tensor naming
  golden.safetensors     reference outputs in F32 / I32:
      tokens        I32 [T]        prompt (first P ids) + greedy continuation
      prompt_len    I32 [1]        P
      logits        F32 [T, V]     one-shot forward over all T tokens
      decode_logits F32 [G, V]     logits of each greedy step (row 0 = last
                                   prompt position after a cached prefill,
                                   then one cached single-token step each)
      layer_out     F32 [L, S, 4, H] output of every decoder layer (all 4
                                   AltUp streams) for the first S positions
      final_hidden  F32 [S, H]     after stream averaging and the final norm

The model is Hugging Face transformers' Gemma3nForCausalLM in float32 on the
CPU with eager attention. Weights are drawn with a fixed seed at scales that
keep every block's contribution visible (the default init of 0.02 would leave
the AltUp router, the per-layer path and the sparsity cut-off nearly inert),
then rounded to bfloat16 before the forward passes, so the stored BF16 weights
are exactly the weights the reference used.

Forward passes always go through a DynamicCache: transformers only shares
KV between layers when a cache is present. Embeddings and per-layer inputs
are computed here (ids >= vocab_size_per_layer_input use row 0 of the
per-layer table, as Gemma3nModel and mlx-lm do) and passed as inputs_embeds /
per_layer_inputs; logits are h @ embed_tokens^T followed by the final
softcap, i.e. the tied lm_head.
"""
import json
import math
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import DynamicCache, Gemma3nForCausalLM, Gemma3nTextConfig

S_DUMP = 12  # positions whose per-layer outputs are stored


CONFIGS = {
    # Flat gemma3n_text config with old-style RoPE keys, mlx-vlm tensor names
    # (language_model.model.*), vision/audio tensors that must be skipped,
    # and a per-layer vocabulary smaller than the main one.
    "tiny_a": dict(
        seed=1234,
        style="flat",
        prefix="language_model.model.",
        extra_towers=True,
        prompt_len=40,
        gen=24,
        cfg=dict(
            vocab_size=512,
            vocab_size_per_layer_input=384,
            hidden_size=64,
            hidden_size_per_layer_input=8,
            intermediate_size=128,
            num_hidden_layers=6,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=32,
            sliding_window=8,
            layer_types=["sliding_attention"] * 3 + ["full_attention", "sliding_attention", "full_attention"],
            num_kv_shared_layers=2,
            activation_sparsity_pattern=[0.95, 0.95, 0.0, 0.0, 0.0, 0.0],
            laurel_rank=8,
            altup_num_inputs=4,
            altup_active_idx=0,
            altup_coef_clip=120.0,
            altup_correct_scale=True,
            final_logit_softcapping=30.0,
            rms_norm_eps=1e-6,
            max_position_embeddings=4096,
            rope_parameters={
                "full_attention": {"rope_type": "default", "rope_theta": 1_000_000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
            },
        ),
    ),
    # Nested gemma3n config (text_config) with rope_parameters, mlx-lm / HF
    # tensor names (model.language_model.*), per-layer intermediate sizes,
    # 4 query heads over 2 KV heads and three KV-shared layers.
    "tiny_b": dict(
        seed=4321,
        style="nested",
        prefix="model.language_model.",
        extra_towers=False,
        prompt_len=40,
        gen=24,
        cfg=dict(
            vocab_size=512,
            vocab_size_per_layer_input=512,
            hidden_size=128,
            hidden_size_per_layer_input=16,
            intermediate_size=[192, 192, 192, 128, 128, 128, 128, 128],
            num_hidden_layers=8,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            sliding_window=16,
            layer_types=[
                "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                "full_attention", "sliding_attention", "sliding_attention", "full_attention",
            ],
            num_kv_shared_layers=3,
            activation_sparsity_pattern=[0.95, 0.95, 0.95, 0.0, 0.0, 0.0, 0.0, 0.0],
            laurel_rank=16,
            altup_num_inputs=4,
            altup_active_idx=0,
            altup_coef_clip=120.0,
            altup_correct_scale=True,
            final_logit_softcapping=30.0,
            rms_norm_eps=1e-6,
            max_position_embeddings=4096,
            rope_parameters={
                "full_attention": {"rope_type": "default", "rope_theta": 500_000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
            },
        ),
    ),
}


def init_weights(model, cfg, gen):
    """Draws every parameter at a scale that keeps its block visible."""
    H = cfg.hidden_size
    with torch.no_grad():
        for name, p in model.named_parameters():
            shape = p.shape

            def normal(std, mean=0.0):
                return torch.randn(shape, generator=gen) * std + mean

            if name.endswith("norm.weight") or "layernorm" in name or "_norm." in name:
                v = normal(0.2, 1.0)
            elif name.endswith("correct_output_scale"):
                v = normal(0.2, 1.0)
            elif name.endswith("prediction_coefs.weight") or name.endswith("correction_coefs.weight"):
                v = normal(0.3)
            elif name.endswith("modality_router.weight"):
                # router inputs are rmsnorm(x) / H: this makes tanh's input O(1)
                v = normal(math.sqrt(H))
            elif name.endswith("embed_tokens.weight") or name.endswith("embed_tokens_per_layer.weight"):
                v = normal(0.5)
            elif p.dim() == 2:
                v = normal(1.0 / math.sqrt(shape[1]))
            else:
                raise SystemExit(f"no init rule for {name} {tuple(shape)}")
            # the reference runs on exactly the BF16 values that are stored
            p.copy_(v.to(torch.bfloat16).to(torch.float32))


def embed(model, ids):
    """inputs_embeds and per_layer_inputs as Gemma3nModel / mlx-lm compute them."""
    tm = model.model
    cfg = model.config
    ids = ids.view(1, -1)
    emb = tm.embed_tokens(ids)
    ple_ids = torch.where((ids >= 0) & (ids < cfg.vocab_size_per_layer_input), ids, torch.zeros_like(ids))
    ple = tm.get_per_layer_inputs(ple_ids)
    return emb, ple


def logits_of(model, hidden):
    cfg = model.config
    w = model.model.embed_tokens.weight
    out = hidden @ w.T
    c = cfg.final_logit_softcapping
    return torch.tanh(out / c) * c


def forward(model, ids, cache):
    emb, ple = embed(model, ids)
    out = model.model(inputs_embeds=emb, per_layer_inputs=ple, past_key_values=cache, use_cache=True)
    return logits_of(model, out.last_hidden_state)[0], out.last_hidden_state[0]


def mlx_config(spec, cfg):
    """The config.json an MLX conversion of this model would carry."""
    d = cfg.to_dict()
    text = {}
    keep = [
        "vocab_size", "vocab_size_per_layer_input", "hidden_size", "hidden_size_per_layer_input",
        "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "head_dim", "sliding_window", "layer_types", "num_kv_shared_layers",
        "activation_sparsity_pattern", "laurel_rank", "altup_num_inputs", "altup_active_idx",
        "altup_coef_clip", "altup_correct_scale", "final_logit_softcapping", "rms_norm_eps",
        "max_position_embeddings", "hidden_activation", "query_pre_attn_scalar",
        "pad_token_id", "eos_token_id", "bos_token_id", "tie_word_embeddings",
        "attention_bias",
    ]
    for k in keep:
        if k in d:
            text[k] = d[k]
    if "query_pre_attn_scalar" not in text:
        text["query_pre_attn_scalar"] = spec["cfg"]["head_dim"]
    rp = spec["cfg"]["rope_parameters"]
    if spec["style"] == "flat":
        # older transformers / mlx-lm spelling
        text["rope_theta"] = rp["full_attention"]["rope_theta"]
        text["rope_local_base_freq"] = rp["sliding_attention"]["rope_theta"]
        text["intermediate_size"] = spec["cfg"]["intermediate_size"]
        text["model_type"] = "gemma3n_text"
        text["architectures"] = ["Gemma3nForCausalLM"]
        text["torch_dtype"] = "float32"
        return text
    text["rope_parameters"] = rp
    text["model_type"] = "gemma3n_text"
    return {
        "architectures": ["Gemma3nForConditionalGeneration"],
        "model_type": "gemma3n",
        "text_config": text,
        "vision_config": {"model_type": "gemma3n_vision", "hidden_size": 32},
        "audio_config": {"model_type": "gemma3n_audio", "hidden_size": 32},
        "torch_dtype": "float32",
        "eos_token_id": [1, 106],
    }


def make(name, spec, outdir):
    torch.manual_seed(spec["seed"])
    gen = torch.Generator().manual_seed(spec["seed"])
    cfg = Gemma3nTextConfig(**spec["cfg"])
    cfg._attn_implementation = "eager"
    try:
        model = Gemma3nForCausalLM._from_config(cfg, attn_implementation="eager")
    except Exception as e:  # noqa: BLE001
        print("_from_config failed, plain constructor:", e)
        model = Gemma3nForCausalLM(cfg)
    model = model.float().eval()
    try:
        model.config._attn_implementation = "eager"
        model.model.config._attn_implementation = "eager"
    except Exception as e:  # noqa: BLE001
        print("could not force eager attention:", e)
    init_weights(model, cfg, gen)

    V = cfg.vocab_size
    P, G = spec["prompt_len"], spec["gen"]
    # prompt ids: random, avoiding pad/eos/bos; some beyond the per-layer vocab
    prompt = torch.randint(3, V, (P,), generator=gen)
    prompt[0] = 2  # <bos>
    if cfg.vocab_size_per_layer_input < V:
        prompt[5] = V - 1
        prompt[17] = cfg.vocab_size_per_layer_input

    with torch.no_grad():
        # greedy decode through the cache: prefill, then one token per step
        cache = DynamicCache(config=cfg)
        lg, _ = forward(model, prompt, cache)
        decode_logits = [lg[-1].clone()]
        gen_ids = [int(lg[-1].argmax())]
        for _ in range(G - 1):
            lg, _ = forward(model, torch.tensor([gen_ids[-1]]), cache)
            decode_logits.append(lg[-1].clone())
            gen_ids.append(int(lg[-1].argmax()))
        decode_logits = torch.stack(decode_logits)

        tokens = torch.cat([prompt, torch.tensor(gen_ids)])
        T = tokens.numel()

        # one-shot over everything, recording every layer's output
        layer_outs = []
        hooks = [
            layer.register_forward_hook(lambda m, i, o: layer_outs.append(o[0] if isinstance(o, tuple) else o))
            for layer in model.model.layers
        ]
        cache = DynamicCache(config=cfg)
        logits, hidden = forward(model, tokens, cache)
        for h in hooks:
            h.remove()
        # [streams, 1, T, H] per layer -> [L, S, streams, H]
        layer_out = torch.stack([o[:, 0, :S_DUMP, :].permute(1, 0, 2) for o in layer_outs])

    diff = (logits[P - 1 : P - 1 + G] - decode_logits).abs().max().item()
    top2 = torch.topk(decode_logits, 2, dim=-1).values
    gaps = (top2[:, 0] - top2[:, 1]).min().item()
    scale = logits.abs().max().item()
    print(f"{name}: T={T} logits max|x|={scale:.3f} std={logits.std().item():.3f} "
          f"cached-vs-oneshot max diff={diff:.3e} min top1-top2 gap={gaps:.4f}")
    print(f"{name}: prompt={prompt.tolist()}")
    print(f"{name}: greedy={gen_ids}")
    # greedy ids must also be the argmax of the one-shot rows
    argmax_rows = logits[P - 1 : P - 1 + G].argmax(-1).tolist()
    if argmax_rows != gen_ids:
        print(f"{name}: WARNING one-shot argmax differs from cached greedy: {argmax_rows}")

    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    weights = {}
    for k, v in model.model.state_dict().items():
        if k.endswith("v_norm.weight") or "rotary_emb" in k:
            continue
        if not v.is_floating_point() or v.dim() == 0:
            continue
        weights[spec["prefix"] + k] = v.to(torch.bfloat16).contiguous()
    if spec["extra_towers"]:
        g2 = torch.Generator().manual_seed(7)
        for k in ["vision_tower.timm_model.conv_stem.conv.weight", "audio_tower.subsample_conv_projection.conv_0.conv.weight",
                  "embed_vision.embedding.weight", "embed_audio.embedding.weight"]:
            weights[k] = torch.randn((4, 8), generator=g2).to(torch.bfloat16)
    save_file(weights, os.path.join(d, "model.safetensors"), metadata={"format": "mlx"})
    golden = {
        "tokens": tokens.to(torch.int32).contiguous(),
        "prompt_len": torch.tensor([P], dtype=torch.int32),
        "logits": logits.float().contiguous(),
        "decode_logits": decode_logits.float().contiguous(),
        "layer_out": layer_out.float().contiguous(),
        "final_hidden": hidden[:S_DUMP].float().contiguous(),
    }
    save_file(golden, os.path.join(d, "golden.safetensors"),
              metadata={"transformers": transformers.__version__, "torch": torch.__version__})
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(mlx_config(spec, cfg), f, indent=2, sort_keys=True)
    with open(os.path.join(d, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 2, "eos_token_id": [1, 106], "pad_token_id": 0}, f, indent=2)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_grad_enabled(False)
    torch.use_deterministic_algorithms(True)
    print("transformers", transformers.__version__, "torch", torch.__version__)
    for name, spec in CONFIGS.items():
        make(name, spec, outdir)


if __name__ == "__main__":
    main()
