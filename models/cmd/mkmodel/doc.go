// Command mkmodel writes synthetic MLX-format Gemma 3n checkpoints: tiny
// random models for tests, or a full-size one with the exact layout of
// mlx-community/gemma-3n-E2B-it-4bit for loading and speed tests.
//
//	go run ./models/cmd/mkmodel -kind tiny -out /tmp/tiny
//	go run ./models/cmd/mkmodel -kind e2b -out /tmp/e2b -bits 4 -seed 1
//
// It may import the standard library, tensor and models/synth.
package main
