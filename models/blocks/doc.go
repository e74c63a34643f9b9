// Package blocks holds what the transformer architectures under models/
// share, written once:
//
//   - Decoder and Layer: a decoder-only model (embedding with an optional
//     scale, layers, final norm, tied or separate head, logit scale,
//     softcap) whose layers follow one of two residual templates
//     (sequential with optional pre/post norms around attention and MLP,
//     or Cohere's parallel block), and RunChunk, the cache protocol of one
//     forward chunk (Begin, Commit, Abort on error or panic);
//   - Attention (projections with optional biases, per-head or full-width
//     q/k norms, RoPE or none, KV cache, output projection), MLP (gated,
//     GELU-tanh or SiLU, optional biases and Gemma 3n's sparsity) and Norm
//     (RMSNorm, (1 + w) precomputed in F32 at load, or LayerNorm);
//   - RoPE tables (default, linear, llama3, yarn with its attention
//     factor; one per layer kind) and the rope settings of config.json in
//     both spellings (rope_theta/rope_scaling, rope_parameters);
//   - layer-type resolution (layer_types, or a sliding/global pattern);
//   - config readers with range checks whose errors name the key, the
//     weight loader with shape checks, Info, a scratch-buffer arena,
//     tensor views, and the rounding of scalar constants to the
//     checkpoint's compute dtype.
//
// Every computation goes through tensor.Backend ops, so an architecture
// written with these blocks runs on any backend; caches and masks come only
// from kvcache.
//
// testdata/goldenlib.py is the shared machinery of the families' golden
// scripts (models/<family>/testdata/make_golden.py).
//
// It may import tensor, kvcache and models/checkpoint; never engine or ui.
package blocks
