"""Shared machinery of the family golden scripts (models/<family>/testdata/make_golden.py).

Every reference number comes from Hugging Face transformers (float32, CPU,
eager attention) run on tiny random configurations. What this module adds
around transformers, and why:

* Weights are drawn with a fixed seed and rounded to bfloat16 before any
  forward pass, so the BF16 weights stored for the Go side are exactly the
  weights the reference used.
* Quantized variants: the dense weights are quantized here, in numpy, with
  MLX's affine scheme (per group of `group` inputs: w = scale*q + bias, codes
  packed little-end-first into uint32 words, scales and biases stored as
  BF16). The packed codes, scales and biases are written in the MLX layout
  and transformers runs on the dequantized values (scale*q + bias in float32),
  so the quantized golden is transformers' output for exactly the weights the
  Go side decodes from the packed file. Nothing here uses the project's Go
  code.
* Greedy continuations are chosen by transformers: each step is a full
  forward over the sequence so far (no cache), and the stored logits are one
  forward over all tokens.
* The trimmed scenario (DESIGN.md rules 2, 6, 9; kvcache/doc.go): a prompt
  prefilled in chunks under --max-kv-size, then decoded one token at a time.
  Which absolute key positions each query row may see is worked out here from
  those rules (kv_visibility below), written as an explicit additive 4D mask
  over all positions per layer type, and handed to every decoder layer of the
  transformers model through a forward pre-hook. One forward over all
  positions with those masks gives exactly the logits a chunked, trimmed cache
  gives: the keys and values of position p at any layer depend only on what
  p's own row could see in the layers below.
  Before using the hook the script proves it on every configuration: the
  hook with untrimmed masks (plain causal, sliding window W) must reproduce
  the model's own forward to 1e-6 of the largest logit.
* OLMo 3 with YaRN: mlx-lm (>= 0.28.4), llama.cpp, vLLM and the OLMo 3 paper
  apply YaRN (and its attention factor) to the full-attention layers only;
  several transformers 5.x releases build a single rotary table for every
  layer. The reference here is the per-layer-type model: full layers get
  transformers' own YaRN cos/sin, sliding layers transformers' own default
  cos/sin (a rotary module built from the same config without the scaling).
  The log says whether the installed transformers already does this.

Files written per configuration NAME (a folder under the family's testdata):

  NAME/config.json, NAME/generation_config.json (when the spec has one),
  NAME/model.safetensors (BF16, MLX tensor names), NAME/golden.safetensors,
  NAME/golden_trim.safetensors (specs with trim), and for each quantized
  variant NAME_q<bits>/ with its own config.json (with the quantization
  block), model.safetensors (packed) and golden.safetensors.

golden.safetensors:
  tokens     I32 [T]      prompt (first P ids) + greedy continuation
  prompt_len I32 [1]      P
  logits     F32 [T, V]   one forward over all T tokens
  rope_cos   F32 [L, D]   cos/sin that layer l's attention received at
  rope_sin   F32 [L, D]   position 1 (angle = inverse frequency; the norm is
                          the YaRN attention factor), after any override
  metadata: transformers/torch versions and a JSON "reference" entry with
  transformers' resolved layer types, windows, per-layer attention scaling,
  head_dim, embed scale, logit scale and the OLMo 3 rotary decision.

golden_trim.safetensors:
  tokens [T], prompt_len [1], chunk [1], max_kv [1], sink [1], logits [T, V]
  where rows 0..P-1 were prefilled in chunks of `chunk` and rows P..T-1 are
  single decode steps feeding tokens[P..T-1].
"""
import copy
import inspect
import json
import math
import os
import struct
import sys
import tempfile
import time
import traceback

import numpy as np

# ---------------------------------------------------------------- numpy parts
# (no torch needed: tested locally with `python3 goldenlib.py --selftest`)


def bf16_round_np(x):
    """Rounds float32 values to bfloat16 (round to nearest even) and back."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    out = r.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, out)


def bf16_bytes(x):
    """The bfloat16 bytes of float32 values that are already bf16-exact."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    return (x.view(np.uint32) >> 16).astype(np.uint16).tobytes()


