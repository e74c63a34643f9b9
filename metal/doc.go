// Package metal is the GPU backend: portable compute kernels (GLSL compiled
// to SPIR-V, translated to MSL; package metal/kernels), one implementation
// of tensor.Backend over a small driver interface (metal/gpu), the Metal
// host on darwin/arm64 through purego and the Objective-C runtime (no cgo,
// this package), and the Vulkan host that runs the same SPIR-V on Linux
// (metal/vulkan). Open picks one by name for the --backend flag.
//
// It may import tensor, metal/gpu, metal/kernels, metal/vulkan and purego.
//
// # Verified where
//
// Linux CI (Mesa lavapipe, subgroup size 8): every kernel runs through the
// Vulkan host and is compared with float64 references (metal/vulkan tests);
// the committed SPIR-V and MSL are regenerated and diffed
// (metal/kernels tests). The darwin/arm64 code builds and vets in CI; Apple's
// MSL compiler, the Objective-C bridge at run time and Metal's numerics and
// speed can only be checked on a Mac (see Figures for what ran elsewhere).
//
// # Figures
//
// Measured on the device machine's NVIDIA H200 through the Vulkan host
// (subgroup size 32): see FIGURES below, filled in from the benchmark run.
package metal
