package cpu

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"mlxchat/tensor"
)

// The backend implements tensor.WeightMapper so that it knows which
// weights come from a checkpoint's file mapping and for how long. A matrix
// from a mapped file is copied, on its first product, into memory the
// process maps itself (anonymous, in transparent huge pages where the
// kernel has them), and every later product reads the copy; the file's
// pages it was taken from are released from this process (the page cache
// keeps them for the next start). The copy of a matrix costs about what
// one product of it does (E2B: ~1.2 GB over the first prompt, 0.24-0.33 s
// longer for the first 64-token chunk).
//
// On the Xeon of doc.go the page cache's pages of a checkpoint stream
// slower than the same bytes in anonymous memory, by an amount that moves
// with the host: MLXCHAT_E2B_DIR=/tmp/e2b go test ./models/gemma3n -run
// XXX -bench E2BResident (E2B's attention and dense MLP matrices back to
// back, mapped and resident passes alternating) gave resident/mapped
// 1.013-1.018 in a quiet hour of December 6, 2026, while an hour earlier
// the same comparison in a one-off test read 16.9-19.0 GB/s mapped against
// 18.4-21.6 from huge-page copies (1.07-1.19), and whole decode steps
// alternating every 30 steps between the two went from roofline 0.73-0.79
// to 0.81-0.87. The pages of a file written just before read as fast as
// anonymous ones (274 MB of E2B-shaped matrices in a temporary file,
// measured once: 0.98-1.06).

// residency holds the regions given to MapWeights and the copies made of
// the matrices inside them.
type residency struct {
	mu      sync.Mutex
	regions []*residentRegion
	mapped  atomic.Int64 // bytes of anonymous memory mapped for copies
}

// residentRegion is one mapped file: its copies by the address of their
// weight data, and the arena they live in.
type residentRegion struct {
	data   []byte
	copies map[uintptr]*residentEntry
	arena  residentArena
}

// residentEntry is the copy of one matrix. Its header fields are those of
// the source matrix it was made for; a product of another matrix over the
// same weight bytes (another view) reads the mapping.
type residentEntry struct {
	once  sync.Once
	src   tensor.Matrix
	m     *tensor.Matrix // nil when the copy failed (the mapping is used)
	chunk *residentChunk // holds m's memory; keep it reachable while m is read
}

// residentArena hands out 64-byte aligned pieces of anonymous mappings.
type residentArena struct {
	chunk *residentChunk
	used  int
}

// residentChunk is one anonymous mapping. It is unmapped by a cleanup once
// neither the arena nor any entry (nor an op holding one) reaches it, so
// a product still reading a copy keeps its memory mapped even while
// UnmapWeights drops the entry.
type residentChunk struct {
	mem []byte
}

// residentChunkBytes is the size of an arena's mappings; a matrix larger
// than a quarter of it gets a mapping of its own, so that arenas are not
// left mostly empty.
const residentChunkBytes = 64 << 20

// MapWeights registers region, a read-only checkpoint file mapping that
// stays unchanged until UnmapWeights: the matrices inside it are copied
// into the backend's own memory on their first product (see above).
func (b *Backend) MapWeights(region []byte) error {
	if len(region) == 0 {
		return nil
	}
	b.res.mu.Lock()
	defer b.res.mu.Unlock()
	for _, r := range b.res.regions {
		if overlaps(r.data, region) {
			return fmt.Errorf("cpu: weight region at %p (%d bytes) overlaps one already mapped", unsafe.SliceData(region), len(region))
		}
	}
	b.res.regions = append(b.res.regions, &residentRegion{data: region, copies: map[uintptr]*residentEntry{}})
	return nil
}

// UnmapWeights forgets region and the copies made from it. Their memory
// is unmapped once no product still reads it: by the cleanups of a
// garbage collection, which UnmapWeights starts when there were copies, so
// that a model closed to load another does not leave gigabytes mapped
// until the next collection comes by itself.
func (b *Backend) UnmapWeights(region []byte) error {
	b.res.mu.Lock()
	found, copied := false, false
	for i, r := range b.res.regions {
		if unsafe.SliceData(r.data) == unsafe.SliceData(region) && len(r.data) == len(region) {
			found, copied = true, len(r.copies) > 0
			// slices.Delete clears the vacated slot, which would otherwise
			// keep the region and its copies reachable.
			b.res.regions = slices.Delete(b.res.regions, i, i+1)
			break
		}
	}
	b.res.mu.Unlock()
	if !found {
		return fmt.Errorf("cpu: weight region at %p (%d bytes) was not mapped", unsafe.SliceData(region), len(region))
	}
	if copied {
		runtime.GC()
	}
	return nil
}

// resident returns the matrix a product of w should read: w's copy when w's
// weights lie in a mapped region (made now on first use), else w. The
// caller keeps the returned entry reachable (runtime.KeepAlive) until it
// has finished reading the matrix; it is nil when w is returned.
func (b *Backend) resident(w *tensor.Matrix) (*tensor.Matrix, *residentEntry) {
	if w.W == nil || len(w.W.Data) == 0 {
		return w, nil
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(w.W.Data)))
	b.res.mu.Lock()
	var reg *residentRegion
	for _, r := range b.res.regions {
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(r.data)))
		if addr >= lo && addr+uintptr(len(w.W.Data)) <= lo+uintptr(len(r.data)) {
			reg = r
			break
		}
	}
	if reg == nil {
		b.res.mu.Unlock()
		return w, nil
	}
	e := reg.copies[addr]
	if e == nil {
		e = &residentEntry{src: *w}
		reg.copies[addr] = e
	}
	b.res.mu.Unlock()
	if !sameMatrix(&e.src, w) {
		return w, nil
	}
	e.once.Do(func() { b.copyResident(reg, e) })
	if e.m == nil {
		return w, nil
	}
	return e.m, e
}