def mlx_affine_quantize(w, bits, group):
    """MLX's affine quantization of a float32 [out, in] matrix.

    Per group of `group` consecutive inputs of a row, n = 2^bits - 1,
    lo = min, hi = max(max, 0): scale = max((hi-lo)/n, 1e-7), negated unless
    |lo| > |hi|; edge = lo if |lo| > |hi| else hi; q0 = round(edge/scale);
    if q0 != 0 the scale becomes edge/q0 and the bias edge (so the larger
    edge is exact), else the bias is 0. Scales and biases are stored as
    BF16; the codes are rounded against the stored values (round half away
    from zero) and clipped to [0, n].

    Returns (packed uint32 [out, in*bits/32], scales f32 [out, in/group],
    biases f32 [out, in/group], dequantized f32 [out, in]); scales and biases
    are bf16-exact.
    """
    w = np.asarray(w, dtype=np.float32)
    out, inn = w.shape
    assert inn % group == 0, (w.shape, group)
    assert 32 % bits == 0
    n = float(2**bits - 1)
    g = w.reshape(out, inn // group, group)
    lo = g.min(-1)
    hi = np.maximum(g.max(-1), 0.0)
    side = np.abs(lo) > np.abs(hi)
    scale = np.maximum((hi - lo) / n, np.float32(1e-7)).astype(np.float32)
    scale = np.where(side, scale, -scale).astype(np.float32)
    edge = np.where(side, lo, hi).astype(np.float32)
    q0 = np.trunc(edge / scale + np.copysign(0.5, edge / scale))
    nz = q0 != 0
    scale = np.where(nz, edge / np.where(nz, q0, 1), scale).astype(np.float32)
    bias = np.where(nz, edge, 0).astype(np.float32)
    scale = bf16_round_np(scale)
    bias = bf16_round_np(bias)
    x = (g - bias[..., None]) / scale[..., None]
    q = np.clip(np.trunc(x + np.copysign(0.5, x)), 0, n).astype(np.uint32)
    deq = (scale[..., None] * q.astype(np.float32) + bias[..., None]).astype(np.float32)
    per = 32 // bits
    qq = q.reshape(out, inn // per, per)
    packed = np.zeros((out, inn // per), dtype=np.uint32)
    for j in range(per):
        packed |= qq[:, :, j] << np.uint32(bits * j)
    return packed, scale, bias, deq.reshape(out, inn)


def unpack_codes(packed, bits, inn):
    """Inverse of the packing in mlx_affine_quantize (for the self-test)."""
    per = 32 // bits
    mask = np.uint32(2**bits - 1)
    out = np.zeros((packed.shape[0], inn), dtype=np.uint32)
    for j in range(per):
        out[:, j::per] = (packed >> np.uint32(bits * j)) & mask
    return out


def write_safetensors(path, tensors, metadata=None):
    """Writes a safetensors file. tensors: list of (name, dtype, shape, bytes)
    with dtype one of "BF16", "F32", "I32", "U32"."""
    header = {}
    off = 0
    blobs = []
    for name, dtype, shape, data in tensors:
        size = {"BF16": 2, "F32": 4, "I32": 4, "U32": 4}[dtype]
        assert len(data) == size * int(np.prod(shape, dtype=np.int64)), (name, shape, len(data))
        header[name] = {"dtype": dtype, "shape": list(int(s) for s in shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def kv_visibility(T, chunks, layer_types, window, max_kv, sink=4):
    """Which absolute key positions each query row sees under our kvcache.

    chunks: list of (start, n) feeding positions 0..T-1 in order. Rules
    (DESIGN.md 2, 6, 7, 9; kvcache/doc.go):
    * global layers keep sink ∪ recent: before a chunk of n, the oldest keys
      after the sink are dropped until live + n <= max_kv; the sink is the
      first min(sink, max_kv // 2) positions; a row at p sees the kept keys
      and the chunk's keys up to p;
    * sliding layers have the effective window we = min(W, max_kv) and a row
      at p sees positions p-we+1 .. p (the chunk's first rows see the
      we-1 keys before the chunk);
    * max_kv 0 means no cap: plain causal and sliding-window masks.
    Returns {layer_type: bool array [T, T]}.
    """
    out = {}
    for lt in sorted(set(layer_types)):
        vis = np.zeros((T, T), dtype=bool)
        if lt == "sliding_attention":
            we = window if max_kv <= 0 else min(window, max_kv)
            for p in range(T):
                vis[p, max(0, p - we + 1): p + 1] = True
        elif lt == "full_attention":
            s = sink if max_kv <= 0 else min(sink, max_kv // 2)
            live = []
            for (o, n) in chunks:
                if max_kv > 0:
                    assert n <= max_kv - s, f"chunk {n} does not fit max_kv {max_kv} with sink {s}"
                    while len(live) + n > max_kv:
                        idx = next(i for i, q in enumerate(live) if q >= s)
                        live.pop(idx)
                for r in range(n):
                    p = o + r
                    vis[p, live] = True
                    vis[p, o: p + 1] = True
                live.extend(range(o, o + n))
            assert sum(n for _, n in chunks) == T
        else:
            raise ValueError(f"layer type {lt!r}")
        out[lt] = vis
    return out


def chunk_schedule(prompt_len, chunk, total):
    """Prefill chunks of `chunk` over the prompt, then single decode steps."""
    out = [(o, min(chunk, prompt_len - o)) for o in range(0, prompt_len, chunk)]
    out += [(p, 1) for p in range(prompt_len, total)]
    return out


def selftest():
    rng = np.random.default_rng(0)
    for bits, group in [(4, 64), (8, 32), (4, 32), (8, 64)]:
        w = bf16_round_np(rng.standard_normal((6, 128)).astype(np.float32) * 0.3)
        w[0, :group] = np.abs(w[0, :group])  # an all-positive group
        w[1, :group] = -np.abs(w[1, :group])  # an all-negative group
        w[2, :group] = 0  # an all-zero group
        packed, s, b, deq = mlx_affine_quantize(w, bits, group)
        q = unpack_codes(packed, bits, 128)
        assert q.max() <= 2**bits - 1
        re = s.repeat(group, axis=1) * q.astype(np.float32) + b.repeat(group, axis=1)
        assert np.array_equal(re.astype(np.float32), deq), "dequantize mismatch"
        err = np.abs(deq - w).max()
        step = np.abs(s).max()
        # rounding q0 can shrink the covered range below the group's (MLX
        # keeps the larger edge and zero exact), so the bound is one step
        span = (w.reshape(6, -1, group).max(-1) - w.reshape(6, -1, group).min(-1)).max()
        assert err <= 0.5 * span + 1e-6, (bits, group, err, span)
        assert np.all(deq[2, :group] == 0)
        print(f"selftest quantize {bits}-bit g{group}: max err {err:.4g} (max step {step:.4g})")
    # kv visibility: the seed scenario scaled down
    sched = chunk_schedule(90, 16, 138)
    vis = kv_visibility(138, sched, ["sliding_attention", "full_attention"], 16, 32)
    full, slide = vis["full_attention"], vis["sliding_attention"]
    assert full[10, :11].all() and not full[10, 11:].any()
    # chunk at 32: live before = 0..31, trimmed to 16 = sink 0..3 + 20..31
    want = list(range(0, 4)) + list(range(20, 33))
    assert list(np.nonzero(full[32])[0]) == want, np.nonzero(full[32])[0]
    # decode at 100: 31 kept (sink + 27 recent) + itself
    row = list(np.nonzero(full[100])[0])
    assert row == list(range(4)) + list(range(73, 101)), row
    assert full.sum(1).max() <= 32 + 16 and all(full[p].sum() <= 32 for p in range(90, 138))
    assert all(slide[p].sum() == min(p + 1, 16) for p in range(138))
    for p in range(138):
        assert full[p, p] and slide[p, p]
    print("selftest kv_visibility: ok")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.safetensors")
        write_safetensors(path, [("a", "F32", [2], np.array([1, 2], np.float32).tobytes()),
                                 ("b", "BF16", [1], bf16_bytes(np.array([1.5], np.float32)))], {"k": "v"})
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            h = json.loads(f.read(n))
        assert h["a"]["data_offsets"] == [0, 8] and h["b"]["data_offsets"] == [8, 10] and n % 8 == 0
    print("selftest safetensors: ok")


# ---------------------------------------------------------------- torch parts

def _torch():
    import torch  # noqa: PLC0415
    return torch


class Tee:
    """Copies stdout into a log file."""

    def __init__(self, path):
        self.f = open(path, "w")
        self.out = sys.stdout

    def write(self, s):
        self.out.write(s)
        self.f.write(s)

    def flush(self):
        self.out.flush()
        self.f.flush()


def load_hf_config(cfg_dict, text_key):
    """transformers' config for a config.json, read the way from_pretrained
    reads a model directory; for multimodal configs the text config."""
    import transformers  # noqa: PLC0415
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg_dict, f)
        cfg = transformers.AutoConfig.from_pretrained(d)
    if text_key:
        cfg = getattr(cfg, text_key)
    return cfg


def build_model(cfg):
    """The causal LM for cfg in float32 with eager attention."""
    import transformers  # noqa: PLC0415
    torch = _torch()
    cfg._attn_implementation = "eager"
    cls = transformers.AutoModelForCausalLM._model_mapping[type(cfg)]
    torch.set_default_dtype(torch.float32)
    model = cls(cfg).float().eval()
    impl = getattr(model.config, "_attn_implementation", None)
    if impl != "eager":
        raise SystemExit(f"attention implementation is {impl!r}, want eager")
    for name, b in model.named_buffers():
        if b.is_floating_point() and b.dtype != torch.float32:
            raise SystemExit(f"buffer {name} is {b.dtype}")
    return model


def layer_types_of(model):
    cfg = model.config
    lt = getattr(cfg, "layer_types", None)
    if lt is None:
        lt = ["full_attention"] * cfg.num_hidden_layers
    return list(lt)


def init_weights(model, seed, one_plus_w):
    """Fixed-seed weights at scales that keep every block visible, rounded to
    bfloat16. Norm weights: zero-centred for (1+w) norms, around 1 otherwise;
    linear biases small; matrices ~ 1/sqrt(fan_in); embeddings std 0.5."""
    torch = _torch()
    gen = torch.Generator().manual_seed(seed)
    linear_bias = set()
    for mname, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and mod.bias is not None:
            linear_bias.add(mname + ".bias")
    for name, p in model.named_parameters():
        shape = p.shape

        def normal(std, mean=0.0):
            return torch.randn(shape, generator=gen) * std + mean

        if name in linear_bias:
            v = normal(0.1)
        elif p.dim() == 1:
            v = normal(0.2) if one_plus_w else normal(0.2, 1.0)
        elif "embed_tokens" in name:
            v = normal(0.5)
        elif p.dim() == 2:
            v = normal(1.0 / math.sqrt(shape[1]))
        else:
            raise SystemExit(f"no init rule for {name} {tuple(shape)}")
        p.copy_(v.to(torch.bfloat16).to(torch.float32))


class Hooks:
    """Forward pre-hooks on the decoder layers: replace the attention mask
    and/or the position embeddings of each layer by layer type, and record
    the position embeddings each layer receives."""

    def __init__(self, model, masks=None, pe=None, record=False):
        self.model, self.masks, self.pe, self.record = model, masks, pe, record
        self.seen = {}
        self.handles = []
        types = layer_types_of(model)
        for i, layer in enumerate(model.model.layers):
            self.handles.append(layer.register_forward_pre_hook(self._hook(i, types[i]), with_kwargs=True))

    def _hook(self, i, lt):
        def hook(mod, args, kwargs):
            if self.masks is not None:
                if "attention_mask" not in kwargs:
                    raise SystemExit(f"layer {i}: decoder layer called without an attention_mask keyword; kwargs {sorted(kwargs)}")
                kwargs["attention_mask"] = self.masks[lt]
            if self.pe is not None and lt in self.pe:
                if "position_embeddings" not in kwargs:
                    raise SystemExit(f"layer {i}: no position_embeddings keyword; kwargs {sorted(kwargs)}")
                kwargs["position_embeddings"] = self.pe[lt]
            if self.record:
                pe = kwargs.get("position_embeddings")
                if pe is None:  # transformers 4.5x Gemma 3 passed both tables
                    key = "position_embeddings_local" if lt == "sliding_attention" else "position_embeddings_global"
                    pe = kwargs.get(key)
                self.seen[i] = pe
            return args, kwargs
        return hook

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()


def additive(vis):
    torch = _torch()
    m = torch.full(vis.shape, torch.finfo(torch.float32).min, dtype=torch.float32)
    m[torch.from_numpy(vis)] = 0.0
    return m.view(1, 1, *vis.shape)


def logits_of(model, ids, vis=None, pe=None, record=False):
    """Logits [T, V] of one forward over ids (no cache); vis: {layer type:
    bool [T, T]} replaces the masks; pe: {layer type: (cos, sin)} over
    positions 0.. replaces the position embeddings."""
    torch = _torch()
    T = ids.numel()
    masks = None if vis is None else {k: additive(v[:T, :T]) for k, v in vis.items()}
    pes = None if pe is None else {k: (c[:, :T], s[:, :T]) for k, (c, s) in pe.items()}
    with Hooks(model, masks, pes, record) as h:
        out = model(input_ids=ids.view(1, -1), use_cache=False)
    lg = out.logits[0].float()
    if record:
        return lg, h.seen
    return lg


def greedy(model, prompt, gen, vis=None, pe=None):
    torch = _torch()
    ids = prompt.clone()
    for _ in range(gen):
        lg = logits_of(model, ids, vis, pe)
        ids = torch.cat([ids, lg[-1].argmax().view(1)])
    return ids


def rope_rows(seen, L, d):
    """cos/sin each layer received at position 1, [L, d] each."""
    torch = _torch()
    cos = torch.zeros(L, d)
    sin = torch.zeros(L, d)
    for i in range(L):
        pe = seen.get(i)
        if pe is None:
            continue
        c, s = pe
        cos[i] = c.reshape(-1, c.shape[-1])[1, :d].float()
        sin[i] = s.reshape(-1, s.shape[-1])[1, :d].float()
    return cos, sin


def quantize_model(model, bits, group):
    """Replaces every linear/embedding weight whose input size is a multiple
    of group by its MLX affine dequantization; returns {param name: (packed,
    scales, biases)} for the quantized ones."""
    torch = _torch()
    out = {}
    for mname, mod in model.named_modules():
        if not isinstance(mod, (torch.nn.Linear, torch.nn.Embedding)):
            continue
        w = mod.weight
        pname = mname + ".weight"
        if any(w is v[3] for v in out.values()):
            continue  # tied: already done
        if w.shape[1] % group != 0:
            continue
        packed, s, b, deq = mlx_affine_quantize(w.detach().numpy(), bits, group)
        with torch.no_grad():
            w.copy_(torch.from_numpy(deq))
        out[pname] = (packed, s, b, w)
    return out


def checkpoint_tensors(model, prefix, quant=None, extra=None):
    """The MLX tensors of the model: names with the spec's prefix instead of
    transformers' "model.", lm_head only when untied, BF16 (dense) or the
    packed U32 codes with BF16 scales and biases (quantized)."""
    torch = _torch()
    tensors = []
    seen = set()
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        if name.startswith("model."):
            out = prefix + name[len("model."):]
        elif name == "lm_head.weight" and prefix == "model.":
            out = name
        else:
            raise SystemExit(f"unexpected parameter {name}")
        if quant and name in quant:
            packed, s, b, _ = quant[name]
            base = out[: -len(".weight")]
            tensors.append((out, "U32", packed.shape, np.ascontiguousarray(packed).tobytes()))
            tensors.append((base + ".scales", "BF16", s.shape, bf16_bytes(s)))
            tensors.append((base + ".biases", "BF16", b.shape, bf16_bytes(b)))
            continue
        v = p.detach().float().numpy()
        if not np.array_equal(bf16_round_np(v), v):
            raise SystemExit(f"{name} is not bf16-exact")
        tensors.append((out, "BF16", v.shape, bf16_bytes(v)))
    for name, shape in (extra or {}).items():
        g = np.random.default_rng(7)
        v = bf16_round_np(g.standard_normal(shape).astype(np.float32))
        tensors.append((name, "BF16", shape, bf16_bytes(v)))
    tensors.sort(key=lambda t: t[0])
    return tensors


def f32_entry(name, t):
    a = np.ascontiguousarray(t.detach().float().numpy(), dtype=np.float32)
    return (name, "F32", a.shape, a.tobytes())


def i32_entry(name, vals):
    a = np.ascontiguousarray(np.asarray(vals, dtype=np.int32))
    return (name, "I32", a.shape, a.tobytes())


def describe(model, text_cfg):
    """What transformers resolved from the config (stored as metadata)."""
    cfg = model.config
    types = layer_types_of(model)
    scal = []
    for layer in model.model.layers:
        a = layer.self_attn
        scal.append(float(getattr(a, "scaling", float("nan"))))
    emb = model.model.embed_tokens
    es = getattr(emb, "embed_scale", None)
    if es is not None:
        es = float(es)
    return {
        "layer_types": types,
        "sliding_window": getattr(cfg, "sliding_window", None),
        "head_dim": getattr(model.model.layers[0].self_attn, "head_dim", None),
        "scaling": scal,
        "embed_scale": es,
        "logit_scale": None if getattr(model, "logit_scale", None) is None else float(model.logit_scale),
        "final_logit_softcapping": getattr(cfg, "final_logit_softcapping", None),
        "tie_word_embeddings": getattr(cfg, "tie_word_embeddings", None),
        "rope_parameters": _jsonable(getattr(cfg, "rope_parameters", None)),
        "rope_scaling": _jsonable(getattr(cfg, "rope_scaling", None)),
    }


def _jsonable(v):
    try:
        json.dumps(v)
        return v
    except TypeError:
        return str(v)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


def make(spec, outdir, versions):
    """Builds one configuration's folder(s). spec keys:
    name, seed, config (the config.json dict), text_key ("text_config" for a
    multimodal config, else None), prefix, generation_config (dict or None),
    extra_tensors ({name: shape} of non-text tensors to store), one_plus_w,
    prompt_len, gen, quant ([(bits, group), ...]), trim (dict(window?,
    max_kv, chunk, prompt_len, gen) or None), rope_override ("olmo3" or
    None), bf16_embed_scale (bool)."""
    torch = _torch()
    name = spec["name"]
    t0 = time.time()
    cfg_dict = spec["config"]
    # hf_config: the same model in a spelling the installed transformers
    # accepts, when config.json is written in one it rejects (spec docs say
    # why the two are equivalent)
    hf_dict = spec.get("hf_config", cfg_dict)
    text_key = spec.get("text_key")
    cfg = load_hf_config(hf_dict, text_key)
    model = build_model(cfg)
    init_weights(model, spec["seed"], spec.get("one_plus_w", False))
    tied = model.get_output_embeddings().weight is model.model.embed_tokens.weight
    if bool(getattr(cfg, "tie_word_embeddings", False)) != tied:
        raise SystemExit(f"{name}: tie_word_embeddings {cfg.tie_word_embeddings} but lm_head tied = {tied}")
    emb = model.model.embed_tokens
    if spec.get("bf16_embed_scale"):
        # transformers keeps sqrt(hidden) as a buffer cast to the weight
        # dtype: a bfloat16 run multiplies by the bf16-rounded constant.
        want = float(bf16_round_np(np.array([math.sqrt(cfg.hidden_size)], np.float32))[0])
        if not hasattr(emb, "embed_scale"):
            raise SystemExit(f"{name}: embedding has no embed_scale")
        if torch.is_tensor(emb.embed_scale):
            emb.embed_scale.fill_(want)
        else:
            emb.embed_scale = want
        print(f"{name}: embed_scale set to the bf16-rounded sqrt(hidden) = {want}")
    types = layer_types_of(model)
    L, V = cfg.num_hidden_layers, cfg.vocab_size
    window = getattr(cfg, "sliding_window", None) or 0
    info = describe(model, cfg)
    print(f"{name}: transformers resolved {json.dumps(info)}")

    # Per-layer-type rotary override (OLMo 3 YaRN on full layers only).
    pe = None
    tr = spec.get("trim")
    Tmax = spec["prompt_len"] + spec["gen"]
    if tr:
        Tmax = max(Tmax, tr["prompt_len"] + tr["gen"])
    probe = torch.randint(3, V, (Tmax,), generator=torch.Generator().manual_seed(1))
    _, seen = logits_of(model, probe, record=True)
    if spec.get("rope_override") == "olmo3":
        # The same config with the default table at the same base on every
        # layer type, in transformers 5's per-type spelling: 5.17 ignores a
        # bare rope_theta for olmo3 (it falls back to its 500000 default).
        plain = copy.deepcopy(hf_dict)
        plain.pop("rope_scaling", None)
        rp = plain.get("rope_parameters") or {}
        if "full_attention" in rp:
            rp = rp["full_attention"]
        theta = float(rp.get("rope_theta", plain.get("rope_theta", 500000.0)))
        default = {"rope_type": "default", "rope_theta": theta}
        plain["rope_parameters"] = {"full_attention": dict(default), "sliding_attention": dict(default)}
        plain["rope_theta"] = theta
        cfg_plain = load_hf_config(plain, text_key)
        rot = type(model.model.rotary_emb)(config=cfg_plain)
        x = torch.zeros(1, Tmax, cfg.hidden_size)
        pos = torch.arange(Tmax).view(1, -1)
        try:
            dcos, dsin = rot(x, pos)
        except TypeError:
            dcos, dsin = rot(x, pos, "sliding_attention")
        # sanity check of the table transformers built (not the reference):
        # its angles at position 1 must be theta^(-2i/d)
        d_rot = dcos.shape[-1]
        want = torch.tensor([theta ** (-2.0 * i / d_rot) for i in range(d_rot // 2)], dtype=torch.float64)
        got = torch.atan2(dsin[0, 1, : d_rot // 2].double(), dcos[0, 1, : d_rot // 2].double())
        if not torch.allclose(got, want, rtol=1e-5, atol=1e-7):
            raise SystemExit(f"{name}: default rotary table at base {theta} came out as {got.tolist()}")
        own_sl = [i for i, t in enumerate(types) if t == "sliding_attention"]
        own_fu = [i for i, t in enumerate(types) if t == "full_attention"]
        c_sl = seen[own_sl[0]][0]
        c_fu = seen[own_fu[0]][0]
        same_default = torch.allclose(c_sl, dcos, atol=1e-6)
        same_full = torch.allclose(c_sl, c_fu, atol=1e-6)
        if same_default:
            decision = "transformers already uses the default table on sliding layers"
        elif same_full:
            decision = "transformers applies the full-layer (YaRN) table to every layer; sliding layers overridden with the default table"
        else:
            decision = "sliding-layer table is neither default nor full; overridden with the default table"
        print(f"{name}: OLMo 3 rotary: {decision}")
        info["olmo3_rotary"] = decision
        pe = {"sliding_attention": (dcos, dsin)}

    # Validate the hook path: untrimmed masks must reproduce transformers'.
    vis_plain = kv_visibility(Tmax, [(p, 1) for p in range(Tmax)], types, window, 0)
    own = logits_of(model, probe, pe=pe)
    hooked = logits_of(model, probe, vis=vis_plain, pe=pe)
    diff = (own - hooked).abs().max().item()
    scale = own.abs().max().item()
    print(f"{name}: hook check: explicit causal/sliding masks vs transformers' own masks: max |diff| {diff:.3e} (max |logit| {scale:.3f})")
    if not diff <= 1e-6 * scale:
        raise SystemExit(f"{name}: explicit masks do not reproduce transformers' masks ({diff:.3e})")

    _, seen = logits_of(model, probe[:4], pe=pe, record=True)
    d_head = info["head_dim"] or cfg.hidden_size // cfg.num_attention_heads
    rcos, rsin = rope_rows(seen, L, d_head)
    if spec.get("nope_full"):
        for i, t in enumerate(types):
            if t == "full_attention":  # these layers ignore the tables they are handed
                rcos[i] = 0
                rsin[i] = 0

    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    write_json(os.path.join(d, "config.json"), cfg_dict)
    if spec.get("generation_config") is not None:
        write_json(os.path.join(d, "generation_config.json"), spec["generation_config"])
    write_safetensors(os.path.join(d, "model.safetensors"),
                      checkpoint_tensors(model, spec["prefix"], extra=spec.get("extra_tensors")), {"format": "mlx"})

    gen = torch.Generator().manual_seed(spec["seed"] + 1)
    P, G = spec["prompt_len"], spec["gen"]
    bos = spec.get("bos")
    prompt = torch.randint(3, V, (P,), generator=gen)
    if bos is not None:
        prompt[0] = bos

    def golden(model, path, meta):
        ids = greedy(model, prompt, G, pe=pe)
        lg = logits_of(model, ids, pe=pe)
        gaps = torch.topk(lg[P - 1:], 2, dim=-1).values
        gap = (gaps[:, 0] - gaps[:, 1]).min().item()
        print(f"{os.path.basename(os.path.dirname(path))}: T={ids.numel()} max|logit|={lg.abs().max().item():.3f} "
              f"std={lg.std().item():.3f} min top1-top2 gap after the prompt {gap:.4f}")
        print(f"  prompt={ids[:P].tolist()}")
        print(f"  greedy={ids[P:].tolist()}")
        write_safetensors(path, [
            i32_entry("tokens", ids.tolist()), i32_entry("prompt_len", [P]),
            f32_entry("logits", lg), f32_entry("rope_cos", rcos), f32_entry("rope_sin", rsin),
        ], meta)

    meta = dict(versions)
    meta["reference"] = json.dumps(info)
    golden(model, os.path.join(d, "golden.safetensors"), meta)

    if tr:
        TP, TG, chunk, maxkv, sink = tr["prompt_len"], tr["gen"], tr["chunk"], tr["max_kv"], tr.get("sink", 4)
        T = TP + TG
        sched = chunk_schedule(TP, chunk, T)
        vis = kv_visibility(T, sched, types, window, maxkv, sink)
        tprompt = torch.randint(3, V, (TP,), generator=gen)
        if bos is not None:
            tprompt[0] = bos
        ids = greedy(model, tprompt, TG, vis=vis, pe=pe)[:T]
        lg = logits_of(model, ids, vis=vis, pe=pe)
        untrimmed = logits_of(model, ids, pe=pe)
        moved = (lg - untrimmed).abs().max().item()
        print(f"{name} trim: T={T} chunk {chunk} max_kv {maxkv} sink {sink}: max|logit| {lg.abs().max().item():.3f}; "
              f"trimming moved logits by up to {moved:.3f}")
        print(f"  tokens={ids.tolist()}")
        write_safetensors(os.path.join(d, "golden_trim.safetensors"), [
            i32_entry("tokens", ids.tolist()), i32_entry("prompt_len", [TP]), i32_entry("chunk", [chunk]),
            i32_entry("max_kv", [maxkv]), i32_entry("sink", [sink]), f32_entry("logits", lg),
        ], meta)

    state = {k: v.clone() for k, v in model.state_dict().items()}
    for bits, group in spec.get("quant", []):
        model.load_state_dict(state)
        q = quantize_model(model, bits, group)
        qname = f"{name}_q{bits}"
        qd = os.path.join(outdir, qname)
        os.makedirs(qd, exist_ok=True)
        qcfg = copy.deepcopy(cfg_dict)
        qcfg["quantization"] = {"group_size": group, "bits": bits}
        qcfg["quantization_config"] = {"group_size": group, "bits": bits}
        write_json(os.path.join(qd, "config.json"), qcfg)
        if spec.get("generation_config") is not None:
            write_json(os.path.join(qd, "generation_config.json"), spec["generation_config"])
        write_safetensors(os.path.join(qd, "model.safetensors"),
                          checkpoint_tensors(model, spec["prefix"], quant=q, extra=spec.get("extra_tensors")), {"format": "mlx"})
        print(f"{qname}: {len(q)} matrices quantized ({bits}-bit, group {group}): {sorted(q)[:3]}...")
        golden(model, os.path.join(qd, "golden.safetensors"), meta)
    print(f"{name}: done in {time.time() - t0:.1f}s")


def main(specs, outdir):
    """Runs every spec (or those named on the command line), logging to
    outdir/make_golden.log; exits non-zero if any failed."""
    torch = _torch()
    import transformers  # noqa: PLC0415
    torch.set_grad_enabled(False)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    only = set(sys.argv[1:])
    log = Tee(os.path.join(outdir, "make_golden.log"))
    sys.stdout = log
    versions = {"transformers": transformers.__version__, "torch": torch.__version__}
    print("transformers", transformers.__version__, "torch", torch.__version__)
    failed = []
    for spec in specs:
        if only and spec["name"] not in only:
            continue
        try:
            with torch.no_grad():
                make(spec, outdir, versions)
        except BaseException as e:  # noqa: BLE001
            traceback.print_exc(file=log)
            print(f"{spec['name']}: FAILED: {e!r}")
            failed.append(spec["name"])
        log.flush()
    sys.stdout = log.out
    log.f.close()
    if failed:
        print("failed:", ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        selftest()
    else:
        print(__doc__)
