// Package cpu is the CPU implementation of tensor.Backend and the reference
// every GPU kernel is tested against.
//
// It holds portable Go kernels for every op, a small worker pool owned by
// each Backend value (no package-level state), and AVX2/FMA assembly for
// the quantized matrix products on amd64, chosen at run time with
// golang.org/x/sys/cpu and backed by a portable path elsewhere.
//
// It may import only the standard library, mlxchat/tensor and
// golang.org/x/sys/cpu.
package cpu
