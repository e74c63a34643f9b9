package mtl

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"mlxchat/metal/gpu"
	"mlxchat/metal/kernels"
)

// commitEvery is the number of dispatches encoded into one command buffer
// on the launch-by-launch path (Dispatch) before it is committed, so the
// GPU starts while the rest is encoded.
const commitEvery = 64

// offsetAlign aligns every binding offset: 256 bytes suits any address
// space (Apple asks 256 for constant buffers on macOS, at most 16 for
// device buffers).
const offsetAlign = ConstantOffsetAlign

// Driver implements gpu.Driver and gpu.Planner on a Device.
//
// A step Backend records runs as a plan (gpu.Planner): the launch list,
// with the pipelines, bindings and barriers resolved once, kept for every
// later step of the same shape. RunPlan encodes it into one command
// buffer with one concurrent compute encoder (MTLDispatchTypeConcurrent):
// dispatches may overlap, and a memory barrier (scope buffers) precedes
// exactly the launches Backend marks, those that touch memory an earlier
// launch since the previous barrier wrote, or write memory one read. The
// parameter blocks live in the plan's own buffer, bound at index 0 with a
// 256-byte aligned offset per launch, so Backend only rewrites its bytes
// between runs. The command buffer is committed and retained past the
// autorelease pool that made it; Flush waits for it and releases it, so
// a token costs one command buffer and one wait.
//
// Weight buffers (mapped checkpoint windows, the weight heap Backend packs
// computed weights into, copied weights) and parameter buffers are
// untracked (MTLResourceHazardTrackingModeUntracked): the GPU
// only reads them, so Metal need not order work by them. Activations stay
// tracked, which orders one token's command buffer after the previous
// one's writes. Command buffers do not retain what they use
// (commandBufferWithUnretainedReferences): Backend keeps every buffer and
// plan alive until Flush has waited.
//
// Dispatch, the launch-by-launch path, records in Go memory and encodes
// at Flush (or before the next plan run) into command buffers of
// commitEvery dispatches, each with one serial encoder. Every pipeline is
// compiled by Open, so a kernel the device's compiler rejects fails there,
// before any model is loaded.
type Driver struct {
	dev   Device
	queue CommandQueue
	pipes [kernels.Count]Pipeline
	// psize is each kernel's parameter struct size in bytes (its MSL
	// struct Params): what Metal reads at the block's offset.
	psize  [kernels.Count]int
	page   uintptr
	window int64 // length of the no-copy buffers over mapped weights
	ops    []op
	params []byte // parameter blocks of the recorded ops, back to back
	// running are the committed command buffers not yet waited for, in
	// commit order (retained), and runErr the first error met while
	// committing them.
	running []CommandBuffer
	runErr  error
	plans   map[*plan]bool
	// inPool are the bodies of the autorelease pools a step opens, made
	// once so that a step allocates nothing; poolPlan and poolErr are
	// their argument and result.
	inPool   struct{ encodeOps, encodePlan, wait func() }
	poolPlan *plan
	poolErr  error
	// regions are the mapped weight files (MapWeights), sorted by base.
	regions []*region
	closed  bool
}

var (
	_ gpu.Driver        = (*Driver)(nil)
	_ gpu.Planner       = (*Driver)(nil)
	_ gpu.MappedWeights = (*Driver)(nil)
	_ gpu.WeightHeap    = (*Driver)(nil)
)

// buffer is the gpu.Buf of this driver. mapped marks the no-copy windows
// over mapped weights, which only UnmapWeights releases.
type buffer struct {
	b      Buffer
	mapped bool
	mem    []byte // Contents of a weight heap buffer (NewWeightBuffer)
}

// region is one mapped weight file and the no-copy windows over it.
type region struct {
	data      []byte
	base, end uintptr // page-aligned
	windows   []window
}

type window struct {
	start, end uintptr
	buf        *buffer
}

// op is one dispatch: on the Dispatch path its parameter block is
// d.params[p0:p1]; in a plan it is at byte p0 of the plan's buffer.
type op struct {
	k       kernels.ID
	p0, p1  int
	bufs    [8]Buffer
	offs    [8]int
	groups  Size
	barrier bool
}

// plan is a recorded step (gpu.Plan).
type plan struct {
	ops      []op
	params   Buffer
	inflight bool // run since the last Flush
}

