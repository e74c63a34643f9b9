// Package enginetest writes a tiny but complete model directory for tests
// of the engine and the CLI: a random Gemma 3n checkpoint from models/synth
// (vocabulary 512) with a matching small SentencePiece-style BPE
// tokenizer.json (byte fallback, Gemma's special-token ids) and a Gemma-like
// chat template in tokenizer_config.json. WriteTinyFamily writes the same
// with a tiny checkpoint of another family (Gemma 3, Llama, Qwen3, OLMo 3,
// Cohere2) instead.
//
// It may import models/synth and the standard library; only tests use it.
package enginetest
