package gpu

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"sort"
	"sync"
	"unsafe"
	"weak"

	"mlxchat/tensor"
)

// Backend implements tensor.Backend on a Driver. Ops are recorded and run at
// Sync; it is safe for use by one goroutine at a time (buffer reclamation
// may run on others).
//
// Memory rules:
//   - tensors from Alloc live in host-visible GPU buffers (or, when no
//     memory can be had, carry a Handle that makes every op binding them
//     and the next Sync fail). Small ones (up to heapMax bytes) share
//     large heap chunks, so the kernels of a step bind few buffers and a
//     recorded step stays valid while tensors come and go; larger ones get
//     a buffer each. Their Data is that memory's host mapping, current
//     after every Sync. A tensor whose Data points into such memory (a view
//     with or without Handle) binds in place. The memory is reused once no
//     Tensor.Handle refers to it any more, so keep the tensor (or a copy of
//     it with the Handle) while using Data;
//   - on drivers with remote activations (discrete GPUs) the kernels bind a
//     device-only twin of that memory instead: the host bytes of a tensor
//     are copied to the twin before the first op that uses it after Alloc,
//     and every range an op writes is copied back to Data at Sync. Host
//     writes into Data are therefore seen by ops only before the tensor's
//     first use (as when kvcache fills a fresh buffer); later host writes
//     must go to a fresh tensor;
//   - weights (the tensors of a Matrix and RMSNorm weights) from host
//     memory are uploaded on first use and cached by address and length;
//     they must not change afterwards (mmap'd checkpoints do not);
//   - any other host tensor is copied in when an op is recorded and, if the
//     op writes it, copied back at Sync. A small one that ops only read and
//     whose bytes were the same in the previous step (constants such as
//     an identity matrix, per-layer scale vectors) keeps its upload across
//     steps; every use compares the host bytes with the uploaded ones, so a
//     changed tensor is uploaded again, never served stale.
//
// Execution: ops are recorded as launches and handed to the driver at Sync
// (see step.go): as a plan kept per shape of step and run again with new
// parameter blocks where the driver is a Planner, else launch by launch.
type Backend struct {
	drv Driver
	lim Limits

	mu      sync.Mutex
	live    []liveBuf // sorted by base address
	pool    map[int][]*bufState
	pooled  int64       // bytes of pooled dedicated buffers
	freed   []*bufState // released by cleanups, reclaimed after the next flush
	heap    []*chunk    // chunks that small tensors are carved from
	weights map[memKey]weightBuf
	wheap   []*wchunk // weight heap chunks (WeightHeap drivers), newest last
	// validMats remembers matrices that passed quantInfo.
	validMats map[matKey]uint32

	arena     []*arenaChunk
	darena    []*arenaChunk // device-only scratch (RemoteActivations drivers)
	remote    RemoteActivations
	planner   Planner
	staged    map[memKey]stageSlot
	writeback []stageSlot
	stats     Stats
	err       error // first recording error since the last Sync
	closed    bool
	// actBytes is the size of every activation buffer obtained from the
	// driver and not yet released; memLimit, when positive, caps it
	// (SetMemoryLimit).
	actBytes, memLimit int64
	// profile, when not nil, sums staged bytes per tensor dtype and shape
	// (ProfileStaging); profKey is the tensor being staged.
	profile map[string]int64
	profKey string

	// Upload cache of small read-only host tensors whose bytes did not
	// change between steps (see stage): consts maps a tensor's address
	// and length to its copy in carena; seen and seenPrev hold the content
	// hashes of this and the previous step's staged candidates.
	consts         map[memKey]constSlot
	carena         []*arenaChunk
	cbytes, cwaste int64
	seen, seenPrev map[memKey]uint64
	seed           maphash.Seed

	step stepState // the launches recorded since the last Sync and the plans

	// fusion merges decode-sized launches at Sync (fuse.go); chunkOf maps
	// heap chunk buffers (and their twins) to their chunks, for the
	// arrival counters fused launches keep there.
	fusion  Fusion
	chunkOf map[Buf]*chunk
	// noChains turns off chain.go's folding of row-local ops into their
	// neighbours (on by default, while fusion is off); chains is its
	// scratch.
	noChains bool
	chains   chainState
	// noSchedule turns off chain.go's reordering of a step's independent
	// launches to share barriers (schedule; on with chains by default).
	noSchedule bool
	// noEarly turns off the early submits of a step's first segments
	// while the rest is recorded (step.go; on by default).
	noEarly bool

	// timing is what plans recorded now time on the GPU (profile.go);
	// profSteps sums the timed runs per step shape.
	timing    Timing
	profSteps []*stepTimes
}

