package cpu

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"mlxchat/tensor"
)

// Weights in huge pages. A decode step streams every matrix of the model
// from memory, and in the checkpoint's file mapping (4 KiB pages) each new
// page costs a TLB miss and a page walk. Where the kernel backs anonymous
// memory with transparent huge pages, the backend therefore copies each
// matrix it multiplies out of a file mapping (a region offered by
// MapWeights) into 2 MiB pages and multiplies the copy once it is ready;
// the copied file pages are dropped from the process (they stay in the
// page cache), so nothing is held twice. The copies are made by one
// background goroutine, in the order the matrices are first used, because
// getting huge pages can stall in the kernel's memory compaction (1 GiB
// took 0.1 s on a quiet machine and 6 s after other processes had filled
// its memory): until a copy is ready the original is used, nothing waits
// for it, and the copier runs at the lowest priority. Tables that are only gathered (Gemma 3n's per-layer
// embeddings) are never multiplied and stay in the mapping, as do the
// matrices of files under minResidentRegion bytes (tiny models fit the
// caches). doc.go has the figures.

// minResidentRegion is the smallest mapped file whose matrices are copied.
const minResidentRegion = 64 << 20

// residentBlock is the size of the huge-page blocks copies are carved from
// (a larger matrix gets a block of its own size).
const residentBlock = 64 << 20

// residentQueue is how many first-used matrices may wait for their copy;
// past it a matrix keeps its original.
const residentQueue = 4096

// residentSet is a backend's copies of mapped matrices. The copier
// goroutine holds it, not the Backend, so a Backend nobody closed can
// still be collected.
type residentSet struct {
	enabled bool // hugePagesUsable when the backend was made
	minSize int  // minResidentRegion, lowered by tests
	// mu guards regions and is held for each copy from start to
	// publication, so UnmapWeights never frees or unmaps under a copy.
	mu      sync.Mutex
	regions []*residentRegion
	count   atomic.Int32 // len(regions), read without the lock
	entries sync.Map     // weak.Pointer[tensor.Matrix] -> *residentEntry
	queue   chan *tensor.Matrix
	start   sync.Once
	qmu     sync.Mutex // closed, and sending on queue
	closed  bool
	stop    chan struct{}  // closed by close: the copier drains queue and ends
	pending sync.WaitGroup // queued copies not yet made
}

// residentRegion is one mapped file and the huge pages holding copies of
// its matrices.
type residentRegion struct {
	lo, hi uintptr  // the mapping
	blocks [][]byte // from mapHuge
	free   []byte   // the unused end of the last block
}

// residentEntry is one matrix's copy, nil until it is ready (and for good
// when the matrix cannot be copied).
type residentEntry struct {
	copy   atomic.Pointer[tensor.Matrix]
	region *residentRegion // set with copy, under residentSet.mu
}

func newResidentSet() *residentSet {
	return &residentSet{
		enabled: hugePagesUsable(), minSize: minResidentRegion,
		queue: make(chan *tensor.Matrix, residentQueue), stop: make(chan struct{}),
	}
}

