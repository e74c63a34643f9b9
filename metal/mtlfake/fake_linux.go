//go:build linux

package mtlfake

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"mlxchat/metal/gpu"
	"mlxchat/metal/kernels"
	"mlxchat/metal/mtl"
	"mlxchat/metal/vulkan"
)

// Options shape the simulated device; zero fields take Apple-silicon
// defaults.
type Options struct {
	// Name is the device name (default "Fake Apple M1").
	Name string
	// Families lists the GPU families it supports (default Apple7 and
	// Mac2).
	Families []mtl.GPUFamily
	// MaxBufferLength is maxBufferLength (default 1 GiB).
	MaxBufferLength int
	// MaxThreads is every pipeline's maxTotalThreadsPerThreadgroup
	// (default 1024).
	MaxThreads int
	// ThreadgroupMemory is maxThreadgroupMemoryLength (default 32 KB).
	ThreadgroupMemory int
	// FailCompile names a kernel whose library fails to compile.
	FailCompile string
	// Order is how the dispatches of a concurrent encoder between two
	// memory barriers run (default CompareOrders).
	Order Order
}

// Order says how the fake runs the dispatches a concurrent encoder may
// overlap: those between two memory barriers (a barrier group).
type Order int

const (
	// CompareOrders runs every command buffer twice from the same
	// memory: each barrier group in recording order on the buffers, and
	// in reverse order on a second replica of every buffer the GPU
	// writes; then it compares the replicas. Both are executions Metal
	// may choose when the barriers suffice; a difference means a dispatch
	// reads or writes what another of its group wrote (or writes what one
	// read). The fake then replays the command buffer group by group to
	// find the group and the two dispatches, and reports the missing
	// barrier between them as a violation. The recording-order results
	// are kept.
	CompareOrders Order = iota
	// Reverse runs each group once, in reverse order: cheaper, and a
	// missing barrier still shows, as results that differ from a
	// reference, but not as a violation.
	Reverse
)

// String names the order.
func (o Order) String() string {
	switch o {
	case CompareOrders:
		return "CompareOrders"
	case Reverse:
		return "Reverse"
	}
	return fmt.Sprintf("Order(%d)", int(o))
}

// Stats counts what the device did.
type Stats struct {
	// AllocatedBytes is the total length of NewBuffer buffers made.
	AllocatedBytes int64
	// CopiedBytes is the total length of NewBufferWithBytes buffers made,
	// CopiedBuffers their number.
	CopiedBytes   int64
	CopiedBuffers int
	// NoCopyBytes is the total length of no-copy buffers made, and
	// NoCopyBuffers their number.
	NoCopyBytes   int64
	NoCopyBuffers int
	// LiveBytes is the memory Metal holds for buffers not yet released
	// (no-copy buffers count nothing: they wrap the caller's memory).
	LiveBytes int64
	// Dispatches and CommandBuffers count what ran, Waits the
	// waitUntilCompleted calls.
	Dispatches     int
	CommandBuffers int
	Waits          int
	// ConcurrentEncoders counts the concurrent compute encoders made,
	// Barriers the memory barriers in them.
	ConcurrentEncoders int
	Barriers           int
	// Groups counts the barrier groups of two or more dispatches that
	// ran; Compared the command buffers run in both orders and compared
	// (CompareOrders).
	Groups, Compared int
	// UntrackedNoCopy and UntrackedCopied count the no-copy and
	// NewBufferWithBytes buffers made untracked, UntrackedShared the
	// NewBuffer ones.
	UntrackedNoCopy, UntrackedCopied, UntrackedShared int
	// SharedBuffers counts the NewBuffer buffers made.
	SharedBuffers int
}

// Device is a simulated MTLDevice running kernels on a Vulkan driver.
type Device struct {
	opts Options
	vk   *vulkan.Driver
	page uintptr

	mu         sync.Mutex
	violations []string
	stats      Stats
	live       map[*Buffer]bool
	pools      []int // the autorelease pools open now, innermost last
	nextPool   int
	pending    []*CommandBuffer // committed, not completed, in order
	retained   map[*CommandBuffer]bool
	nextBuf    int
	snaps      [5][][]byte // reused memory snapshots (see snapshot)
	released   bool
}

