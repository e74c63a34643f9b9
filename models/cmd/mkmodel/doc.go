// Command mkmodel writes synthetic MLX-format checkpoints of every
// supported family (-arch MODEL_TYPE: gemma3n, the default, or one of
// synth.Families): tiny random models for tests, or a full-size one
// (-kind full) with the exact layout of the family's mlx-community 4-bit
// repository (gemma-3n-E2B-it-4bit, Llama-3.2-3B-Instruct-4bit,
// Qwen3-4B-4bit, gemma-3-1b-it-4bit, gemma-3-4b-it-4bit,
// Olmo-3-7B-Instruct-4bit, c4ai-command-r7b-12-2024-4bit) for loading and
// speed tests. Unless -tokenizer names a tokenizer.json to copy, the model
// gets a generated Gemma tokenizer (synth.GemmaTokenizer) of its
// vocabulary size with the Gemma chat template, so it runs in the chat,
// `mlxchat run` and `bench` as written; a copied tokenizer gives a tiny
// model of another family that family's special ids and, unless -vocab is
// set, the tokenizer's vocabulary size.
//
//	go run ./models/cmd/mkmodel -kind tiny -out /tmp/tiny
//	go run ./models/cmd/mkmodel -kind e2b -out /tmp/e2b -bits 4 -seed 1
//	go run ./models/cmd/mkmodel -arch qwen3 -kind full -out /tmp/qwen3-4b
//
// It may import the standard library, tensor, models/synth and
// models/tokenizer (to size a tiny model's vocabulary to a copied
// tokenizer).
package main
