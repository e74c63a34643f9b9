// Package gpu implements tensor.Backend once for every GPU API: it checks
// shapes, picks kernels (package kernels), computes launch sizes and packs
// parameter blocks, manages activation memory (small tensors carved from
// large heap chunks; device twins on discrete GPUs), uploads weights once,
// stages plain host tensors through a per-step arena, and hands the
// resulting launches to a Driver (the Vulkan host in metal/vulkan, the
// Metal host in metal/mtl). Work is recorded and runs at Sync (step.go):
// drivers that implement Planner keep the recorded step and run it again,
// with new parameter blocks only, while later steps have the same shape;
// barriers go only where a launch depends on an earlier one. Before that,
// chain.go folds row-local ops into the launch before them (elementwise
// ops into the matrix-vector product, norm or elementwise op whose values
// they change, a second RMSNorm into the norm whose row it reads), which
// takes an E2B decode step from 1622 launches to 998; the rewrite is kept
// per step shape and replayed. While a step is recorded, the launches
// recorded so far are submitted as segments (each a kept plan of its
// own) at launches chain never folds past, so the GPU runs the first
// layers while the model records the later ones; Sync submits the last
// segment and waits once.
//
// It may import tensor and metal/kernels only (its tests also import
// models and kvcache).
package gpu