// New opens the Vulkan driver and returns a device with opts.
func New(opts Options) (*Device, error) {
	if opts.Name == "" {
		opts.Name = "Fake Apple M1"
	}
	if opts.Families == nil {
		opts.Families = []mtl.GPUFamily{mtl.FamilyApple7, mtl.FamilyMac2}
	}
	if opts.MaxBufferLength == 0 {
		opts.MaxBufferLength = 1 << 30
	}
	if opts.MaxThreads == 0 {
		opts.MaxThreads = 1024
	}
	if opts.ThreadgroupMemory == 0 {
		opts.ThreadgroupMemory = mtl.ThreadgroupMemoryLimit
	}
	vk, err := vulkan.NewDriver()
	if err != nil {
		return nil, fmt.Errorf("mtlfake: %w", err)
	}
	return &Device{opts: opts, vk: vk, page: uintptr(os.Getpagesize()), live: map[*Buffer]bool{}, retained: map[*CommandBuffer]bool{}}, nil
}

// violate records a contract breach.
func (d *Device) violate(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.violations = append(d.violations, fmt.Sprintf(format, args...))
}

// Violations returns the contract breaches seen so far.
func (d *Device) Violations() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.violations...)
}

// Stats returns the counters.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Name implements mtl.Device.
func (d *Device) Name() string { return d.opts.Name }

// SupportsFamily implements mtl.Device.
func (d *Device) SupportsFamily(f mtl.GPUFamily) bool {
	for _, g := range d.opts.Families {
		if g == f {
			return true
		}
	}
	return false
}

// MaxBufferLength implements mtl.Device.
func (d *Device) MaxBufferLength() int { return d.opts.MaxBufferLength }

// MaxThreadgroupMemoryLength implements mtl.Device.
func (d *Device) MaxThreadgroupMemoryLength() int { return d.opts.ThreadgroupMemory }

// Buffer is a simulated MTLBuffer.
type Buffer struct {
	dev       *Device
	id        int
	mem       []byte  // Contents: Vulkan mapping, or the caller's memory
	vk        gpu.Buf // Vulkan buffer (the mirror of a no-copy buffer)
	mirror    []byte  // its mapping, for no-copy buffers
	noCopy    bool
	copied    bool // made by NewBufferWithBytes
	untracked bool
	released  bool
	// twin is the second replica of a buffer the GPU writes, on which
	// CompareOrders runs each barrier group in reverse (twinMem its
	// mapping).
	twin    gpu.Buf
	twinMem []byte
	users   int // committed command buffers using it, not completed
}

// String names the buffer in violations.
func (b *Buffer) String() string {
	kind := "shared"
	switch {
	case b.noCopy:
		kind = "no-copy"
	case b.copied:
		kind = "copied"
	}
	if b.untracked {
		kind += " untracked"
	}
	return fmt.Sprintf("buffer #%d (%s, %d bytes)", b.id, kind, len(b.mem))
}

// gpuMem is the memory the kernels run on: the mapping of the Vulkan
// buffer (for no-copy buffers, the mirror).
func (b *Buffer) gpuMem() []byte {
	if b.noCopy {
		return b.mirror
	}
	return b.mem
}

func (d *Device) newVK(length int) (gpu.Buf, []byte, error) {
	if length <= 0 || length > d.opts.MaxBufferLength {
		return nil, nil, fmt.Errorf("buffer length %d outside 1..maxBufferLength %d", length, d.opts.MaxBufferLength)
	}
	return d.vk.NewBuffer(length)
}

// options checks a buffer's resource options: shared storage (the only
// mode whose Contents the CPU may use), default CPU cache mode, hazard
// tracking default or untracked. It returns whether the buffer is
// untracked.
func (d *Device) options(what string, o mtl.ResourceOptions) bool {
	const cacheMask, storageMask, hazardMask = 0xf, 0xf << 4, 0x3 << 8
	if o&^(cacheMask|storageMask|hazardMask) != 0 || o&cacheMask != 0 {
		d.violate("%s: resource options %#x beyond shared storage and a hazard tracking mode", what, uint64(o))
	}
	if o&storageMask != 0 {
		d.violate("%s: storage mode %d, not shared: Contents would not be CPU-visible", what, uint64(o&storageMask)>>4)
	}
	return o&hazardMask == mtl.HazardUntracked
}

// add registers a new buffer.
func (d *Device) add(b *Buffer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextBuf++
	b.id = d.nextBuf
	d.live[b] = true
}

