// Package blocks holds what transformer architectures under models/ share:
// the Info a model reports, a loader that reads named weights from a
// checkpoint with shape checks, a scratch-buffer arena, tensor views, the
// attention block (projections, q/k/v norms, RoPE, KV cache, output
// projection), the gated MLP, and the rounding of scalar constants to the
// checkpoint's compute dtype.
//
// Every computation goes through tensor.Backend ops, so an architecture
// written with these blocks runs on any backend; caches and masks come only
// from kvcache.
//
// It may import tensor, kvcache and models/checkpoint; never engine or ui.
package blocks