// Open checks that dev can run the kernels, compiles every kernel's MSL
// into a compute pipeline and creates the command queue. It takes dev:
// Close, or a failed Open, releases it. The errors name what is missing
// or which kernel failed and why.
func Open(dev Device) (*Driver, error) {
	d := &Driver{dev: dev, page: uintptr(os.Getpagesize()), plans: map[*plan]bool{}}
	d.inPool.encodeOps = func() { d.poolErr = d.encodeOps() }
	d.inPool.encodePlan = func() { d.poolErr = d.encodePlan(d.poolPlan) }
	d.inPool.wait = func() { d.poolErr = d.waitAll() }
	if err := d.open(); err != nil {
		d.Close()
		return nil, fmt.Errorf("metal: %s: %w", dev.Name(), err)
	}
	return d, nil
}

func (d *Driver) open() error {
	dev := d.dev
	if !dev.SupportsFamily(FamilyApple7) {
		return errors.New("not an Apple7-family GPU (M1, A14 or later): the kernels use SIMD-group reductions")
	}
	d.window = int64(dev.MaxBufferLength()) &^ int64(d.page-1)
	if d.window < 1<<24 {
		return fmt.Errorf("maxBufferLength %d is below 16 MiB", dev.MaxBufferLength())
	}
	tgMem := min(dev.MaxThreadgroupMemoryLength(), ThreadgroupMemoryLimit)
	var err error
	dev.Pool(func() {
		for k := kernels.ID(0); k < kernels.Count && err == nil; k++ {
			d.pipes[k], err = d.compile(k, tgMem)
		}
	})
	if err != nil {
		return err
	}
	d.queue, err = dev.NewCommandQueue()
	return err
}

// compile builds kernel k's pipeline from its MSL and checks it against
// the kernel's threadgroup size and the threadgroup memory limit.
func (d *Driver) compile(k kernels.ID, tgMem int) (Pipeline, error) {
	src, err := kernels.MSL(k)
	if err != nil {
		return nil, err
	}
	if d.psize[k], err = paramStructSize(src); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", k, err)
	}
	if d.psize[k] > SetBytesLimit {
		return nil, fmt.Errorf("kernel %s: a %d-byte parameter struct exceeds setBytes' %d", k, d.psize[k], SetBytesLimit)
	}
	lib, err := d.dev.NewLibrary(src)
	if err != nil {
		return nil, fmt.Errorf("compiling kernel %s: %w", k, err)
	}
	defer lib.Release()
	fn, err := lib.NewFunction(k.String())
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", k, err)
	}
	defer fn.Release()
	p, err := d.dev.NewComputePipeline(fn)
	if err != nil {
		return nil, fmt.Errorf("pipeline for kernel %s: %w", k, err)
	}
	if n := p.MaxTotalThreadsPerThreadgroup(); n < k.Info().Local {
		p.Release()
		return nil, fmt.Errorf("kernel %s needs %d threads per threadgroup, its pipeline allows %d", k, k.Info().Local, n)
	}
	if n := p.StaticThreadgroupMemoryLength(); n > tgMem {
		p.Release()
		return nil, fmt.Errorf("kernel %s declares %d bytes of threadgroup memory, the device allows %d", k, n, tgMem)
	}
	return p, nil
}

// paramStructSize returns the size of the Params struct in a kernel's MSL
// (what its [[buffer(0)]] argument reads), laid out as Metal lays it out:
// 4-byte scalars, 16-byte aligned 4-vectors, arrays of either.
func paramStructSize(src string) (int, error) {
	const open = "\nstruct Params\n{\n"
	i := strings.Index(src, open)
	if i < 0 {
		return 0, errors.New("its MSL has no struct Params")
	}
	body, _, ok := strings.Cut(src[i+len(open):], "\n};")
	if !ok {
		return 0, errors.New("its MSL's struct Params does not end")
	}
	size, align := 0, 4
	for _, line := range strings.Split(body, "\n") {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), ";"))
		if len(f) != 2 {
			return 0, fmt.Errorf("parameter struct member %q not understood", line)
		}
		var n, a int
		switch f[0] {
		case "uint", "int", "float":
			n, a = 4, 4
		case "uint4", "int4", "float4":
			n, a = 16, 16
		default:
			return 0, fmt.Errorf("parameter struct member of type %s not understood", f[0])
		}
		if name, dim, ok := strings.Cut(f[1], "["); ok && name != "" {
			c, err := strconv.Atoi(strings.TrimSuffix(dim, "]"))
			if err != nil || c <= 0 {
				return 0, fmt.Errorf("parameter struct member %q not understood", line)
			}
			n *= c
		}
		size = (size+a-1)&^(a-1) + n
		align = max(align, a)
	}
	return (size + align - 1) &^ (align - 1), nil
}