// NewBuffer implements mtl.Device.
func (d *Device) NewBuffer(length int, opts mtl.ResourceOptions) (mtl.Buffer, error) {
	untracked := d.options("newBufferWithLength", opts)
	vb, mem, err := d.newVK(length)
	if err != nil {
		return nil, err
	}
	b := &Buffer{dev: d, mem: mem, vk: vb, untracked: untracked}
	d.add(b)
	d.mu.Lock()
	d.stats.AllocatedBytes += int64(length)
	d.stats.LiveBytes += int64(length)
	d.stats.SharedBuffers++
	if untracked {
		d.stats.UntrackedShared++
	}
	d.mu.Unlock()
	return b, nil
}

// NewBufferWithBytes implements mtl.Device.
func (d *Device) NewBufferWithBytes(data []byte, opts mtl.ResourceOptions) (mtl.Buffer, error) {
	untracked := d.options("newBufferWithBytes", opts)
	vb, mem, err := d.newVK(len(data))
	if err != nil {
		return nil, err
	}
	copy(mem, data)
	b := &Buffer{dev: d, mem: mem, vk: vb, copied: true, untracked: untracked}
	d.add(b)
	d.mu.Lock()
	d.stats.CopiedBytes += int64(len(data))
	d.stats.CopiedBuffers++
	d.stats.LiveBytes += int64(len(data))
	if untracked {
		d.stats.UntrackedCopied++
	}
	d.mu.Unlock()
	return b, nil
}

// NewBufferNoCopy implements mtl.Device, checking the pointer and length
// against the page size and that the whole range is mapped.
func (d *Device) NewBufferNoCopy(p unsafe.Pointer, length int, opts mtl.ResourceOptions) (mtl.Buffer, error) {
	untracked := d.options("newBufferWithBytesNoCopy", opts)
	addr := uintptr(p)
	if addr%d.page != 0 || uintptr(length)%d.page != 0 {
		d.violate("newBufferWithBytesNoCopy: pointer %#x and length %d must be multiples of the %d-byte page", addr, length, d.page)
		return nil, errors.New("no-copy pointer or length not page-aligned")
	}
	if err := mapped(addr, length); err != nil {
		d.violate("newBufferWithBytesNoCopy: [%#x, +%d) is not mapped memory: %v", addr, length, err)
		return nil, err
	}
	vb, mirror, err := d.newVK(length)
	if err != nil {
		return nil, err
	}
	b := &Buffer{dev: d, mem: unsafe.Slice((*byte)(p), length), vk: vb, mirror: mirror, noCopy: true, untracked: untracked}
	d.add(b)
	d.mu.Lock()
	d.stats.NoCopyBytes += int64(length)
	d.stats.NoCopyBuffers++
	if untracked {
		d.stats.UntrackedNoCopy++
	}
	d.mu.Unlock()
	return b, nil
}

// mapped reports whether every page of [addr, addr+n) is mapped
// (mincore fails with ENOMEM otherwise).
func mapped(addr uintptr, n int) error {
	page := uintptr(os.Getpagesize())
	start := addr &^ (page - 1)
	pages := (addr + uintptr(n) - start + page - 1) / page
	vec := make([]byte, pages)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, start, pages*page, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return e
	}
	return nil
}

// Contents implements mtl.Buffer.
func (b *Buffer) Contents() unsafe.Pointer {
	if b.released {
		b.dev.violate("contents of a released buffer")
	}
	return unsafe.Pointer(unsafe.SliceData(b.mem))
}

// Length implements mtl.Buffer.
func (b *Buffer) Length() int { return len(b.mem) }

// Release implements mtl.Buffer: a buffer still used by a command buffer
// that has not completed, or a no-copy buffer whose memory is already
// unmapped, is a violation.
func (b *Buffer) Release() {
	d := b.dev
	if b.released {
		d.violate("buffer released twice")
		return
	}
	if b.users > 0 {
		d.violate("buffer of %d bytes released while %d command buffers using it have not completed", len(b.mem), b.users)
	}
	if b.noCopy {
		if err := mapped(uintptr(unsafe.Pointer(unsafe.SliceData(b.mem))), len(b.mem)); err != nil {
			d.violate("no-copy buffer of %d bytes released after its memory was unmapped", len(b.mem))
		}
	}
	b.released = true
	d.vk.Release(b.vk)
	if b.twin != nil {
		d.vk.Release(b.twin)
		b.twin, b.twinMem = nil, nil
	}
	d.mu.Lock()
	delete(d.live, b)
	if !b.noCopy {
		d.stats.LiveBytes -= int64(len(b.mem))
	}
	d.mu.Unlock()
}