// sameMatrix reports whether a and b are the same matrix: equal sizes and
// quantization over the same bytes.
func sameMatrix(a, b *tensor.Matrix) bool {
	same := func(x, y *tensor.Tensor) bool {
		if x == nil || y == nil {
			return x == y
		}
		return x.DType == y.DType && len(x.Data) == len(y.Data) && unsafe.SliceData(x.Data) == unsafe.SliceData(y.Data)
	}
	return a.Out == b.Out && a.In == b.In && a.Bits == b.Bits && a.GroupSize == b.GroupSize &&
		same(a.W, b.W) && same(a.Scales, b.Scales) && same(a.Biases, b.Biases)
}

// copyResident makes e's copy of e.src in reg's arena, spreading the copy
// over the pool, and releases the copied pages of the mapping from this
// process. A failed allocation leaves e.m nil: products read the mapping.
func (b *Backend) copyResident(reg *residentRegion, e *residentEntry) {
	w := &e.src
	parts := []*tensor.Tensor{w.W, w.Scales, w.Biases}
	size := 0
	for _, t := range parts {
		if t != nil {
			size += (len(t.Data) + 63) &^ 63
		}
	}
	b.res.mu.Lock()
	mem, chunk, err := reg.arena.alloc(size, &b.res.mapped)
	b.res.mu.Unlock()
	if err != nil {
		return
	}
	m := *w
	dsts := []**tensor.Tensor{&m.W, &m.Scales, &m.Biases}
	at := 0
	for i, t := range parts {
		if t == nil {
			continue
		}
		d := mem[at : at+len(t.Data) : at+len(t.Data)]
		at += (len(t.Data) + 63) &^ 63
		b.parallelCopy(d, t.Data)
		releasePages(t.Data)
		*dsts[i] = &tensor.Tensor{DType: t.DType, Shape: t.Shape, Data: d}
	}
	e.m, e.chunk = &m, chunk
}

// parallelCopy copies src into dst (same length) in 1 MiB pieces over the
// pool.
func (b *Backend) parallelCopy(dst, src []byte) {
	const piece = 1 << 20
	b.pool.run((len(src)+piece-1)/piece, func(i int) {
		lo := i * piece
		hi := min(lo+piece, len(src))
		copy(dst[lo:hi], src[lo:hi])
	})
}

// releasePages drops the whole pages inside data (part of a read-only file
// mapping) from this process's page tables; a later read faults them back
// in from the page cache. Best effort: an error changes nothing.
func releasePages(data []byte) {
	if len(data) == 0 {
		return
	}
	page := uintptr(unix.Getpagesize())
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	start := (lo + page - 1) &^ (page - 1)
	end := (lo + uintptr(len(data))) &^ (page - 1)
	if end <= start {
		return
	}
	_ = unix.Madvise(data[start-lo:end-lo], unix.MADV_DONTNEED)
}

// alloc returns size bytes (a multiple of 64) of zeroed anonymous memory
// and the chunk that holds them; mapped counts the bytes of the chunks
// while they are mapped.
func (a *residentArena) alloc(size int, mapped *atomic.Int64) ([]byte, *residentChunk, error) {
	if size > residentChunkBytes/4 {
		c, err := newResidentChunk(size, mapped)
		if err != nil {
			return nil, nil, err
		}
		return c.mem[:size:size], c, nil
	}
	if a.chunk == nil || a.used+size > len(a.chunk.mem) {
		c, err := newResidentChunk(residentChunkBytes, mapped)
		if err != nil {
			return nil, nil, err
		}
		a.chunk, a.used = c, 0
	}
	mem := a.chunk.mem[a.used : a.used+size : a.used+size]
	a.used += size
	return mem, a.chunk, nil
}

// newResidentChunk maps size bytes (rounded up to whole huge pages) of
// anonymous memory, asks for transparent huge pages where the system has
// them, and unmaps it when the chunk is collected; mapped counts its bytes
// meanwhile.
func newResidentChunk(size int, mapped *atomic.Int64) (*residentChunk, error) {
	const huge = 2 << 20
	size = (size + huge - 1) &^ (huge - 1)
	// One huge page more, so that the chunk can start on a huge page.
	raw, err := unix.Mmap(-1, 0, size+huge, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("cpu: mapping %d bytes for resident weights: %w", size, err)
	}
	off := int((huge - uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%huge) % huge)
	mem := raw[off : off+size : off+size]
	adviseHugePages(mem)
	c := &residentChunk{mem: mem}
	mapped.Add(int64(len(raw)))
	runtime.AddCleanup(c, func(raw []byte) {
		if unix.Munmap(raw) == nil {
			mapped.Add(-int64(len(raw)))
		}
	}, raw)
	return c, nil
}
