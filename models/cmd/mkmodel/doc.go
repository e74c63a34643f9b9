// Command mkmodel writes synthetic MLX-format Gemma 3n checkpoints: tiny
// random models for tests, or a full-size one with the exact layout of
// mlx-community/gemma-3n-E2B-it-4bit for loading and speed tests. Unless
// -tokenizer names a tokenizer.json to copy, the model gets a generated
// Gemma tokenizer (synth.GemmaTokenizer) of its vocabulary size with the
// Gemma chat template, so it runs in the chat, `mlxchat run` and `bench`
// as written.
//
//	go run ./models/cmd/mkmodel -kind tiny -out /tmp/tiny
//	go run ./models/cmd/mkmodel -kind e2b -out /tmp/e2b -bits 4 -seed 1
//
// It may import the standard library, tensor and models/synth.
package main
