// Package gemma3n is the Gemma 3n text decoder (as mlx-lm's gemma3n.py and
// transformers' modeling_gemma3n.py define it) over tensor.Backend ops:
// scaled token embeddings, per-layer input embeddings and their projection,
// AltUp streams (predict, correct, coefficient clipping, scaled output),
// LAuReL, attention with q/k/v norms and per-layer-type RoPE bases,
// sliding and global layers, KV sharing for the last layers, the GELU-tanh
// MLP with gaussian top-k activation sparsity, stream averaging with
// magnitude matching, the tied (possibly quantized) lm_head and the final
// logit softcap. Vision and audio towers in the checkpoint are ignored.
//
// It shares models/blocks with the other families (attention, MLP, norms,
// RoPE tables, the chunk protocol RunChunk and NewCache); what is Gemma 3n's
// own is the AltUp/LAuReL/per-layer-input wiring, and each decoder layer
// runs as named steps: predict, input norm, laurel, attend, feedForward,
// correct, perLayerInput (layer.forward in forward.go).
//
// KV sharing also shortens prefill: the trailing KV-shared layers write no
// cache, so a chunk that only wants its last token's logits (every chunk
// the engine prefills) runs them on that row alone (forward; the cache
// gives those layers the tail of the shared view, kvcache.SharedTail).
// That skips a third of E2B's layers for all but one token of each chunk,
// and the cache and the last logits come out as from the whole pass. The
// GPU backend still runs every row (see forward).
//
// Where mlx-lm and transformers disagree this package follows transformers
// (the source of the golden tests) and says so: KV-shared layers rotate
// their queries at the chunk's own positions (mlx-lm issue #1674 rotates
// them at the producer cache's offset after its update), a KV-shared layer
// reads the last earlier layer of its own attention type, and the AltUp
// magnitude matching divides by sqrt(max(mean(x²), 1e-5)).
//
// It may import tensor, kvcache, models/checkpoint and models/blocks.
package gemma3n
