// Package mtlfake is a Linux test double of the Metal interface in
// metal/mtl. It keeps to Apple's documented contracts and reports every
// breach as a violation instead of undefined behaviour: no-copy buffers
// need a page-aligned pointer and length over memory that is mapped, and
// that memory must stay mapped until the buffer is released; binding
// offsets are aligned (16 bytes for device buffers, 256 for constant
// ones); a buffer stays alive until every command buffer using it has
// completed; a dispatch's threadgroup fits the pipeline's maximum and the
// kernel's declared size; threadgroup memory stays within 32 KB; every
// buffer index the MSL kernel declares is bound; setBytes passes at most
// 4 KB; command buffers are used only inside the autorelease pool that
// made them unless retained, and every retain is balanced by a release;
// encoders are used only inside their pool and ended before their command
// buffer is committed. Buffers have shared storage; an untracked buffer
// (MTLResourceHazardTrackingModeUntracked) is never bound where a kernel
// writes; a parameter block bound as a buffer at index 0 sits at a
// 256-byte aligned offset, fits the buffer, and is not changed by the CPU
// between commit and completion.
//
// Concurrent encoders (MTLDispatchTypeConcurrent) may run the dispatches
// between two memory barriers in any order or at once. The fake runs
// each command buffer twice from the same memory: every barrier group in
// recording order on the buffers, and reversed on a second replica of
// each buffer the GPU writes, then compares the replicas (Order
// CompareOrders). A difference means a dispatch reads or writes bytes
// another dispatch of its group writes, or writes bytes one reads: a
// missing barrier. The fake then replays the command buffer group by
// group and pair by pair and reports the two dispatches. Order Reverse
// runs each group once, reversed (cheaper: a missing barrier then shows
// as wrong results).
//
// The MSL handed to NewLibrary is parsed for its kernel's declared
// [[buffer(n)]] arguments (and whether each is written) and threadgroup
// arrays; each dispatch then runs the SPIR-V twin of the same kernel
// (metal/kernels) on the Vulkan host (metal/vulkan: lavapipe in CI).
// Shared buffers live in host-visible Vulkan memory, as on unified
// memory; no-copy buffers are mirrored into Vulkan memory before each
// command buffer runs and written bindings copied back after. Stats
// counts the bytes Metal itself would allocate or copy, apart from the
// caller memory no-copy buffers wrap, which is what a Mac's resident
// memory grows by.
//
// It may import metal/mtl, metal/kernels, metal/gpu and metal/vulkan.
package mtlfake