// constSlot is a host tensor's upload kept across steps and the bytes it
// was made from, compared on every use.
type constSlot struct {
	slot  stageSlot
	bytes []byte
}

// allocFailure is the Handle of a tensor Alloc could not place in GPU
// memory: any op that binds it fails with err, so nothing reads or writes
// it silently on the host.
type allocFailure struct{ err error }

// chunk is one host-visible driver buffer that activations live in: a heap
// chunk holding many small tensors, or the buffer of one large tensor.
type chunk struct {
	buf  Buf    // host-visible buffer, mapped at mem
	mem  []byte // its host mapping
	dev  Buf    // device-only twin the kernels bind (remote drivers; made at first use)
	size int64
	used int64 // bytes handed out so far (heap chunks)
	heap bool
	// counters are this chunk's arrival counters of fused launches
	// (fuse.go), carved on first need.
	counters *bufState
}

// bufState is one tensor allocation: size bytes at off in its chunk. buffer
// is the Handle whose reachability decides when it is recycled.
type bufState struct {
	ch       *chunk
	internal bool // backend-owned (arrival counters): never copied back
	off      int64
	mem      []byte // the allocation's host bytes (ch.mem[off:off+size])
	base     uintptr
	size     int
	// fresh marks host bytes not yet copied to the device twin (remote
	// drivers): set by Alloc, cleared by the upload before first use.
	fresh bool
	// born is the Sync count when Alloc handed it out: one born in the
	// step being recorded (a model's fresh logits) is placed anew every
	// step, which chain's shapeHash allows for.
	born int64
	// n is the byte length Alloc was asked for (the part to upload).
	n int
}

type buffer struct{ st *bufState }

type liveBuf struct {
	base, end uintptr
	st        *bufState
	ref       weak.Pointer[buffer]
}

type memKey struct {
	ptr uintptr
	n   int
}

type weightBuf struct {
	buf  Buf
	off  int64   // byte offset in buf (weights packed into a heap chunk)
	size int64   // bytes the weight occupies (padded to 16)
	wc   *wchunk // the heap chunk holding it, or nil for a buffer of its own
	keep []byte  // pins Go memory so its address is not reused
	data []byte  // the bytes handed to NewWeights, alive as long as buf
}

// wchunk is a GPU buffer that weights are packed into (WeightHeap
// drivers); it is released when its last weight is forgotten.
type wchunk struct {
	buf        Buf
	size, used int64
	live       int
}

type arenaChunk struct {
	buf  Buf
	mem  []byte // nil for device-only chunks
	size int64
	used int64
}

type stageSlot struct {
	chunk *arenaChunk
	off   int64
	host  []byte
}

// Stats counts the backend's work since it was opened.
type Stats struct {
	Syncs          int64 // Sync calls, with or without work
	Ops            int64 // kernel launches recorded by ops (before fusion)
	Dispatches     int64 // kernel launches handed to the driver
	Barriers       int64 // of those, launches that wait at a barrier for earlier ones
	Flushes        int64 // steps submitted (Syncs with work)
	PlanRuns       int64 // plans (a step, or a segment of one) run from a kept plan (parameter blocks rewritten only)
	PlanRecords    int64 // plans the driver recorded anew
	ChainReplays   int64 // segments rewritten by chain.go from a kept rewrite
	EarlySubmits   int64 // segments submitted while their step was recorded (step.go)
	StagedBytes    int64 // host-tensor bytes copied into staging
	WritebackBytes int64 // staged output bytes copied back at Sync
	WeightBytes    int64 // weight bytes uploaded
	ReusedBytes    int64 // host-tensor bytes served from an unchanged earlier upload
	TwinUploads    int64 // activation bytes copied to device twins (remote drivers)
	TwinReadback   int64 // activation bytes copied back from device twins at Sync
	DiscardedBytes int64 // bytes written into discarded tensors and so not copied back (Discard)
}

// ProfileStaging starts (on) or stops counting staged bytes per tensor
// dtype and shape, and returns the counts gathered since the last call
// that started profiling (nil when it was off). It finds which host
// tensors a model uploads every step; counting costs a string per stage.
func (b *Backend) ProfileStaging(on bool) map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.profile
	b.profile = nil
	if on {
		b.profile = map[string]int64{}
	}
	return p
}