// Pool implements mtl.Device: objects autoreleased inside f are valid
// until f returns.
func (d *Device) Pool(f func()) {
	d.nextPool++
	d.pools = append(d.pools, d.nextPool)
	defer func() { d.pools = d.pools[:len(d.pools)-1] }()
	f()
}

// inPool reports whether autorelease pool id is still open.
func (d *Device) inPool(id int) bool {
	for _, p := range d.pools {
		if p == id {
			return true
		}
	}
	return false
}

// Release implements mtl.Device; buffers still alive are reported.
func (d *Device) Release() {
	if d.released {
		d.violate("device released twice")
		return
	}
	d.released = true
	if n := len(d.live); n > 0 {
		d.violate("device released with %d buffers still alive", n)
	}
	if n := len(d.retained); n > 0 {
		d.violate("device released with %d command buffers retained and never released", n)
	}
	d.vk.Close()
}

// NewCommandQueue implements mtl.Device.
func (d *Device) NewCommandQueue() (mtl.CommandQueue, error) { return &Queue{dev: d}, nil }

// Queue is a simulated MTLCommandQueue.
type Queue struct {
	dev      *Device
	released bool
}

// Release implements mtl.CommandQueue.
func (q *Queue) Release() { q.released = true }

// Library is a simulated MTLLibrary: one kernel's parsed MSL.
type Library struct {
	dev      *Device
	id       kernels.ID
	name     string
	local    int
	args     []arg
	writes   [8]bool
	tgMem    int
	params   int // bytes of the parameter struct
	released bool
}

// Release implements mtl.Library.
func (l *Library) Release() { l.released = true }

// NewLibrary implements mtl.Device: it parses the kernel's signature and
// threadgroup arrays from src and finds the SPIR-V twin by kernel name.
func (d *Device) NewLibrary(src string) (mtl.Library, error) {
	m, err := parseMSL(src)
	if err != nil {
		return nil, err
	}
	if m.name == d.opts.FailCompile {
		return nil, fmt.Errorf("program_source: error: simulated compile failure in %s", m.name)
	}
	l := &Library{dev: d, id: -1, name: m.name, local: m.local, args: m.args, tgMem: m.tgMem, params: m.params}
	for id := kernels.ID(0); id < kernels.Count; id++ {
		if id.String() == m.name {
			l.id = id
		}
	}
	if l.id < 0 {
		return nil, fmt.Errorf("kernel %s has no SPIR-V twin in metal/kernels", m.name)
	}
	for _, a := range m.args {
		if a.index >= 8 {
			return nil, fmt.Errorf("kernel %s binds [[buffer(%d)]]; the Vulkan twin has 8 slots", m.name, a.index)
		}
		l.writes[a.index] = a.space == "device"
	}
	return l, nil
}

// NewFunction implements mtl.Library.
func (l *Library) NewFunction(name string) (mtl.Function, error) {
	if l.released {
		l.dev.violate("newFunctionWithName on a released library")
	}
	if name != l.name {
		return nil, fmt.Errorf("no function %q in the library (it has %s)", name, l.name)
	}
	return &Function{lib: l}, nil
}

// Function is a simulated MTLFunction.
type Function struct{ lib *Library }

// Release implements mtl.Function.
func (f *Function) Release() {}

// Pipeline is a simulated MTLComputePipelineState.
type Pipeline struct {
	lib      *Library
	max      int
	released bool
}

// NewComputePipeline implements mtl.Device; like Metal it fails when the
// kernel's threadgroup memory exceeds the device's.
func (d *Device) NewComputePipeline(fn mtl.Function) (mtl.Pipeline, error) {
	l := fn.(*Function).lib
	if l.tgMem > d.opts.ThreadgroupMemory {
		return nil, fmt.Errorf("kernel %s uses %d bytes of threadgroup memory, more than the %d available", l.name, l.tgMem, d.opts.ThreadgroupMemory)
	}
	return &Pipeline{lib: l, max: d.opts.MaxThreads}, nil
}

// MaxTotalThreadsPerThreadgroup implements mtl.Pipeline.
func (p *Pipeline) MaxTotalThreadsPerThreadgroup() int { return p.max }

// StaticThreadgroupMemoryLength implements mtl.Pipeline.
func (p *Pipeline) StaticThreadgroupMemoryLength() int { return p.lib.tgMem }

// Release implements mtl.Pipeline.
func (p *Pipeline) Release() {
	if p.released {
		p.lib.dev.violate("pipeline released twice")
	}
	p.released = true
}

// String lists the violations, one a line.
func (d *Device) String() string { return strings.Join(d.Violations(), "\n") }