// Name returns "metal".
func (d *Driver) Name() string { return "metal" }

// DeviceName is the GPU's name.
func (d *Driver) DeviceName() string { return d.dev.Name() }

// Limits: offsets aligned to 256 bytes; one binding covers at most half a
// no-copy window, so any weight range fits inside one of the overlapping
// windows MapWeights makes.
func (d *Driver) Limits() gpu.Limits {
	return gpu.Limits{OffsetAlign: offsetAlign, MaxRange: d.window / 2}
}

// NewBuffer returns a zeroed shared-storage buffer and its mapping
// (unified memory: the mapping is what the GPU reads).
func (d *Driver) NewBuffer(size int) (gpu.Buf, []byte, error) {
	b, err := d.dev.NewBuffer(size, StorageShared)
	if err != nil {
		return nil, nil, fmt.Errorf("metal: buffer of %d bytes: %w", size, err)
	}
	mem := unsafe.Slice((*byte)(b.Contents()), size)
	clear(mem)
	return &buffer{b: b}, mem, nil
}

// NewWeights copies weights that are not inside a mapped region (small
// parameters the model computed) into a shared, untracked buffer.
func (d *Driver) NewWeights(data []byte) (gpu.Buf, error) {
	b, err := d.dev.NewBufferWithBytes(data, StorageShared|HazardUntracked)
	if err != nil {
		return nil, fmt.Errorf("metal: %d bytes of weights: %w", len(data), err)
	}
	return &buffer{b: b}, nil
}

// NewWeightBuffer returns a shared, untracked buffer that Backend packs
// uploaded weights into, so a fused launch binds them through one slot.
func (d *Driver) NewWeightBuffer(size int64) (gpu.Buf, error) {
	b, err := d.dev.NewBuffer(int(size), StorageShared|HazardUntracked)
	if err != nil {
		return nil, fmt.Errorf("metal: weight buffer of %d bytes: %w", size, err)
	}
	return &buffer{b: b, mem: unsafe.Slice((*byte)(b.Contents()), size)}, nil
}

// WriteWeights copies data into a weight buffer at byte offset off
// (unified memory: through its contents; Backend writes only while no
// command buffer runs).
func (d *Driver) WriteWeights(dst gpu.Buf, off int64, data []byte) error {
	mb, ok := dst.(*buffer)
	if !ok || mb.b == nil || mb.mem == nil {
		return errors.New("metal: weights into a buffer NewWeightBuffer did not make")
	}
	if off < 0 || off+int64(len(data)) > int64(len(mb.mem)) {
		return fmt.Errorf("metal: %d bytes of weights at %d overflow a %d-byte buffer", len(data), off, len(mb.mem))
	}
	copy(mb.mem[off:], data)
	return nil
}

// Release frees a buffer from NewBuffer, NewWeights or NewWeightBuffer.
func (d *Driver) Release(b gpu.Buf) {
	if mb, ok := b.(*buffer); ok && mb.b != nil && !mb.mapped {
		mb.b.Release()
		mb.b, mb.mem = nil, nil
	}
}

