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

// ConstantOffsetAlign is the alignment of a buffer offset bound to a
// constant-address-space argument (Apple: 256 bytes on macOS).
const ConstantOffsetAlign = 256

// ResourceOptions is an MTLResourceOptions value for the buffer makers.
type ResourceOptions uint64

// The resource options the backend uses. Every buffer has shared storage
// (MTLResourceStorageModeShared is 0: the CPU and GPU see the same
// memory on Apple silicon).
const (
	// StorageShared is MTLResourceStorageModeShared with the default CPU
	// cache mode and hazard tracking (tracked for buffers).
	StorageShared ResourceOptions = 0
	// HazardUntracked is MTLResourceHazardTrackingModeUntracked: Metal
	// does not order encoders or command buffers by their use of the
	// buffer. For buffers the GPU only reads (weights, parameter blocks
	// the CPU writes while no command buffer uses them).
	HazardUntracked ResourceOptions = 1 << 8
)

// DispatchType is an MTLDispatchType for CommandBuffer.NewComputeEncoder.
type DispatchType uint64

const (
	// DispatchSerial is MTLDispatchTypeSerial: each dispatch sees the
	// writes of the ones before.
	DispatchSerial DispatchType = 0
	// DispatchConcurrent is MTLDispatchTypeConcurrent: dispatches may run
	// at the same time; only MemoryBarrier orders them.
	DispatchConcurrent DispatchType = 1
)

// BarrierScope is an MTLBarrierScope for ComputeEncoder.MemoryBarrier.
type BarrierScope uint64

// BarrierBuffers is MTLBarrierScopeBuffers.
const BarrierBuffers BarrierScope = 1

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
	// NewBuffer is newBufferWithLength:options:: a zeroed buffer whose
	// Contents the CPU and GPU share (opts: StorageShared, optionally
	// with HazardUntracked).
	NewBuffer(length int, opts ResourceOptions) (Buffer, error)
	// NewBufferWithBytes is newBufferWithBytes:length:options:: a new
	// buffer holding a copy of data.
	NewBufferWithBytes(data []byte, opts ResourceOptions) (Buffer, error)
	// NewBufferNoCopy is newBufferWithBytesNoCopy:length:options:deallocator:
	// with no deallocator: a buffer over the caller's memory
	// [p, p+length). p and length must be multiples of the VM page size,
	// and the memory must stay mapped until the buffer is released and no
	// command buffer using it is still running.
	NewBufferNoCopy(p unsafe.Pointer, length int, opts ResourceOptions) (Buffer, error)
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
	// NewCommandBuffer is commandBufferWithUnretainedReferences
	// (autoreleased): the command buffer does not retain the buffers and
	// pipelines it uses, so they must stay alive until it has completed.
	NewCommandBuffer() (CommandBuffer, error)
	// Release releases the queue.
	Release()
}

// CommandBuffer is an MTLCommandBuffer. Buffers of one queue run in the
// order they are committed.
type CommandBuffer interface {
	// NewComputeEncoder is computeCommandEncoderWithDispatchType:
	// (autoreleased).
	NewComputeEncoder(t DispatchType) (ComputeEncoder, error)
	// Retain is retain: the command buffer then outlives the autorelease
	// pool that made it, until Release.
	Retain()
	// Release is release.
	Release()
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
	// SetBufferOffset is setBufferOffset:atIndex:: a new offset into the
	// buffer already bound at index.
	SetBufferOffset(offset int, index int)
	// MemoryBarrier is memoryBarrierWithScope:: in a concurrent encoder,
	// the dispatches after it see every write of the dispatches before.
	MemoryBarrier(scope BarrierScope)
	// DispatchThreadgroups is dispatchThreadgroups:threadsPerThreadgroup:.
	DispatchThreadgroups(groups, threads Size)
	// EndEncoding is endEncoding.
	EndEncoding()
}
