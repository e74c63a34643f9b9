// Package gpu implements tensor.Backend once for every GPU API: it checks
// shapes, picks kernels (package kernels), computes launch sizes and packs
// parameter blocks, manages activation memory (small tensors carved from
// large heap chunks; device twins on discrete GPUs), uploads weights once,
// stages plain host tensors through a per-step arena, and hands the
// resulting launches to a Driver (the Vulkan host in metal/vulkan, the
// Metal host in metal/mtl). Work is recorded and runs at Sync (step.go):
// drivers that implement Planner keep the recorded step and run it again,
// with new parameter blocks only, while later steps have the same shape;
// barriers go only where a launch depends on an earlier one.
//
// It may import tensor and metal/kernels only (its tests also import
// models and kvcache).
package gpu
