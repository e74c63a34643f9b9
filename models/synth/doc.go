// Package synth writes synthetic MLX-format checkpoints: a safetensors
// writer, config.json, generation_config.json and random but deterministic
// weights. It makes tiny random Gemma 3n text models for other packages'
// tests and a full-size checkpoint with the exact tensor names, shapes,
// dtypes and quantization layout of mlx-community/gemma-3n-E2B-it-4bit for
// loading and speed tests (see testdata/gemma3n_e2b_params.json and the
// script testdata/list_params.py that derived it from transformers). It
// also generates a small working Gemma-format tokenizer (GemmaTokenizer:
// byte-fallback BPE with Gemma's special tokens and ids, merges learned
// from a short English text) with the Gemma chat template, so synthetic
// models run in the chat as written.
//
// It may import only the standard library, golang.org/x/sys/unix and tensor.
package synth
