//go:build linux

package mtlfake

import (
	"bytes"
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
}

// Stats counts what the device did.
type Stats struct {
	// AllocatedBytes is the total length of NewBuffer buffers made.
	AllocatedBytes int64
	// CopiedBytes is the total length of NewBufferWithBytes buffers made.
	CopiedBytes int64
	// NoCopyBytes is the total length of no-copy buffers made, and
	// NoCopyBuffers their number.
	NoCopyBytes   int64
	NoCopyBuffers int
	// LiveBytes is the memory Metal holds for buffers not yet released
	// (no-copy buffers count nothing: they wrap the caller's memory).
	LiveBytes int64
	// Dispatches and CommandBuffers count what ran.
	Dispatches     int
	CommandBuffers int
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
	return &Device{opts: opts, vk: vk, page: uintptr(os.Getpagesize()), live: map[*Buffer]bool{}}, nil
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
	dev      *Device
	mem      []byte  // Contents: Vulkan mapping, or the caller's memory
	vk       gpu.Buf // Vulkan buffer (the mirror of a no-copy buffer)
	mirror   []byte  // its mapping, for no-copy buffers
	noCopy   bool
	released bool
	users    int // committed command buffers using it, not completed
}

func (d *Device) newVK(length int) (gpu.Buf, []byte, error) {
	if length <= 0 || length > d.opts.MaxBufferLength {
		return nil, nil, fmt.Errorf("buffer length %d outside 1..maxBufferLength %d", length, d.opts.MaxBufferLength)
	}
	return d.vk.NewBuffer(length)
}

// NewBuffer implements mtl.Device.
func (d *Device) NewBuffer(length int) (mtl.Buffer, error) {
	vb, mem, err := d.newVK(length)
	if err != nil {
		return nil, err
	}
	b := &Buffer{dev: d, mem: mem, vk: vb}
	d.mu.Lock()
	d.stats.AllocatedBytes += int64(length)
	d.stats.LiveBytes += int64(length)
	d.live[b] = true
	d.mu.Unlock()
	return b, nil
}

// NewBufferWithBytes implements mtl.Device.
func (d *Device) NewBufferWithBytes(data []byte) (mtl.Buffer, error) {
	vb, mem, err := d.newVK(len(data))
	if err != nil {
		return nil, err
	}
	copy(mem, data)
	b := &Buffer{dev: d, mem: mem, vk: vb}
	d.mu.Lock()
	d.stats.CopiedBytes += int64(len(data))
	d.stats.LiveBytes += int64(len(data))
	d.live[b] = true
	d.mu.Unlock()
	return b, nil
}

