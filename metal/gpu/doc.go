// Package gpu implements tensor.Backend once for every GPU API: it checks
// shapes, picks kernels (package kernels), computes launch sizes and packs
// parameter blocks, manages host-visible activation buffers, uploads weights
// once, stages plain host tensors through a per-step arena, and hands the
// resulting dispatches to a Driver (the Vulkan host in metal/vulkan, the
// Metal host in metal/mtl). Work is recorded and runs at Sync.
//
// It may import tensor and metal/kernels only.
package gpu
