package mtl

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"unsafe"

	"mlxchat/metal/gpu"
	"mlxchat/metal/kernels"
)

// commitEvery is the number of dispatches encoded into one command buffer
// before it is committed, so the GPU starts while the rest is encoded.
const commitEvery = 64

// offsetAlign aligns every binding offset: 256 bytes suits any address
// space (Apple asks 256 for constant buffers on macOS, at most 16 for
// device buffers).
const offsetAlign = 256

// Driver implements gpu.Driver on a Device. Dispatches are recorded in Go
// memory and encoded at Flush into command buffers of commitEvery
// dispatches, each with one serial compute encoder. Every pipeline is
// compiled by Open, so a kernel the device's compiler rejects fails there,
// before any model is loaded.
type Driver struct {
	dev    Device
	queue  CommandQueue
	pipes  [kernels.Count]Pipeline
	page   uintptr
	window int64 // length of the no-copy buffers over mapped weights
	ops    []op
	params []byte // parameter blocks of the recorded ops, back to back
	cbs    []CommandBuffer
	// regions are the mapped weight files (MapWeights), sorted by base.
	regions []*region
	closed  bool
}

// buffer is the gpu.Buf of this driver. mapped marks the no-copy windows
// over mapped weights, which only UnmapWeights releases.
type buffer struct {
	b      Buffer
	mapped bool
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

// op is one recorded dispatch.
type op struct {
	k      kernels.ID
	p0, p1 int
	bufs   [8]Buffer
	offs   [8]int
	groups Size
}

// Open checks that dev can run the kernels, compiles every kernel's MSL
// into a compute pipeline and creates the command queue. It takes dev:
// Close, or a failed Open, releases it. The errors name what is missing
// or which kernel failed and why.
func Open(dev Device) (*Driver, error) {
	d := &Driver{dev: dev, page: uintptr(os.Getpagesize())}
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
	b, err := d.dev.NewBuffer(size)
	if err != nil {
		return nil, nil, fmt.Errorf("metal: buffer of %d bytes: %w", size, err)
	}
	mem := unsafe.Slice((*byte)(b.Contents()), size)
	clear(mem)
	return &buffer{b: b}, mem, nil
}

// NewWeights copies weights that are not inside a mapped region (small
// parameters the model computed) into a shared buffer.
func (d *Driver) NewWeights(data []byte) (gpu.Buf, error) {
	b, err := d.dev.NewBufferWithBytes(data)
	if err != nil {
		return nil, fmt.Errorf("metal: %d bytes of weights: %w", len(data), err)
	}
	return &buffer{b: b}, nil
}

// Release frees a buffer from NewBuffer or NewWeights.
func (d *Driver) Release(b gpu.Buf) {
	if mb, ok := b.(*buffer); ok && mb.b != nil && !mb.mapped {
		mb.b.Release()
		mb.b = nil
	}
}

// MapWeights wraps region, page-aligned mapped memory, in no-copy
// buffers: one when it fits in maxBufferLength, else windows of that
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
		b, err := d.dev.NewBufferNoCopy(unsafe.Add(unsafe.Pointer(unsafe.SliceData(data)), start-base), int(end-start))
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
			for _, o := range d.ops {
				for _, b := range o.bufs {
					for _, w := range r.windows {
						if b == w.buf.b {
							return errors.New("metal: unmapping weights that recorded work still uses")
						}
					}
				}
			}
			d.releaseRegion(r)
			d.regions = append(d.regions[:i], d.regions[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("metal: no mapped weight region at %#x", base)
}

func (d *Driver) releaseRegion(r *region) {
	for _, w := range r.windows {
		w.buf.b.Release()
		w.buf.b = nil
	}
	r.windows = nil
}

// Dispatch records one launch; nothing reaches Metal before Flush.
func (d *Driver) Dispatch(k kernels.ID, params []byte, binds *[8]gpu.Binding, groups [3]int) error {
	if d.pipes[k] == nil {
		return fmt.Errorf("metal: kernel %s has no pipeline", k)
	}
	if len(params) > SetBytesLimit {
		return fmt.Errorf("metal: kernel %s: %d parameter bytes exceed setBytes' %d", k, len(params), SetBytesLimit)
	}
	o := op{k: k, p0: len(d.params), groups: Size{uint64(groups[0]), uint64(groups[1]), uint64(groups[2])}}
	d.params = append(d.params, params...)
	o.p1 = len(d.params)
	for i := 1; i < 8; i++ {
		if binds[i].Buf == nil {
			continue
		}
		mb, ok := binds[i].Buf.(*buffer)
		if !ok || mb.b == nil {
			return fmt.Errorf("metal: binding %d of kernel %s is not a live Metal buffer", i, k)
		}
		o.bufs[i], o.offs[i] = mb.b, int(binds[i].Offset)
	}
	d.ops = append(d.ops, o)
	return nil
}

// Flush encodes the recorded dispatches, commits a command buffer every
// commitEvery of them, waits for all and returns the first command
// buffer error.
func (d *Driver) Flush() error {
	if len(d.ops) == 0 {
		return nil
	}
	var err error
	d.dev.Pool(func() { err = d.encode() })
	d.ops, d.params = d.ops[:0], d.params[:0]
	clear(d.cbs)
	d.cbs = d.cbs[:0]
	return err
}

func (d *Driver) encode() error {
	var cb CommandBuffer
	var enc ComputeEncoder
	var last Pipeline
	var err error
	for i := range d.ops {
		o := &d.ops[i]
		if enc == nil {
			if cb, err = d.queue.NewCommandBuffer(); err != nil {
				break
			}
			if enc, err = cb.NewComputeEncoder(); err != nil {
				cb.Commit()
				d.cbs = append(d.cbs, cb)
				break
			}
			d.cbs = append(d.cbs, cb)
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
	if err != nil {
		err = fmt.Errorf("metal: %w", err)
	}
	for _, c := range d.cbs {
		c.WaitUntilCompleted()
		if cerr := c.Err(); cerr != nil && err == nil {
			err = fmt.Errorf("metal: command buffer failed: %w", cerr)
		}
	}
	return err
}

// Close releases the mapped-weight windows, the pipelines, the queue and
// the device.
func (d *Driver) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
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
	return nil
}