// NewBufferNoCopy implements mtl.Device, checking the pointer and length
// against the page size and that the whole range is mapped.
func (d *Device) NewBufferNoCopy(p unsafe.Pointer, length int) (mtl.Buffer, error) {
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
	b := &Buffer{dev: d, mem: unsafe.Slice((*byte)(p), length), vk: vb, mirror: mirror, noCopy: true}
	d.mu.Lock()
	d.stats.NoCopyBytes += int64(length)
	d.stats.NoCopyBuffers++
	d.live[b] = true
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

// NewCommandBuffer implements mtl.CommandQueue.
func (q *Queue) NewCommandBuffer() (mtl.CommandBuffer, error) {
	d := q.dev
	if q.released {
		d.violate("commandBuffer on a released queue")
	}
	if len(d.pools) == 0 {
		d.violate("commandBuffer outside an autorelease pool (the autoreleased object leaks)")
		return &CommandBuffer{dev: d}, nil
	}
	return &CommandBuffer{dev: d, pool: d.pools[len(d.pools)-1]}, nil
}

// CommandBuffer is a simulated MTLCommandBuffer; its dispatches run on
// Vulkan when it completes (at the first WaitUntilCompleted of it or of a
// later one of the queue).
type CommandBuffer struct {
	dev       *Device
	pool      int
	enc       *Encoder // the open encoder
	ops       []dispatch
	used      []*Buffer
	committed bool
	completed bool
	err       error
}

type binding struct {
	buf *Buffer
	off int
}

type dispatch struct {
	k      kernels.ID
	lib    *Library
	params []byte
	binds  [8]binding
	groups [3]int
}

func (c *CommandBuffer) alive(what string) {
	if !c.dev.inPool(c.pool) {
		c.dev.violate("%s on a command buffer after its autorelease pool drained", what)
	}
}

// NewComputeEncoder implements mtl.CommandBuffer.
func (c *CommandBuffer) NewComputeEncoder() (mtl.ComputeEncoder, error) {
	c.alive("computeCommandEncoder")
	if c.committed {
		c.dev.violate("computeCommandEncoder on a committed command buffer")
	}
	if c.enc != nil {
		c.dev.violate("computeCommandEncoder while another encoder of the command buffer is open")
	}
	c.enc = &Encoder{cb: c}
	return c.enc, nil
}

// Commit implements mtl.CommandBuffer.
func (c *CommandBuffer) Commit() {
	c.alive("commit")
	if c.committed {
		c.dev.violate("command buffer committed twice")
		return
	}
	if c.enc != nil {
		c.dev.violate("command buffer committed with an encoder not ended")
	}
	c.committed = true
	for _, b := range c.used {
		b.users++
	}
	c.dev.pending = append(c.dev.pending, c)
}

// WaitUntilCompleted implements mtl.CommandBuffer: it runs every
// committed command buffer up to this one, in commit order.
func (c *CommandBuffer) WaitUntilCompleted() {
	if !c.committed {
		c.dev.violate("waitUntilCompleted on a command buffer never committed")
		return
	}
	d := c.dev
	for !c.completed {
		next := d.pending[0]
		d.pending = d.pending[1:]
		next.err = next.run()
		next.completed = true
		for _, b := range next.used {
			b.users--
		}
	}
}

// Err implements mtl.CommandBuffer.
func (c *CommandBuffer) Err() error {
	if !c.completed {
		c.dev.violate("command buffer status read before it completed")
	}
	return c.err
}

// run executes the command buffer's dispatches on Vulkan: no-copy
// buffers are mirrored in first (their memory must still be mapped) and
// written bindings of no-copy buffers copied back after.
func (c *CommandBuffer) run() error {
	d := c.dev
	for _, b := range c.used {
		if b.released {
			d.violate("a command buffer ran with a buffer released before it completed")
			return errors.New("buffer released")
		}
		if b.noCopy {
			if err := mapped(uintptr(unsafe.Pointer(unsafe.SliceData(b.mem))), len(b.mem)); err != nil {
				d.violate("a command buffer ran after the memory of a no-copy buffer it uses was unmapped")
				return err
			}
			if !bytes.Equal(b.mirror, b.mem) {
				copy(b.mirror, b.mem)
			}
		}
	}
	lim := d.vk.Limits()
	for _, o := range c.ops {
		var binds [8]gpu.Binding
		for i := 1; i < 8; i++ {
			bd := o.binds[i]
			if bd.buf == nil {
				continue
			}
			size := min(int64(len(bd.buf.mem)-bd.off), lim.MaxRange)
			binds[i] = gpu.Binding{Buf: bd.buf.vk, Offset: int64(bd.off), Size: size}
		}
		if err := d.vk.Dispatch(o.k, o.params, &binds, o.groups); err != nil {
			return fmt.Errorf("running %s on Vulkan: %w", o.k, err)
		}
	}
	if err := d.vk.Flush(); err != nil {
		return err
	}
	for _, o := range c.ops {
		for i := 1; i < 8; i++ {
			if bd := o.binds[i]; bd.buf != nil && bd.buf.noCopy && o.lib.writes[i] {
				copy(bd.buf.mem, bd.buf.mirror)
			}
		}
	}
	d.mu.Lock()
	d.stats.CommandBuffers++
	d.stats.Dispatches += len(c.ops)
	d.mu.Unlock()
	return nil
}

// Encoder is a simulated serial MTLComputeCommandEncoder.
type Encoder struct {
	cb     *CommandBuffer
	ended  bool
	pipe   *Pipeline
	params []byte
	binds  [32]binding
	bytes0 bool // index 0 set by setBytes
}

func (e *Encoder) check(what string) bool {
	e.cb.alive(what)
	if e.ended {
		e.cb.dev.violate("%s on an ended encoder", what)
		return false
	}
	return true
}

// SetPipeline implements mtl.ComputeEncoder.
func (e *Encoder) SetPipeline(p mtl.Pipeline) {
	if e.check("setComputePipelineState") {
		e.pipe = p.(*Pipeline)
		if e.pipe.released {
			e.cb.dev.violate("setComputePipelineState with a released pipeline")
		}
	}
}

// SetBytes implements mtl.ComputeEncoder.
func (e *Encoder) SetBytes(data []byte, index int) {
	if !e.check("setBytes") {
		return
	}
	if len(data) > mtl.SetBytesLimit {
		e.cb.dev.violate("setBytes of %d bytes, more than %d", len(data), mtl.SetBytesLimit)
	}
	if index < 0 || index >= len(e.binds) {
		e.cb.dev.violate("setBytes at index %d outside 0..30", index)
		return
	}
	e.binds[index] = binding{}
	if index == 0 {
		e.params, e.bytes0 = append(e.params[:0], data...), true
	} else {
		e.cb.dev.violate("setBytes at index %d: the fake only passes parameter blocks at index 0", index)
	}
}

// SetBuffer implements mtl.ComputeEncoder.
func (e *Encoder) SetBuffer(b mtl.Buffer, offset, index int) {
	if !e.check("setBuffer") {
		return
	}
	d := e.cb.dev
	fb := b.(*Buffer)
	switch {
	case index < 0 || index >= len(e.binds):
		d.violate("setBuffer at index %d outside 0..30", index)
		return
	case fb.released:
		d.violate("setBuffer with a released buffer at index %d", index)
	case offset < 0 || offset >= len(fb.mem):
		d.violate("setBuffer offset %d outside the %d-byte buffer at index %d", offset, len(fb.mem), index)
	}
	e.binds[index] = binding{buf: fb, off: offset}
	if index == 0 {
		e.bytes0 = false
	}
}

// DispatchThreadgroups implements mtl.ComputeEncoder: it checks the
// pipeline, bindings and sizes against the kernel's MSL and records the
// dispatch.
func (e *Encoder) DispatchThreadgroups(groups, threads mtl.Size) {
	if !e.check("dispatchThreadgroups") {
		return
	}
	d := e.cb.dev
	p := e.pipe
	if p == nil {
		d.violate("dispatchThreadgroups without a pipeline")
		return
	}
	lib := p.lib
	n := threads.Width * threads.Height * threads.Depth
	if n == 0 || n > uint64(p.max) {
		d.violate("%s: threadgroup of %d threads, pipeline allows 1..%d", lib.name, n, p.max)
	}
	if threads != (mtl.Size{Width: uint64(lib.local), Height: 1, Depth: 1}) {
		d.violate("%s: threadgroup %v, the kernel is written for (%d, 1, 1)", lib.name, threads, lib.local)
	}
	if groups.Width == 0 || groups.Height == 0 || groups.Depth == 0 {
		d.violate("%s: empty grid %v", lib.name, groups)
	}
	o := dispatch{k: lib.id, lib: lib, groups: [3]int{int(groups.Width), int(groups.Height), int(groups.Depth)}}
	for _, a := range lib.args {
		if a.index == 0 {
			if !e.bytes0 {
				d.violate("%s: parameter block [[buffer(0)]] not set with setBytes", lib.name)
			}
			continue
		}
		bd := e.binds[a.index]
		if bd.buf == nil {
			d.violate("%s: [[buffer(%d)]] is declared but not bound", lib.name, a.index)
			return
		}
		align := 16
		if a.space == "constant" {
			align = 256
		}
		if bd.off%align != 0 {
			d.violate("%s: [[buffer(%d)]] (%s) bound at offset %d, not a multiple of %d", lib.name, a.index, a.space, bd.off, align)
		}
		if bd.buf.released {
			d.violate("%s: [[buffer(%d)]] is a released buffer", lib.name, a.index)
			return
		}
		o.binds[a.index] = bd
		found := false
		for _, u := range e.cb.used {
			found = found || u == bd.buf
		}
		if !found {
			e.cb.used = append(e.cb.used, bd.buf)
		}
	}
	o.params = append([]byte(nil), e.params...)
	e.cb.ops = append(e.cb.ops, o)
}

// EndEncoding implements mtl.ComputeEncoder.
func (e *Encoder) EndEncoding() {
	if e.check("endEncoding") {
		e.ended = true
		e.cb.enc = nil
	}
}

// Library is a simulated MTLLibrary: one kernel's parsed MSL.
type Library struct {
	dev      *Device
	id       kernels.ID
	name     string
	local    int
	args     []arg
	writes   [8]bool
	tgMem    int
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
	l := &Library{dev: d, id: -1, name: m.name, local: m.local, args: m.args, tgMem: m.tgMem}
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