// MapWeights wraps region, page-aligned mapped memory, in untracked
// no-copy buffers: one when it fits in maxBufferLength, else windows of that
// length overlapping by half, so every range of up to Limits().MaxRange
// bytes lies inside one window.
func (d *Driver) MapWeights(data []byte) error {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	if base%d.page != 0 {
		return fmt.Errorf("metal: weight region at %#x is not page-aligned (%d-byte pages)", base, d.page)
	}
	r := &region{data: data, base: base, end: (base + uintptr(len(data)) + d.page - 1) &^ (d.page - 1)}
	for start := r.base; ; start += uintptr(d.window / 2) {
		end := min(start+uintptr(d.window), r.end)
		b, err := d.dev.NewBufferNoCopy(unsafe.Add(unsafe.Pointer(unsafe.SliceData(data)), start-base), int(end-start), StorageShared|HazardUntracked)
		if err != nil {
			d.releaseRegion(r)
			return fmt.Errorf("metal: no-copy buffer over %d bytes of weights: %w", end-start, err)
		}
		r.windows = append(r.windows, window{start: start, end: end, buf: &buffer{b: b, mapped: true}})
		if end == r.end {
			break
		}
	}
	i := sort.Search(len(d.regions), func(i int) bool { return d.regions[i].base > base })
	d.regions = append(d.regions, nil)
	copy(d.regions[i+1:], d.regions[i:])
	d.regions[i] = r
	return nil
}

// WeightRange finds the window holding host bytes [p, p+n).
func (d *Driver) WeightRange(p uintptr, n int64) (gpu.Buf, int64, int64, bool) {
	i := sort.Search(len(d.regions), func(i int) bool { return d.regions[i].base > p }) - 1
	if i < 0 {
		return nil, 0, 0, false
	}
	r := d.regions[i]
	if p+uintptr(n) > r.end {
		return nil, 0, 0, false
	}
	for _, w := range r.windows {
		if p >= w.start && p+uintptr(n) <= w.end {
			return w.buf, int64(p - w.start), int64(w.end - w.start), true
		}
	}
	return nil, 0, 0, false
}