// Stats returns the counters.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

const (
	// maxPooled bounds the bytes of idle dedicated activation buffers
	// kept for reuse.
	maxPooled = 512 << 20
	// heapMax is the largest allocation carved from a heap chunk; larger
	// tensors get their own buffer.
	heapMax = 2 << 20
	// heapChunk is the size of a heap chunk.
	heapChunk = 64 << 20
)

// New returns a Backend on drv.
func New(drv Driver) *Backend {
	lim := drv.Limits()
	if lim.OffsetAlign < 16 {
		lim.OffsetAlign = 16
	}
	if lim.MaxRange <= 0 {
		lim.MaxRange = 1 << 31
	}
	var remote RemoteActivations
	if r, ok := drv.(RemoteActivations); ok && r.ActivationsRemote() {
		remote = r
	}
	planner, _ := drv.(Planner)
	return &Backend{
		fusion:    DefaultFusion,
		chunkOf:   map[Buf]*chunk{},
		remote:    remote,
		planner:   planner,
		drv:       drv,
		lim:       lim,
		pool:      map[int][]*bufState{},
		weights:   map[memKey]weightBuf{},
		validMats: map[matKey]uint32{},
		staged:    map[memKey]stageSlot{},
		consts:    map[memKey]constSlot{},
		seen:      map[memKey]uint64{},
		seenPrev:  map[memKey]uint64{},
		seed:      maphash.MakeSeed(),
	}
}

// Name identifies the backend ("vulkan" or "metal").
func (b *Backend) Name() string { return b.drv.Name() }

// Synchronous is false: ops are recorded and run at Sync.
func (b *Backend) Synchronous() bool { return false }

// SetMaxRange lowers the largest byte range bound at once (for tests of
// the chunked paths that huge weights take on small devices).
func (b *Backend) SetMaxRange(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > 0 && n < b.drv.Limits().MaxRange {
		b.lim.MaxRange = n
		b.dropPlans()
	}
}

func dataPtr(d []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(d))) }

// Fusion says how much of a decode step fuse.go merges at Sync.
type Fusion int

const (
	// FuseOff runs every recorded launch as it is.
	FuseOff Fusion = iota
	// FuseSegments merges independent matrix-vector products that share
	// their input into one launch (q, k, v; gate and up) and leaves the
	// small ops as launches of their own.
	FuseSegments
	// FuseAll also runs the small ops as tails of the fused launches.
	FuseAll
)

// DefaultFusion is the mode a new Backend starts in: off, because it
// decoded fastest as measured on an H200 (Vulkan, E2B-shaped 4-bit
// checkpoint, prompt 512: 51.7 tok/s unfused, 44.8 with segments only,
// 28.5 fully fused, whose single-workgroup tails cost ~10 us per op).
const DefaultFusion = FuseOff

// ParseFusion reads a fusion mode as written in MLXCHAT_GPU_FUSION: 0 (off),
// seg (matrix-vector segments only) or 1 (segments and tails).
func ParseFusion(s string) (Fusion, error) {
	switch s {
	case "0":
		return FuseOff, nil
	case "seg":
		return FuseSegments, nil
	case "1":
		return FuseAll, nil
	}
	return 0, fmt.Errorf("fusion %q: want 0, seg or 1", s)
}

// SetFusion turns the merging of decode-sized launches at Sync fully on
// or off (fuse.go; for tests and measurements).
func (b *Backend) SetFusion(on bool) {
	if on {
		b.SetFusionMode(FuseAll)
	} else {
		b.SetFusionMode(FuseOff)
	}
}

// SetFusionMode sets how much of a step fuse.go merges.
func (b *Backend) SetFusionMode(m Fusion) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fusion = m
}

// SetChains turns the folding of row-local ops into the launches beside
// them (chain.go: norms and vector products into the matrix-vector
// products that read them, elementwise ops into the launch whose values
// they change) on or off; it is on by default and applies while fusion
// is off.
func (b *Backend) SetChains(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.noChains = !on
}

// SetSchedule turns on or off the reordering of a step's launches by
// dependency level (chain.go's schedule: independent launches recorded
// apart share a barrier); it is on by default, applies while chains do,
// and changes no result.
func (b *Backend) SetSchedule(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.noSchedule == on {
		// The kept rewrites carry their order: search again.
		clear(b.chains.cache)
		b.chains.cache = b.chains.cache[:0]
	}
	b.noSchedule = !on
}

