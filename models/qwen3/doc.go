// Package qwen3 is the dense Qwen3 decoder (model_type qwen3) on
// models/blocks: Llama's pre-norm layers plus per-head RMSNorms on queries
// and keys before RoPE, head_dim independent of hidden/heads, all layers
// global (use_sliding_window is refused), and a tied or separate head.
//
// It may import tensor, kvcache, models/checkpoint and models/blocks.
package qwen3
