// Package cohere2 is Cohere's Command R7B decoder (model_type cohere2) on
// models/blocks: parallel layers (x + attn(n) + mlp(n) over one
// weight-only LayerNorm n), sliding-window layers with interleaved RoPE and
// global layers with no positional encoding at all, SiLU MLPs, head_dim
// fixed at hidden/heads, and a tied head whose logits are multiplied by
// logit_scale.
//
// It may import tensor, kvcache, models/checkpoint and models/blocks.
package cohere2