// SetEarlySubmit turns on or off the submitting of a step's first
// segments while the model records the rest (step.go: the GPU starts on
// the first layers while the host records the later ones, and Sync
// waits once for all of them); it is on by default, applies to drivers
// that keep plans while fusion is off, and changes no result.
func (b *Backend) SetEarlySubmit(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.noEarly = !on
}

// SetMemoryLimit caps the bytes of activation buffers (live and pooled)
// the backend holds from the driver at once; 0 removes the cap. Alloc
// beyond it fails as if the device were out of memory (for tests of that
// path, and to keep a backend within a budget).
func (b *Backend) SetMemoryLimit(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.memLimit = max(n, 0)
}

// Alloc returns a zeroed F32 tensor in a host-visible GPU buffer that the
// kernels bind in place (its Handle is set). When the driver has no memory
// for it, Alloc first releases the idle pooled buffers and tries again (the
// driver itself falls back from device-local to plain host-visible memory).
// If that fails too, the tensor it returns has host Data but a Handle that
// records the failure: every op that binds it returns an error naming the
// shape that could not be allocated, and so does the next Sync, so no op
// ever reads stale host bytes in its place.
func (b *Backend) Alloc(shape ...int) *tensor.Tensor {
	n := tensor.NumElements(shape) * 4
	b.mu.Lock()
	defer b.mu.Unlock()
	if n == 0 {
		return tensor.New(tensor.F32, shape...)
	}
	var st *bufState
	err := fmt.Errorf("%s backend is closed", b.drv.Name())
	if !b.closed {
		st, err = b.newBuf(n)
		if err != nil && b.pooled > 0 {
			b.releasePool()
			st, err = b.newBuf(n)
		}
	}
	if err != nil {
		err = fmt.Errorf("%s backend: allocating F32 tensor %v (%d bytes): %w", b.drv.Name(), shape, n, err)
		b.fail(err)
		t := tensor.New(tensor.F32, shape...)
		t.Handle = &allocFailure{err: err}
		return t
	}
	st.fresh, st.n, st.born = true, n, b.stats.Syncs
	h := &buffer{st: st}
	runtime.AddCleanup(h, b.reclaim, st)
	b.register(st, h)
	return &tensor.Tensor{DType: tensor.F32, Shape: append([]int(nil), shape...), Data: st.mem[:n:n], Handle: h}
}

// sizeClass rounds n up so similar requests share pooled buffers.
func sizeClass(n int) int {
	if n <= 4096 {
		if n <= 1024 {
			return 1024
		}
		return 4096
	}
	c := 4096
	for c < n {
		c <<= 1
		if c >= 1<<24 {
			return (n + (1<<20 - 1)) &^ (1<<20 - 1)
		}
	}
	// Between powers of two, quarter steps waste less.
	for q := c / 2; q < c; q += c / 8 {
		if q >= n {
			return q
		}
	}
	return c
}

func (b *Backend) newBuf(n int) (*bufState, error) {
	size := sizeClass(n)
	if l := b.pool[size]; len(l) > 0 {
		st := l[len(l)-1]
		b.pool[size] = l[:len(l)-1]
		if !st.ch.heap {
			b.pooled -= int64(size)
		}
		clear(st.mem)
		return st, nil
	}
	if size <= heapMax {
		if st, err := b.carve(size); err == nil {
			return st, nil
		}
		// No room for another heap chunk (a memory limit, or the device is
		// nearly full): a buffer of its own may still fit.
	}
	ch, err := b.newChunk(int64(size), false)
	if err != nil {
		return nil, err
	}
	return &bufState{ch: ch, mem: ch.mem, base: dataPtr(ch.mem), size: size}, nil
}

