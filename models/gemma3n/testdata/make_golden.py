#!/usr/bin/env python3
"""Golden fixtures for the Go Gemma 3n text decoder (package models/gemma3n).

Run on a machine with torch and transformers (5.17 was used):

    python3 models/gemma3n/testdata/make_golden.py models/gemma3n/testdata [NAME ...]

(NAME restricts the run to those fixtures, e.g. tiny_b_q8g128 tiny_b_mixed.)

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

Quantized fixtures (a "quant" entry: tiny_b_q8g128, tiny_b_mixed) start
from their base configuration's BF16 weights and quantize them here with
MLX's affine scheme (mlx.core.quantize: per group of the input dimension,
scale and bias from the group's min and max, rounded to bfloat16; codes
packed little-endian into uint32 words), with per-module overrides of bits
and group size (or none: the module stays BF16), as mlx-lm's mixed recipes
write them. model.safetensors then holds the packed codes, scales and
biases under <module>.weight/.scales/.biases and config.json the
"quantization" block, and the reference runs in float32 on exactly the
dequantized weights scale·q + bias. So the golden numbers come from
transformers on the same weights the Go loader reads, with no Go code
involved; their prompts are chosen so that every greedy step's top-2 gap
is at least MIN_GAP, so float32 rounding cannot flip a greedy id.
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
MIN_GAP = 0.05  # smallest top1-top2 logit gap over the greedy steps of a quantized fixture


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

# Quantized variants of tiny_b: the same configuration, seed and BF16
# weights, then MLX affine quantization. Overrides are (module-path suffix,
# bits, group_size); bits None keeps the module dense; the first override
# whose suffix matches and whose group divides the input size applies.
CONFIGS["tiny_b_q8g128"] = dict(CONFIGS["tiny_b"], quant=dict(bits=8, group_size=128, overrides=[]))
CONFIGS["tiny_b_mixed"] = dict(CONFIGS["tiny_b"], quant=dict(bits=4, group_size=64, overrides=[
    ("mlp.down_proj", 8, 128), ("mlp.down_proj", 8, 64), ("self_attn.q_proj", 8, 32),
    ("self_attn.v_proj", 4, 128), ("layers.1.self_attn.k_proj", None, None), ("embed_tokens", 8, 128),
]))


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


def affine_quantize(w, bits, group):
    """MLX's affine quantization of a [rows, cols] float32 matrix: codes
    (int64), scales and biases (bfloat16, [rows, cols/group])."""
    rows, cols = w.shape
    g = w.reshape(rows, cols // group, group)
    n_bins = 2**bits - 1
    w_max, w_min = g.amax(-1), g.amin(-1)
    mask = w_min.abs() > w_max.abs()
    scales = torch.clamp((w_max - w_min) / n_bins, min=1e-7)
    scales = torch.where(mask, scales, -scales)
    edge = torch.where(mask, w_min, w_max)
    q0 = torch.round(edge / scales)
    scales = torch.where(q0 != 0, edge / q0, scales)
    biases = edge
    q = torch.clamp(torch.round((g - biases[..., None]) / scales[..., None]), 0, n_bins).to(torch.int64)
    return q.reshape(rows, cols), scales.to(torch.bfloat16), biases.to(torch.bfloat16)


def pack_codes(q, bits):
    """Little-endian uint32 words, element j of a row in bits (j % per)*bits
    of word j // per, as raw bytes."""
    rows, cols = q.shape
    per = 32 // bits
    words = torch.zeros(rows, cols // per, dtype=torch.int64)
    qq = q.reshape(rows, cols // per, per)
    for k in range(per):
        words |= qq[..., k] << (bits * k)
    out = bytearray()
    for v in words.flatten().tolist():
        out += int(v).to_bytes(4, "little")
    return bytes(out)


def raw_bytes(t):
    """Little-endian bytes of a bfloat16 or float32 tensor."""
    if t.dtype == torch.bfloat16:
        vals = t.contiguous().view(torch.int16).flatten().tolist()
        return b"".join(int(v & 0xFFFF).to_bytes(2, "little") for v in vals)
    import struct
    return struct.pack("<%df" % t.numel(), *t.float().flatten().tolist())


def quant_plan(name, cols, quant):
    """(bits, group) for parameter name (relative to model.model) of a
    matrix with cols inputs, or None to keep it dense."""
    if not name.endswith(".weight") or "_coefs." in name:
        return None
    module = name[: -len(".weight")]
    for suffix, bits, group in quant["overrides"]:
        if module.endswith(suffix) and (bits is None or cols % group == 0):
            return None if bits is None else (bits, group)
    if cols % quant["group_size"] != 0:
        return None
    return quant["bits"], quant["group_size"]


def quantize_model(model, spec):
    """Replaces every matrix the plan quantizes by its dequantized values
    and returns {param name: (bits, group, codes bytes, scales, biases)} and
    the quantization block for config.json."""
    quant = spec["quant"]
    out, block = {}, {"group_size": quant["group_size"], "bits": quant["bits"]}
    with torch.no_grad():
        for name, p in model.model.named_parameters():
            if p.dim() != 2:
                continue
            plan = quant_plan(name, p.shape[1], quant)
            module = spec["prefix"] + name[: -len(".weight")]
            overridden = any(name[: -len(".weight")].endswith(o[0]) for o in quant["overrides"])
            if plan is None:
                if overridden and name.endswith(".weight"):
                    block[module] = False
                continue
            bits, group = plan
            if overridden:
                block[module] = {"group_size": group, "bits": bits}
            q, scales, biases = affine_quantize(p.float(), bits, group)
            deq = scales.float().repeat_interleave(group, dim=1) * q.float() + biases.float().repeat_interleave(group, dim=1)
            p.copy_(deq)
            out[name] = (bits, group, pack_codes(q, bits), scales, biases)
    return out, block


def save_safetensors(path, entries, metadata):
    """entries: name -> (dtype string, shape, raw bytes), written in name
    order (safetensors' own writer needs dtypes torch may lack, e.g. U32)."""
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for name in sorted(entries):
        dt, shape, data = entries[name]
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)


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
    qweights, qblock = {}, None
    if "quant" in spec:
        qweights, qblock = quantize_model(model, spec)

    V = cfg.vocab_size
    P, G = spec["prompt_len"], spec["gen"]

    def draw_prompt():
        # prompt ids: random, avoiding pad/eos/bos; some beyond the per-layer vocab
        prompt = torch.randint(3, V, (P,), generator=gen)
        prompt[0] = 2  # <bos>
        if cfg.vocab_size_per_layer_input < V:
            prompt[5] = V - 1
            prompt[17] = cfg.vocab_size_per_layer_input
        return prompt

    def greedy(prompt):
        # greedy decode through the cache: prefill, then one token per step
        cache = DynamicCache(config=cfg)
        lg, _ = forward(model, prompt, cache)
        decode_logits = [lg[-1].clone()]
        gen_ids = [int(lg[-1].argmax())]
        for _ in range(G - 1):
            lg, _ = forward(model, torch.tensor([gen_ids[-1]]), cache)
            decode_logits.append(lg[-1].clone())
            gen_ids.append(int(lg[-1].argmax()))
        return torch.stack(decode_logits), gen_ids

    def min_gap(decode_logits):
        top2 = torch.topk(decode_logits, 2, dim=-1).values
        return (top2[:, 0] - top2[:, 1]).min().item()

    with torch.no_grad():
        prompt = draw_prompt()
        decode_logits, gen_ids = greedy(prompt)
        if "quant" in spec:
            # a prompt whose greedy steps have no near ties, so that the
            # quantized kernels' float32 rounding cannot flip an id
            tries = 1
            while min_gap(decode_logits) < MIN_GAP:
                if tries == 200:
                    raise SystemExit(f"{name}: no prompt with top-2 gaps >= {MIN_GAP} in {tries} draws")
                prompt = draw_prompt()
                decode_logits, gen_ids = greedy(prompt)
                tries += 1
            print(f"{name}: prompt found in {tries} draws")

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
    gaps = min_gap(decode_logits)
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
    if qweights:
        # packed codes, scales and biases in place of the quantized matrices
        entries = {}
        for k, v in weights.items():
            rel = k[len(spec["prefix"]):] if k.startswith(spec["prefix"]) else None
            if rel in qweights:
                bits, group, codes, scales, biases = qweights[rel]
                rows, cols = v.shape
                base = k[: -len(".weight")]
                entries[k] = ("U32", (rows, cols * bits // 32), codes)
                entries[base + ".scales"] = ("BF16", tuple(scales.shape), raw_bytes(scales))
                entries[base + ".biases"] = ("BF16", tuple(biases.shape), raw_bytes(biases))
            else:
                entries[k] = ("BF16", tuple(v.shape), raw_bytes(v))
        save_safetensors(os.path.join(d, "model.safetensors"), entries, {"format": "mlx"})
    else:
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
    mcfg = mlx_config(spec, cfg)
    if qblock is not None:
        mcfg["quantization"] = qblock
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(mcfg, f, indent=2, sort_keys=True)
    with open(os.path.join(d, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 2, "eos_token_id": [1, 106], "pad_token_id": 0}, f, indent=2)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_grad_enabled(False)
    torch.use_deterministic_algorithms(True)
    print("transformers", transformers.__version__, "torch", torch.__version__)
    names = sys.argv[2:] or list(CONFIGS)
    for name in names:
        if name not in CONFIGS:
            raise SystemExit(f"make_golden.py: unknown fixture {name!r} (have {', '.join(CONFIGS)})")
    for name in names:
        make(name, CONFIGS[name], outdir)


if __name__ == "__main__":
    main()