// UnmapWeights releases the windows over region.
func (d *Driver) UnmapWeights(data []byte) error {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	for i, r := range d.regions {
		if r.base == base {
			if d.uses(r, d.ops) {
				return errors.New("metal: unmapping weights that recorded work still uses")
			}
			for p := range d.plans {
				if d.uses(r, p.ops) {
					return errors.New("metal: unmapping weights that a recorded plan binds")
				}
			}
			d.releaseRegion(r)
			d.regions = append(d.regions[:i], d.regions[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("metal: no mapped weight region at %#x", base)
}

// uses reports whether ops bind a window of r.
func (d *Driver) uses(r *region, ops []op) bool {
	for _, o := range ops {
		for _, b := range o.bufs {
			for _, w := range r.windows {
				if b != nil && b == w.buf.b {
					return true
				}
			}
		}
	}
	return false
}

func (d *Driver) releaseRegion(r *region) {
	for _, w := range r.windows {
		w.buf.b.Release()
		w.buf.b = nil
	}
	r.windows = nil
}

// Dispatch records one launch; nothing reaches Metal before the next
// Flush or RunPlan.
func (d *Driver) Dispatch(k kernels.ID, params []byte, binds *[8]gpu.Binding, groups [3]int) error {
	if len(params) > SetBytesLimit {
		return fmt.Errorf("metal: kernel %s: %d parameter bytes exceed setBytes' %d", k, len(params), SetBytesLimit)
	}
	o, err := d.op(k, binds, groups)
	if err != nil {
		return err
	}
	o.p0 = len(d.params)
	d.params = append(d.params, params...)
	for len(d.params) < o.p0+d.psize[k] { // Metal reads the whole struct
		d.params = append(d.params, 0)
	}
	o.p1 = len(d.params)
	d.ops = append(d.ops, o)
	return nil
}

// op resolves a launch's pipeline and bindings.
func (d *Driver) op(k kernels.ID, binds *[8]gpu.Binding, groups [3]int) (op, error) {
	if k < 0 || k >= kernels.Count || d.pipes[k] == nil {
		return op{}, fmt.Errorf("metal: kernel %s has no pipeline", k)
	}
	o := op{k: k, groups: Size{uint64(groups[0]), uint64(groups[1]), uint64(groups[2])}}
	for i := 1; i < 8; i++ {
		if binds[i].Buf == nil {
			continue
		}
		mb, ok := binds[i].Buf.(*buffer)
		if !ok || mb.b == nil {
			return op{}, fmt.Errorf("metal: binding %d of kernel %s is not a live Metal buffer", i, k)
		}
		if binds[i].Offset%offsetAlign != 0 {
			return op{}, fmt.Errorf("metal: binding %d of kernel %s at offset %d, not a multiple of %d", i, k, binds[i].Offset, offsetAlign)
		}
		o.bufs[i], o.offs[i] = mb.b, int(binds[i].Offset)
	}
	return o, nil
}

// ParamAlign is the constant-buffer offset alignment: each launch's
// parameter block is bound at its offset into the plan's buffer.
func (d *Driver) ParamAlign() int { return ConstantOffsetAlign }

// NewPlan resolves launches once (pipelines, bindings, barriers) and
// makes the plan's parameter buffer: shared, untracked, paramBytes long
// or more, so that every block's offset leaves room for its kernel's
// whole parameter struct (Metal reads all of it; a fused kernel's block
// is shorter when its program is).
func (d *Driver) NewPlan(launches []gpu.Launch, paramBytes int) (gpu.Plan, []byte, error) {
	if len(launches) == 0 {
		return nil, nil, errors.New("metal: a plan needs at least one launch")
	}
	p := &plan{ops: make([]op, len(launches))}
	size := paramBytes
	for i := range launches {
		l := &launches[i]
		o, err := d.op(l.Kernel, &l.Binds, l.Groups)
		if err != nil {
			return nil, nil, err
		}
		if l.Params%ConstantOffsetAlign != 0 || l.Params < 0 || l.ParamSize <= 0 || l.Params+l.ParamSize > paramBytes {
			return nil, nil, fmt.Errorf("metal: launch %d (%s): parameter block [%d, +%d) is not a %d-byte aligned range of the %d-byte buffer", i, l.Kernel, l.Params, l.ParamSize, ConstantOffsetAlign, paramBytes)
		}
		if l.ParamSize > d.psize[l.Kernel] {
			return nil, nil, fmt.Errorf("metal: launch %d (%s): %d parameter bytes, the kernel's struct has %d", i, l.Kernel, l.ParamSize, d.psize[l.Kernel])
		}
		o.p0, o.p1, o.barrier = l.Params, l.Params+l.ParamSize, l.Barrier
		p.ops[i] = o
		size = max(size, l.Params+d.psize[l.Kernel])
	}
	size = (size + 15) &^ 15
	b, err := d.dev.NewBuffer(size, StorageShared|HazardUntracked)
	if err != nil {
		return nil, nil, fmt.Errorf("metal: parameter buffer of %d bytes: %w", size, err)
	}
	p.params = b
	mem := unsafe.Slice((*byte)(b.Contents()), size)
	clear(mem)
	d.plans[p] = true
	return p, mem[:paramBytes:paramBytes], nil
}

// RunPlan commits the launches recorded by Dispatch so far, then encodes
// the plan into one command buffer with a concurrent encoder and commits
// it without waiting.
func (d *Driver) RunPlan(pp gpu.Plan) error {
	p, ok := pp.(*plan)
	if !ok || !d.plans[p] {
		return errors.New("metal: RunPlan of a plan this driver did not make or already released")
	}
	d.commitOps()
	d.poolPlan = p
	d.dev.Pool(d.inPool.encodePlan)
	d.poolPlan, p.inflight = nil, true
	if err := d.poolErr; err != nil {
		d.poolErr = nil
		return fmt.Errorf("metal: %w", err)
	}
	return nil
}

// encodePlan encodes and commits p. Bindings persist across the
// dispatches of an encoder, so only those that change are set again.
func (d *Driver) encodePlan(p *plan) error {
	cb, err := d.queue.NewCommandBuffer()
	if err != nil {
		return err
	}
	cb.Retain()
	enc, err := cb.NewComputeEncoder(DispatchConcurrent)
	if err != nil {
		cb.Commit()
		d.running = append(d.running, cb)
		return err
	}
	var last Pipeline
	var bufs [8]Buffer
	var offs [8]int
	for i := range p.ops {
		o := &p.ops[i]
		if o.barrier && i > 0 {
			enc.MemoryBarrier(BarrierBuffers)
		}
		if pipe := d.pipes[o.k]; pipe != last {
			enc.SetPipeline(pipe)
			last = pipe
		}
		if i == 0 {
			enc.SetBuffer(p.params, o.p0, 0)
		} else {
			enc.SetBufferOffset(o.p0, 0)
		}
		for j := 1; j < 8; j++ {
			switch b := o.bufs[j]; {
			case b == nil || b == bufs[j] && o.offs[j] == offs[j]:
			case b == bufs[j]:
				enc.SetBufferOffset(o.offs[j], j)
				offs[j] = o.offs[j]
			default:
				enc.SetBuffer(b, o.offs[j], j)
				bufs[j], offs[j] = b, o.offs[j]
			}
		}
		enc.DispatchThreadgroups(o.groups, Size{uint64(o.k.Info().Local), 1, 1})
	}
	enc.EndEncoding()
	cb.Commit()
	d.running = append(d.running, cb)
	return nil
}

// ReleasePlan frees a plan's parameter buffer. A plan run since the last
// Flush is waited for first (Backend never releases one that runs).
func (d *Driver) ReleasePlan(pp gpu.Plan) {
	p, ok := pp.(*plan)
	if !ok || !d.plans[p] {
		return
	}
	if p.inflight {
		if err := d.wait(); err != nil && d.runErr == nil {
			d.runErr = err
		}
	}
	delete(d.plans, p)
	p.params.Release()
	p.params, p.ops = nil, nil
}

// Flush commits what Dispatch recorded, waits for every command buffer
// committed since the last Flush (plan runs included) and returns the
// first error.
func (d *Driver) Flush() error {
	d.commitOps()
	err := d.wait()
	if d.runErr != nil {
		err, d.runErr = d.runErr, nil
	}
	return err
}

// commitOps encodes the dispatches recorded by Dispatch into serial
// encoders, committing a command buffer every commitEvery of them.
func (d *Driver) commitOps() {
	if len(d.ops) == 0 {
		return
	}
	d.dev.Pool(d.inPool.encodeOps)
	if d.poolErr != nil && d.runErr == nil {
		d.runErr = fmt.Errorf("metal: %w", d.poolErr)
	}
	d.poolErr = nil
	d.ops, d.params = d.ops[:0], d.params[:0]
}

func (d *Driver) encodeOps() error {
	var cb CommandBuffer
	var enc ComputeEncoder
	var last Pipeline
	var err error
	for i := range d.ops {
		o := &d.ops[i]
		if enc == nil {
			if cb, err = d.queue.NewCommandBuffer(); err != nil {
				return err
			}
			cb.Retain()
			d.running = append(d.running, cb)
			if enc, err = cb.NewComputeEncoder(DispatchSerial); err != nil {
				cb.Commit()
				return err
			}
			last = nil
		}
		if p := d.pipes[o.k]; p != last {
			enc.SetPipeline(p)
			last = p
		}
		enc.SetBytes(d.params[o.p0:o.p1], 0)
		for j := 1; j < 8; j++ {
			if o.bufs[j] != nil {
				enc.SetBuffer(o.bufs[j], o.offs[j], j)
			}
		}
		enc.DispatchThreadgroups(o.groups, Size{uint64(o.k.Info().Local), 1, 1})
		if (i+1)%commitEvery == 0 || i == len(d.ops)-1 {
			enc.EndEncoding()
			cb.Commit()
			enc = nil
		}
	}
	return nil
}

// wait waits for the running command buffers in commit order, releases
// them and returns the first one's error.
func (d *Driver) wait() error {
	if len(d.running) == 0 {
		return nil
	}
	d.dev.Pool(d.inPool.wait)
	err := d.poolErr
	d.poolErr = nil
	clear(d.running)
	d.running = d.running[:0]
	for p := range d.plans {
		p.inflight = false
	}
	return err
}

func (d *Driver) waitAll() error {
	var err error
	for _, c := range d.running {
		c.WaitUntilCompleted()
		if cerr := c.Err(); cerr != nil && err == nil {
			err = fmt.Errorf("metal: command buffer failed: %w", cerr)
		}
		c.Release()
	}
	return err
}

// Close waits for the work still running, then releases the plans, the
// mapped-weight windows, the pipelines, the queue and the device.
func (d *Driver) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	d.commitOps()
	err := d.wait()
	if d.runErr != nil {
		err, d.runErr = d.runErr, nil
	}
	for p := range d.plans {
		d.ReleasePlan(p)
	}
	for _, r := range d.regions {
		d.releaseRegion(r)
	}
	d.regions = nil
	for k, p := range d.pipes {
		if p != nil {
			p.Release()
			d.pipes[k] = nil
		}
	}
	if d.queue != nil {
		d.queue.Release()
		d.queue = nil
	}
	d.dev.Release()
	return err
}
