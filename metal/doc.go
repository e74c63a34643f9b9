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
// Device machine, NVIDIA H200 through the Vulkan host (driver Vulkan
// 1.4.312, subgroup size 32, 4 GiB binding limit), 2026-12-02, binaries of
// commit dea362d:
//
//   - every kernel test of metal/vulkan passed (the same suite as lavapipe's,
//     the tiny Gemma 3n against tensor/cpu included);
//   - decode matvec (qmv4/qmv8), weight bytes read per second, each shape
//     cycling through enough distinct matrices to defeat the 60 MB L2, one
//     command buffer per round:
//     E2B lm head 262144x2048 q4: 311 us/launch, 971 GB/s (0.20 of the
//     4.8 TB/s datasheet, 0.23 of the 4.3 TB/s copy rate measured there);
//     8192x2048 q4 (MLP up/gate): 24 us, 395 GB/s; 2048x8192 q4 (down):
//     39 us, 243 GB/s; 2048x2048 q4: 17 us, 137 GB/s; 8192x2048 q8: 26 us,
//     693 GB/s. Small matrices are bound by launch plus barrier latency.
//   - 1000 tiny ops in one Sync: 8.5 us each; recording alone 7.4 us/op.
//   - full-size synthetic E2B (mkmodel -kind e2b -towers=false, 4-bit):
//     decode 1.33 tok/s, prefill 64 tokens 4.4 s including the weight
//     upload. Decode is far from the roofline (1.36 GB/token); host reads
//     of device-local activations (logits, K/V) through the PCIe BAR and the
//     per-layer Syncs the host KV cache needs are the suspects (see
//     MLXCHAT_VULKAN_ACTIVATIONS and Backend.Stats to investigate).
//
// Not measured anywhere: Metal itself (no Mac here).
package metal