// carve hands out size bytes of a heap chunk, adding a chunk when the last
// one is full.
func (b *Backend) carve(size int) (*bufState, error) {
	align := max(b.lim.OffsetAlign, 256)
	csize := min(heapChunk, b.drv.Limits().MaxRange)
	if int64(size) > csize/4 {
		return nil, fmt.Errorf("%d bytes: too large for a heap chunk of %d", size, csize)
	}
	var ch *chunk
	if k := len(b.heap); k > 0 {
		c := b.heap[k-1]
		if off := (c.used + align - 1) &^ (align - 1); off+int64(size) <= c.size {
			c.used = off
			ch = c
		}
	}
	if ch == nil {
		var err error
		if ch, err = b.newChunk(csize, true); err != nil {
			return nil, err
		}
		if len(b.heap) > 0 {
			// Tensors dropped by their users (a logits tensor per step)
			// return to the pool only once collected: ask for a collection
			// so the chunks in use stay few.
			go runtime.GC()
		}
		b.heap = append(b.heap, ch)
		b.chunkOf[ch.buf] = ch
	}
	off := ch.used
	ch.used += int64(size)
	mem := ch.mem[off : off+int64(size) : off+int64(size)]
	return &bufState{ch: ch, off: off, mem: mem, base: dataPtr(mem), size: size}, nil
}

// newChunk obtains a host-visible buffer of size bytes from the driver.
func (b *Backend) newChunk(size int64, heap bool) (*chunk, error) {
	if b.memLimit > 0 && b.actBytes+size > b.memLimit {
		return nil, fmt.Errorf("%d bytes more would exceed the memory limit of %d (%d in use)", size, b.memLimit, b.actBytes)
	}
	buf, mem, err := b.drv.NewBuffer(int(size))
	if err != nil {
		return nil, err
	}
	b.actBytes += size
	return &chunk{buf: buf, mem: mem, size: size, heap: heap}, nil
}

// releaseChunk hands a chunk (and its twin) back to the driver. Plans may
// bind it, so they are dropped.
func (b *Backend) releaseChunk(ch *chunk) {
	b.drv.Release(ch.buf)
	delete(b.chunkOf, ch.buf)
	if ch.dev != nil {
		b.drv.Release(ch.dev)
		delete(b.chunkOf, ch.dev)
		ch.dev = nil
	}
	b.actBytes -= ch.size
	b.dropPlans()
}

func (b *Backend) register(st *bufState, h *buffer) {
	lb := liveBuf{base: st.base, end: st.base + uintptr(st.size), st: st, ref: weak.Make(h)}
	i := sort.Search(len(b.live), func(i int) bool { return b.live[i].base >= lb.base })
	b.live = append(b.live, liveBuf{})
	copy(b.live[i+1:], b.live[i:])
	b.live[i] = lb
}

// reclaim runs on the cleanup goroutine when no Handle refers to a buffer.
func (b *Backend) reclaim(st *bufState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.freed = append(b.freed, st)
}

// recycle returns released buffers to the pool; called after a flush, when
// no recorded work can still use them.
func (b *Backend) recycle() {
	if len(b.freed) == 0 {
		return
	}
	dead := map[*bufState]bool{}
	for _, st := range b.freed {
		dead[st] = true
		if b.closed {
			continue
		}
		if !st.ch.heap {
			if b.pooled+int64(st.size) > maxPooled {
				b.releaseChunk(st.ch)
				continue
			}
			b.pooled += int64(st.size)
		}
		b.pool[st.size] = append(b.pool[st.size], st)
	}
	b.freed = b.freed[:0]
	live := b.live[:0]
	for _, lb := range b.live {
		if !dead[lb.st] {
			live = append(live, lb)
		}
	}
	b.live = live
}

// releasePool hands every idle pooled dedicated buffer back to the driver
// (heap pieces stay with their chunk).
func (b *Backend) releasePool() {
	for size, l := range b.pool {
		keep := l[:0]
		for _, st := range l {
			if st.ch.heap {
				keep = append(keep, st)
				continue
			}
			b.releaseChunk(st.ch)
		}
		b.pool[size] = keep
	}
	b.pooled = 0
}

// lookup finds the live buffer holding address p.
func (b *Backend) lookup(p uintptr, n int) *bufState {
	i := sort.Search(len(b.live), func(i int) bool { return b.live[i].base > p }) - 1
	if i < 0 {
		return nil
	}
	lb := b.live[i]
	if p+uintptr(n) > lb.end || lb.ref.Value() == nil {
		return nil
	}
	return lb.st
}

