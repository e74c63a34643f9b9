// Package gemma3 is Google's Gemma 3 text decoder (model_type gemma3_text,
// and the language model of multimodal gemma3 checkpoints, text only) on
// models/blocks: sandwich-normed layers with (1 + w) RMSNorms, per-head
// q/k norms, GELU-tanh MLPs, sliding-window and global layers with their
// own RoPE bases (linear scaling on global layers), attention scaled by
// query_pre_attn_scalar^-0.5, embeddings scaled by sqrt(hidden) rounded to
// the checkpoint dtype, a tied head and an optional final softcap.
//
// It may import tensor, kvcache, models/checkpoint and models/blocks.
package gemma3