func dataPtr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// MapWeights offers region, a read-only file mapping that stays unchanged
// until UnmapWeights (a checkpoint's weights file): where the kernel gives
// transparent huge pages, the matrices inside it that the backend
// multiplies are copied into them in the background.
func (b *Backend) MapWeights(region []byte) error {
	r := b.resident
	if !r.enabled || len(region) < r.minSize {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.regions = append(r.regions, &residentRegion{lo: dataPtr(region), hi: dataPtr(region) + uintptr(len(region))})
	r.count.Store(int32(len(r.regions)))
	return nil
}

// UnmapWeights waits for a copy in progress, then forgets the copies of
// matrices inside region and frees them; region is unmapped afterwards.
// No op may be running on those matrices.
func (b *Backend) UnmapWeights(region []byte) error {
	r := b.resident
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone *residentRegion
	for i, reg := range r.regions {
		if reg.lo == dataPtr(region) && reg.hi == dataPtr(region)+uintptr(len(region)) {
			gone = reg
			r.regions = append(r.regions[:i], r.regions[i+1:]...)
			r.count.Store(int32(len(r.regions)))
			break
		}
	}
	if gone == nil {
		return nil
	}
	r.entries.Range(func(k, v any) bool {
		if v.(*residentEntry).region == gone {
			r.entries.Delete(k)
		}
		return true
	})
	var first error
	for _, blk := range gone.blocks {
		if err := unmapHuge(blk); err != nil && first == nil {
			first = fmt.Errorf("cpu: freeing copied weights: %w", err)
		}
	}
	gone.blocks, gone.free = nil, nil
	return first
}

// WaitWeights blocks until every matrix used so far whose copy is queued
// has been copied, so that a benchmark measures the steady state.
func (b *Backend) WaitWeights() { b.resident.pending.Wait() }

// placed returns the matrix to multiply for w: its huge-page copy when one
// is ready, else w, queueing the copy on w's first use when w lies in a
// region given to MapWeights.
func (b *Backend) placed(w *tensor.Matrix) *tensor.Matrix {
	r := b.resident
	if r.count.Load() == 0 {
		return w
	}
	key := weak.Make(w)
	if v, ok := r.entries.Load(key); ok {
		if m := v.(*residentEntry).copy.Load(); m != nil {
			return m
		}
		return w
	}
	if _, loaded := r.entries.LoadOrStore(key, &residentEntry{}); loaded {
		return w
	}
	runtime.AddCleanup(w, func(k weak.Pointer[tensor.Matrix]) { r.entries.Delete(k) }, key)
	r.enqueue(w)
	return w
}

// enqueue queues w for the copier (starting it), unless the set is closed
// or too many copies wait already: then w keeps its original.
func (r *residentSet) enqueue(w *tensor.Matrix) {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if r.closed {
		return
	}
	r.start.Do(func() { go r.copier() })
	r.pending.Add(1)
	select {
	case r.queue <- w:
	default:
		r.pending.Done()
	}
}

// copied returns w's copy if one is ready, else w, without queueing one
// (Gather reads single rows; it gains nothing from a copy of its own).
func (b *Backend) copied(w *tensor.Matrix) *tensor.Matrix {
	if b.resident.count.Load() == 0 {
		return w
	}
	if v, ok := b.resident.entries.Load(weak.Make(w)); ok {
		if m := v.(*residentEntry).copy.Load(); m != nil {
			return m
		}
	}
	return w
}

// close stops the copier; copies already made stay until UnmapWeights.
func (r *residentSet) close() {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.stop)
	}
}

// copier makes the queued copies until the set is closed, on a thread of
// its own at the lowest priority: copying, and the kernel's compaction for
// huge pages, then take what the forward passes leave of the cores. The
// thread is never unlocked, so it ends with the goroutine and its priority
// does not pass to other goroutines.
func (r *residentSet) copier() {
	runtime.LockOSThread()
	lowerThreadPriority()
	for {
		select {
		case <-r.stop:
			// Nothing is queued after stop closes: release whoever waits
			// on the copies that will not be made.
			for {
				select {
				case <-r.queue:
					r.pending.Done()
				default:
					return
				}
			}
		case w := <-r.queue:
			r.copyOne(w)
			r.pending.Done()
		}
	}
}

// copyOne copies w's tensors into huge pages of the region holding them
// all, publishes the copy and drops the originals' pages. A matrix outside
// every region, or one whose memory cannot be had, keeps its original.
func (r *residentSet) copyOne(w *tensor.Matrix) {
	v, ok := r.entries.Load(weak.Make(w))
	if !ok {
		return
	}
	e := v.(*residentEntry)
	r.mu.Lock()
	defer r.mu.Unlock()
	var reg *residentRegion
	for _, cand := range r.regions {
		if cand.holds(w.W.Data) {
			reg = cand
			break
		}
	}
	if reg == nil {
		return
	}
	parts := []*tensor.Tensor{w.W, w.Scales, w.Biases}
	need := 0
	for _, t := range parts {
		if t == nil {
			continue
		}
		if !reg.holds(t.Data) {
			return
		}
		need += (len(t.Data) + 63) &^ 63
	}
	if len(reg.free) < need {
		blk, err := mapHuge(max(need, residentBlock))
		if err != nil {
			return
		}
		reg.blocks = append(reg.blocks, blk)
		reg.free = blk
	}
	cp := *w
	var originals [][]byte
	for _, p := range []**tensor.Tensor{&cp.W, &cp.Scales, &cp.Biases} {
		if *p == nil {
			continue
		}
		src := (*p).Data
		dst := reg.free[:len(src):len(src)]
		reg.free = reg.free[(len(src)+63)&^63:]
		copy(dst, src)
		t := **p
		t.Data = dst
		*p = &t
		originals = append(originals, src)
	}
	e.region = reg
	e.copy.Store(&cp)
	// Ops that still read the originals see the same bytes: dropped pages
	// fault back in from the page cache. A failure only leaves them
	// resident as well.
	for _, src := range originals {
		_ = dropFilePages(src)
	}
}

// holds reports whether data lies inside the region's mapping.
func (reg *residentRegion) holds(data []byte) bool {
	p := dataPtr(data)
	return len(data) > 0 && p >= reg.lo && p+uintptr(len(data)) <= reg.hi
}
