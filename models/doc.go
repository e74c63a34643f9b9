// Package models holds model architectures and everything needed to load
// them: checkpoint loading, tokenizers, chat templates and model name
// resolution, in sub-packages. Load picks the architecture by config.json's
// model_type (registry.go): gemma3n/gemma3n_text, gemma3/gemma3_text,
// llama, qwen3, olmo3 and cohere2, each a small package on models/blocks.
//
// Packages under models may import kvcache and tensor; never engine or ui.
package models
