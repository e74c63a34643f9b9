// Package models holds model architectures and everything needed to load
// them: checkpoint loading, tokenizers, chat templates and model name
// resolution, in sub-packages. Load picks the architecture by config.json's
// model_type (registry.go): gemma3n/gemma3n_text, gemma3/gemma3_text,
// llama, qwen3, olmo3 and cohere2, each a small package on models/blocks.
// LoadText (text.go) loads the tokenizer and chat template that go with a
// loaded model and checks them against it.
//
// Check (check.go) says whether a model directory would load, with the
// load's own error, without mapping or reading the weights: it builds the
// architecture from a checkpoint opened by checkpoint.OpenHeaders through
// the same code as Load, then runs LoadText. `mlxchat list` shows its
// answer.
//
// This package imports its sub-packages, kvcache, tensor and safefile.
// Packages under models may import kvcache, tensor and safefile
// (files of a model directory are outside input); never engine or ui.
package models
