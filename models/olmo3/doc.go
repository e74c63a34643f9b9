// Package olmo3 is Ai2's OLMo 3 decoder (model_type olmo3) on
// models/blocks: layers with no norm before attention or MLP and RMSNorms
// on their outputs, q/k RMSNorms over the whole projection width (before
// the head split), three sliding-window layers to one global, RoPE at one
// base on both kinds with YaRN (and its attention factor, folded into the
// attention scale) on the global layers only, SiLU MLPs and a separate
// head.
//
// It may import tensor, kvcache, models/checkpoint and models/blocks.
package olmo3
