package gpu

import "mlxchat/metal/kernels"

// Buf is a driver's buffer handle.
type Buf any

// Limits are the binding constraints of a driver.
type Limits struct {
	// OffsetAlign is the alignment of binding offsets in bytes (a power
	// of two, at least 16).
	OffsetAlign int64
	// MaxRange is the largest byte range one binding may cover.
	MaxRange int64
}

// Binding is a byte range of a buffer bound to one kernel slot.
type Binding struct {
	Buf    Buf
	Offset int64
	Size   int64
}

// Driver is what a GPU API host provides to Backend. Methods are called
// with Backend's lock held, from one goroutine at a time.
type Driver interface {
	// Name is the backend name ("vulkan", "metal").
	Name() string
	// Limits returns the binding constraints.
	Limits() Limits
	// NewBuffer returns a zeroed buffer of size bytes that both host and
	// GPU can access, and its host mapping.
	NewBuffer(size int) (Buf, []byte, error)
	// NewWeights returns a GPU buffer holding a copy of (or, where the API
	// allows, aliasing) data, which stays unchanged afterwards.
	NewWeights(data []byte) (Buf, error)
	// Release frees a buffer made by NewBuffer or NewWeights.
	Release(b Buf)
	// Dispatch records one kernel launch with the parameter block params
	// (bound at slot 0) and the storage bindings binds[1..7] (nil Buf =
	// unused), over groups workgroups. Launches run in recording order,
	// each seeing the writes of the ones before.
	Dispatch(k kernels.ID, params []byte, binds *[8]Binding, groups [3]int) error
	// Flush submits everything recorded and waits for it to finish.
	Flush() error
	// Close releases the device; buffers must have been released.
	Close() error
}

// RemoteActivations is implemented by drivers whose NewBuffer memory is far
// from the GPU (host memory across PCIe on a discrete GPU): Backend then
// copies matmul inputs, which many workgroups re-read, into device-local
// scratch first, and keeps GPU-only temporaries there.
type RemoteActivations interface {
	// ActivationsRemote reports whether NewBuffer memory is slow for the
	// GPU to read repeatedly.
	ActivationsRemote() bool
	// NewDeviceBuffer returns a buffer only the GPU accesses.
	NewDeviceBuffer(size int) (Buf, error)
}

// MappedWeights is implemented by drivers that can wrap host memory in GPU
// buffers without copying it (Metal on unified memory). Backend.MapWeights
// hands them whole mapped checkpoint files; weights inside then bind by
// offset into those buffers instead of being uploaded one by one.
type MappedWeights interface {
	// MapWeights wraps region, which stays mapped and unchanged until
	// UnmapWeights.
	MapWeights(region []byte) error
	// WeightRange returns the buffer holding host bytes [p, p+n) of a
	// mapped region, the offset of p in it and the buffer's size; ok is
	// false when no mapped region holds them.
	WeightRange(p uintptr, n int64) (buf Buf, off, size int64, ok bool)
	// UnmapWeights releases every buffer MapWeights made over region;
	// no recorded work may still use them.
	UnmapWeights(region []byte) error
}
