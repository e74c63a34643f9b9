// Package llama is the Llama decoder (model_type llama: Llama 3.x and
// Llama-shaped models) on models/blocks: pre-norm layers with RMSNorms,
// grouped-query attention scaled by head_dim^-0.5 with optional q/k/v/o
// biases, a SiLU-gated MLP with optional biases, RoPE with the default,
// linear or Llama 3 ("llama3") frequency table on every layer, and a tied
// or separate head. Layers are global unless layer_types says otherwise.
//
// It may import tensor, kvcache, models/checkpoint and models/blocks.
package llama