// Sync runs the recorded work, waits for it, copies outputs back to their
// host tensors and returns the first error since the last Sync.
func (b *Backend) Sync() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.err
	b.err = nil
	b.stats.Syncs++
	if b.closed {
		return fmt.Errorf("%s backend: Sync after Close", b.drv.Name())
	}
	if rerr := b.runStep(); rerr != nil && err == nil {
		err = rerr
	}
	for _, s := range b.writeback {
		b.stats.WritebackBytes += int64(len(s.host))
		copy(s.host, s.chunk.mem[s.off:s.off+int64(len(s.host))])
	}
	b.writeback = b.writeback[:0]
	clear(b.staged)
	for _, c := range b.arena {
		c.used = 0
	}
	for _, c := range b.darena {
		c.used = 0
	}
	b.seen, b.seenPrev = b.seenPrev, b.seen
	clear(b.seen)
	if b.cwaste > maxConstWaste {
		// Evicted uploads add up: start the cache afresh now that no
		// recorded op reads it.
		clear(b.consts)
		for _, c := range b.carena {
			c.used = 0
		}
		b.cbytes, b.cwaste = 0, 0
	}
	b.recycle()
	return err
}

// Close waits for recorded work and releases every buffer and the device.
// Tensors from Alloc must not be used afterwards.
func (b *Backend) Close() error {
	err := b.Sync()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return err
	}
	b.closed = true
	b.dropPlans()
	released := map[*chunk]bool{}
	release := func(ch *chunk) {
		if !released[ch] {
			released[ch] = true
			b.drv.Release(ch.buf)
			if ch.dev != nil {
				b.drv.Release(ch.dev)
			}
		}
	}
	for _, lb := range b.live {
		release(lb.st.ch)
	}
	b.live = nil
	for _, l := range b.pool {
		for _, st := range l {
			release(st.ch)
		}
	}
	for _, ch := range b.heap {
		release(ch)
	}
	b.pool, b.heap, b.pooled, b.actBytes = map[int][]*bufState{}, nil, 0, 0
	for k := range b.weights {
		b.forgetWeight(k)
	}
	for _, c := range append(append(b.arena, b.darena...), b.carena...) {
		b.drv.Release(c.buf)
	}
	b.arena, b.darena, b.carena = nil, nil, nil
	clear(b.consts)
	if cerr := b.drv.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// DropWeights forgets every uploaded weight, e.g. before a new model is
// mapped at addresses the old one used.
func (b *Backend) DropWeights() error {
	if err := b.Sync(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropPlans()
	for k := range b.weights {
		b.forgetWeight(k)
	}
	return nil
}

// forgetWeight drops a cached weight upload, releasing its buffer (or its
// heap chunk once no weight lives there).
func (b *Backend) forgetWeight(k memKey) {
	w, ok := b.weights[k]
	if !ok {
		return
	}
	delete(b.weights, k)
	if w.wc == nil {
		b.drv.Release(w.buf)
		return
	}
	w.wc.live--
	if w.wc.live == 0 {
		b.drv.Release(w.wc.buf)
		for i, c := range b.wheap {
			if c == w.wc {
				b.wheap = append(b.wheap[:i], b.wheap[i+1:]...)
				break
			}
		}
	}
}

// MapWeights lets the weights inside region, host memory that stays
// mapped and unchanged (a checkpoint file mapped read-only), bind in place
// where the driver can wrap it without copying (Metal's no-copy buffers on
// unified memory); with other drivers it does nothing and weights are
// uploaded on first use. UnmapWeights must be called before region is
// unmapped.
func (b *Backend) MapWeights(region []byte) error {
	mw, ok := b.drv.(MappedWeights)
	if !ok || len(region) == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("%s backend is closed", b.drv.Name())
	}
	if err := mw.MapWeights(region); err != nil {
		return fmt.Errorf("%s backend: mapping %d bytes of weights: %w", b.drv.Name(), len(region), err)
	}
	return nil
}

// UnmapWeights waits for recorded work, then releases what MapWeights made
// over region and forgets the weights uploaded from inside it, so that
// region can be unmapped and its addresses reused.
func (b *Backend) UnmapWeights(region []byte) error {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if len(region) == 0 || closed { // Close released everything
		return nil
	}
	err := b.Sync()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropPlans()
	lo, hi := dataPtr(region), dataPtr(region)+uintptr(len(region))
	for k := range b.weights {
		if k.ptr >= lo && k.ptr < hi {
			b.forgetWeight(k)
		}
	}
	if mw, ok := b.drv.(MappedWeights); ok {
		if uerr := mw.UnmapWeights(region); uerr != nil && err == nil {
			err = fmt.Errorf("%s backend: unmapping weights: %w", b.drv.Name(), uerr)
		}
	}
	return err
}

// fail records a recording-time error for Sync and returns it.
func (b *Backend) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return err
}
