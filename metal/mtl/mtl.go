// Package mtl is the narrow boundary between mlxchat and Apple's Metal API:
// a handful of Go interfaces mirroring the Metal objects the GPU backend
// uses (device, buffer, library, function, compute pipeline, command
// queue, command buffer, compute encoder), and Driver, the gpu.Driver
// written in plain Go on top of them. The darwin/arm64 binding of these
// interfaces to the Objective-C runtime lives in package metal and does
// nothing but forward calls; package metal/mtlfake implements them on
// Linux, checks Apple's documented contracts on every call and runs each
// dispatch on the Vulkan host, so Driver runs in `go test` everywhere.
//
// It may import metal/gpu and metal/kernels only.
package mtl

import "unsafe"

// Size is MTLSize: a grid or threadgroup extent (three NSUInteger, 24
// bytes, the same memory layout).
type Size struct{ Width, Height, Depth uint64 }

// GPUFamily is an MTLGPUFamily value for Device.SupportsFamily.
type GPUFamily int

// GPU families the backend checks for.
const (
	// FamilyApple7 is the A14 and M1 GPUs and later: SIMD-group
	// reductions (simd_sum, simd_max, simd_prefix_*) in compute kernels,
	// which the generated MSL uses.
	FamilyApple7 GPUFamily = 1007
	// FamilyMac2 is the Mac feature family that Apple silicon also reports.
	FamilyMac2 GPUFamily = 2002
)

// ThreadgroupMemoryLimit is the threadgroup memory every Apple7-or-later
// GPU offers to one threadgroup (Metal feature set tables: 32 KB).
const ThreadgroupMemoryLimit = 32 << 10

// SetBytesLimit is the most bytes setBytes:length:atIndex: may pass
// (Apple: 4 KB; larger constant data needs a buffer).
const SetBytesLimit = 4 << 10

// Device is an MTLDevice.
type Device interface {
	// Name is the GPU's name ("Apple M2 Pro").
	Name() string
	// SupportsFamily is supportsFamily:.
	SupportsFamily(f GPUFamily) bool
	// MaxBufferLength is maxBufferLength: the largest buffer in bytes.
	MaxBufferLength() int
	// MaxThreadgroupMemoryLength is maxThreadgroupMemoryLength.
	MaxThreadgroupMemoryLength() int
	// NewBuffer is newBufferWithLength:options: with shared storage: a
	// zeroed buffer whose Contents the CPU and GPU share.
	NewBuffer(length int) (Buffer, error)
	// NewBufferWithBytes is newBufferWithBytes:length:options: (shared
	// storage): a new buffer holding a copy of data.
	NewBufferWithBytes(data []byte) (Buffer, error)
	// NewBufferNoCopy is newBufferWithBytesNoCopy:length:options:deallocator:
	// with shared storage and no deallocator: a buffer over the caller's
	// memory [p, p+length). p and length must be multiples of the VM page
	// size, and the memory must stay mapped until the buffer is released
	// and no command buffer using it is still running.
	NewBufferNoCopy(p unsafe.Pointer, length int) (Buffer, error)
	// NewLibrary is newLibraryWithSource:options:error: with fast math
	// off and MSL 2.3; the error carries the compiler's message.
	NewLibrary(source string) (Library, error)
	// NewComputePipeline is newComputePipelineStateWithFunction:error:.
	NewComputePipeline(fn Function) (Pipeline, error)
	// NewCommandQueue is newCommandQueue.
	NewCommandQueue() (CommandQueue, error)
	// Pool runs f inside an autorelease pool on one locked OS thread.
	// Command buffers and encoders are autoreleased: they are valid only
	// inside the Pool call that made them.
	Pool(f func())
	// Release releases the device.
	Release()
}

// Buffer is an MTLBuffer.
type Buffer interface {
	// Contents is the CPU address of the buffer's first byte.
	Contents() unsafe.Pointer
	// Length is the buffer's length in bytes.
	Length() int
	// Release releases the buffer.
	Release()
}

// Library is an MTLLibrary.
type Library interface {
	// NewFunction is newFunctionWithName:.
	NewFunction(name string) (Function, error)
	// Release releases the library.
	Release()
}

// Function is an MTLFunction.
type Function interface {
	// Release releases the function.
	Release()
}

// Pipeline is an MTLComputePipelineState.
type Pipeline interface {
	// MaxTotalThreadsPerThreadgroup is the largest threadgroup this
	// pipeline can run (it may be below the device's 1024).
	MaxTotalThreadsPerThreadgroup() int
	// StaticThreadgroupMemoryLength is the threadgroup memory the
	// kernel declares.
	StaticThreadgroupMemoryLength() int
	// Release releases the pipeline.
	Release()
}

// CommandQueue is an MTLCommandQueue.
type CommandQueue interface {
	// NewCommandBuffer is commandBuffer (autoreleased).
	NewCommandBuffer() (CommandBuffer, error)
	// Release releases the queue.
	Release()
}

// CommandBuffer is an MTLCommandBuffer. Buffers of one queue run in the
// order they are committed.
type CommandBuffer interface {
	// NewComputeEncoder is computeCommandEncoder: a serial encoder, whose
	// dispatches each see the writes of the ones before (autoreleased).
	NewComputeEncoder() (ComputeEncoder, error)
	// Commit is commit.
	Commit()
	// WaitUntilCompleted is waitUntilCompleted.
	WaitUntilCompleted()
	// Err is the command buffer's error once it has completed: nil when
	// its status is completed, else the error's localized description.
	Err() error
}

// ComputeEncoder is an MTLComputeCommandEncoder.
type ComputeEncoder interface {
	// SetPipeline is setComputePipelineState:.
	SetPipeline(p Pipeline)
	// SetBytes is setBytes:length:atIndex: (at most SetBytesLimit bytes,
	// copied at the call).
	SetBytes(data []byte, index int)
	// SetBuffer is setBuffer:offset:atIndex:.
	SetBuffer(b Buffer, offset int, index int)
	// DispatchThreadgroups is dispatchThreadgroups:threadsPerThreadgroup:.
	DispatchThreadgroups(groups, threads Size)
	// EndEncoding is endEncoding.
	EndEncoding()
}
