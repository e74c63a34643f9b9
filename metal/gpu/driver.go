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
//
// Backend records a whole step (everything between two Syncs) and hands it
// over at Sync: to a Planner, when the driver is one, as a plan it keeps
// and runs again for every later step of the same shape; otherwise launch
// by launch through Dispatch, then Flush. Bindings cover whole buffers
// where the binding limit allows, and each tensor's position inside its
// binding travels in the parameter block (the kernels' ob0..ob7 words),
// so the bindings of a step stay the same while positions, lengths and
// token ids change.
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
	// Flush submits everything recorded and waits for it, and for every
	// plan run (Planner) and copy (RemoteActivations) submitted since the
	// last Flush, to finish.
	Flush() error
	// Close releases the device; buffers must have been released.
	Close() error
}

// Plan is a driver's recorded step (see Planner).
type Plan any

// Launch is one kernel launch of a plan.
type Launch struct {
	// Kernel is the kernel to run.
	Kernel kernels.ID
	// Binds are the storage bindings 1..7 (nil Buf = unused; slot 0 is
	// ignored: the parameter block is bound there).
	Binds [8]Binding
	// Groups is the number of workgroups along x, y and z.
	Groups [3]int
	// Params is the byte offset of this launch's parameter block in the
	// plan's parameter buffer and ParamSize its length in bytes.
	Params, ParamSize int
	// Barrier asks that every write of the launches before this one be
	// complete and visible to it. Without it the launch may run
	// concurrently with the launches back to the previous barrier:
	// Backend sets it whenever this launch touches memory one of those
	// writes, or writes memory one of them reads.
	Barrier bool
}

// Planner is implemented by drivers that record a step once and run it
// again with new parameter blocks: Vulkan keeps a command buffer, Metal
// can keep the encoded launch list. Backend writes every launch's
// parameter block into the plan's parameter buffer (host-visible, mapped)
// before each RunPlan, so changing positions, lengths and ids never makes
// the driver record again.
type Planner interface {
	// ParamAlign is the alignment, in bytes, of each launch's parameter
	// block inside a plan's parameter buffer (a power of two).
	ParamAlign() int
	// NewPlan records launches for repeated runs and returns the plan and
	// the host mapping of its parameter buffer of paramBytes bytes. The
	// launches' buffers must outlive the plan.
	NewPlan(launches []Launch, paramBytes int) (Plan, []byte, error)
	// RunPlan submits the plan to run after all work submitted before it
	// (Dispatch batches, plans, copies). It may return before the plan has
	// finished: Flush waits. The parameter buffer must not change until
	// then.
	RunPlan(p Plan) error
	// ReleasePlan frees a plan that is not running (none has been
	// submitted since the last Flush).
	ReleasePlan(p Plan)
}

// RemoteActivations is implemented by drivers whose NewBuffer memory is far
// from the GPU (host memory across PCIe on a discrete GPU). Backend then
// keeps every activation buffer twice: the host-visible buffer whose
// mapping is the tensor's Data, and a device-only twin the kernels bind.
// It copies host bytes to the twin before the first launch that reads
// them and copies what launches wrote back into the mapping at Sync, so
// Data is current after every Sync while kernels never read across the
// bus. GPU-only temporaries live in device-only scratch.
type RemoteActivations interface {
	// ActivationsRemote reports whether NewBuffer memory is slow for the
	// GPU to read repeatedly.
	ActivationsRemote() bool
	// NewDeviceBuffer returns a buffer only the GPU accesses.
	NewDeviceBuffer(size int) (Buf, error)
	// Copy submits buffer-to-buffer copies that run after all work
	// submitted before (and finish before any submitted after). Flush
	// waits for them.
	Copy(regions []CopyRegion) error
}

// CopyRegion is one buffer-to-buffer copy of Size bytes.
type CopyRegion struct {
	Src, Dst       Buf
	SrcOff, DstOff int64
	Size           int64
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

// WeightHeap is implemented by drivers that can place weights inside a
// larger GPU buffer. Backend then packs the weights it uploads into a few
// large buffers (bound whole, each weight at an offset), so one binding
// serves every weight a fused launch reads.
type WeightHeap interface {
	// NewWeightBuffer returns a GPU buffer of size bytes for weights.
	NewWeightBuffer(size int64) (Buf, error)
	// WriteWeights copies data into dst at byte offset off (before any
	// recorded work reads it; it may wait for the copy).
	WriteWeights(dst Buf, off int64, data []byte) error
}

// Timing is what a LaunchTimer measures in the plans it records.
type Timing int

// The timing modes.
const (
	// TimingOff records plans without timestamps.
	TimingOff Timing = iota
	// TimingSpan times a plan's run as a whole (start and end only), which
	// leaves its launches as free to overlap as without timing.
	TimingSpan
	// TimingLaunches also times every launch: from the end of the launch
	// before (or the plan's start) to its own end, so a launch's time
	// includes the barrier before it. The timestamps make launches that
	// could overlap run one after another.
	TimingLaunches
)

// LaunchTimer is implemented by Planners that can time plans on the GPU
// with timestamps (Vulkan timestamp queries).
type LaunchTimer interface {
	// SetTiming sets what plans recorded from now on measure; it fails
	// when the device cannot time compute work.
	SetTiming(t Timing) error
	// Times returns the GPU nanoseconds of plan p's last run, which has
	// finished (Flush returned), and the GPU clock at its start in
	// nanoseconds (to compare with other plans' starts), and with
	// TimingLaunches fills launches[i] with launch i's nanoseconds. ok is
	// false for a plan recorded with TimingOff.
	Times(p Plan, launches []float64) (span, start float64, ok bool, err error)
}
