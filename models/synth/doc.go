// Package synth writes synthetic MLX-format checkpoints: a safetensors
// writer, config.json, generation_config.json and random but deterministic
// weights. It makes tiny random models of every supported family for other
// packages' tests (TinyGemma3n, TinyFamily) and full-size checkpoints with
// the exact tensor names, shapes, dtypes, quantization block and
// config.json keys of one real mlx-community 4-bit repository per family
// (E2BGemma3n: gemma-3n-E2B-it-4bit, see testdata/gemma3n_e2b_params.json
// and the script testdata/list_params.py that derived it from
// transformers; FullFamily: the repositories named in llama.go, qwen3.go,
// gemma3.go, olmo3.go and cohere2.go, each of which says where its layout
// came from). Options.ZeroData writes such a layout as sparse files of
// zeros, so tests can load a full-size model without generating it. It
// also generates a small working Gemma-format tokenizer (GemmaTokenizer:
// byte-fallback BPE with Gemma's special tokens and ids, merges learned
// from a short English text) with the Gemma chat template, so synthetic
// models run in the chat as written.
//
// It may import only the standard library, golang.org/x/sys/unix and tensor.
package synth
