// Package vulkan is the Linux GPU host: it loads libvulkan.so.1 at run time
// through purego (no cgo), creates an instance, a device and a compute
// queue, makes pipelines from the committed SPIR-V of metal/kernels, and
// implements gpu.Driver with host-visible buffers and one command buffer per
// Sync. Open returns the resulting tensor.Backend ("vulkan"); on Mesa's
// lavapipe it runs the same kernels CI checks against the CPU reference.
//
// It may import tensor, metal/gpu, metal/kernels and purego.
package vulkan
