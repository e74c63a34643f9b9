// Command mkgguf writes a GGUF file with random Q4_0 weights and the exact
// tensor names, shapes and metadata that llama.cpp's Gemma 3n loader
// expects for gemma-3n-E2B: the benchmark peer of the synthetic MLX
// checkpoint that `mkmodel -kind e2b` writes (same shapes, same size: Q4_0
// is 4.5 bits a weight like MLX's 4-bit group-64 with BF16 scales and
// biases). scripts/bench-llamacpp.sh runs both side by side.
//
//	go run ./scripts/mkgguf -out /tmp/e2b-q4_0.gguf
//
// It may import the standard library, tensor and models/synth (for the
// E2B configuration).
package main
