// Package kernels holds the GPU compute kernels shared by the Vulkan and
// Metal hosts: GLSL sources (src/), the SPIR-V compiled from them (spv/,
// run by Vulkan) and the Metal Shading Language translated from that same
// SPIR-V by spirv-cross (msl/, run by Metal). Both generated forms are
// committed; gen.sh regenerates them and TestGeneratedUpToDate fails when
// they differ from what the sources produce.
//
// Every kernel takes its parameters in a uniform block at binding 0 (Metal
// buffer 0, set with setBytes) whose first eight words are per-binding
// element offsets, and its tensors at bindings 1..7.
//
// It may import only the standard library.
package kernels

//go:generate bash gen.sh
