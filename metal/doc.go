// Package metal is the GPU backend: portable compute kernels (GLSL compiled
// to SPIR-V, translated to MSL), the Metal host on darwin/arm64 through
// purego (no cgo), and the Vulkan host that runs the same kernels on Linux.
//
// It may import tensor only (and purego).
package metal
