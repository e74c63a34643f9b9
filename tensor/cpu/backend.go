package cpu

import (
	"fmt"
	"runtime"
	"sync"

	"mlxchat/tensor"
)

// Backend runs tensor ops on the host CPU. Ops complete before they
// return. One Backend may be used from several goroutines; its helper
// goroutines are shared by them. Close stops them at once; otherwise they
// stop when the Backend is garbage collected.
type Backend struct {
	threads int
	pool    *pool
	simd    bool               // use the AVX2/FMA/F16C kernels
	avx512  bool               // use the AVX-512 decode kernels (implies simd)
	bufs    slicePool[float32] // scratch, so hot ops do not feed the GC
	keyPos  slicePool[int]     // Attention's key positions, one per key column
	cols    *colCache          // column copies of the matrices SparseMatMul has seen
	rope    *ropeTables        // RoPE's recent cosine and sine tables
	res     residency          // copies of the mapped checkpoints' matrices (resident.go)
}

var (
	_ tensor.Backend      = (*Backend)(nil)
	_ tensor.WeightMapper = (*Backend)(nil)
)

// New returns a CPU backend that uses up to threads cores; threads <= 0
// means runtime.NumCPU().
func New(threads int) *Backend {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	return newBackendLevel(threads, bestLevel())
}

// kernelLevel names a set of kernels; each level falls back on the one
// below it for what it does not cover.
type kernelLevel int

const (
	levelPortable kernelLevel = iota // Go only
	levelAVX2                        // AVX2/FMA/F16C assembly
	levelAVX512                      // plus the AVX-512 BW/VNNI decode kernels
)

func (l kernelLevel) String() string {
	return [...]string{"portable", "avx2", "avx512"}[l]
}

// bestLevel is the highest kernel level this machine runs.
func bestLevel() kernelLevel {
	switch {
	case haveAVX512():
		return levelAVX512
	case haveSIMD():
		return levelAVX2
	}
	return levelPortable
}

// availableLevels lists every kernel level this machine runs, so tests can
// force each path.
func availableLevels() []kernelLevel {
	var ls []kernelLevel
	for l := levelPortable; l <= bestLevel(); l++ {
		ls = append(ls, l)
	}
	return ls
}

// newBackend lets tests choose the portable kernels on a SIMD machine
// (simd false) or the AVX2 ones (simd true).
func newBackend(threads int, simd bool) *Backend {
	if simd {
		return newBackendLevel(threads, levelAVX2)
	}
	return newBackendLevel(threads, levelPortable)
}

// newBackendLevel returns a backend that uses the kernels of level l (which
// the machine must support).
func newBackendLevel(threads int, l kernelLevel) *Backend {
	b := &Backend{threads: threads, pool: newPool(threads), simd: l >= levelAVX2, avx512: l >= levelAVX512, cols: &colCache{}, rope: &ropeTables{}}
	// Helpers hold the pool, not the Backend, so a Backend nobody closed
	// can still be collected; its helpers stop then.
	runtime.AddCleanup(b, func(p *pool) { p.close() }, b.pool)
	return b
}

// Threads is the number of cores the backend spreads work over.
func (b *Backend) Threads() int { return b.threads }

// Close stops the backend's helper goroutines. Ops called afterwards, or
// running meanwhile, still complete, on their calling goroutines only.
func (b *Backend) Close() { b.pool.close() }

// Name returns "cpu".
func (b *Backend) Name() string { return "cpu" }

// Synchronous returns true: every op has finished when it returns.
func (b *Backend) Synchronous() bool { return true }

// Alloc returns a zeroed F32 tensor on the Go heap.
func (b *Backend) Alloc(shape ...int) *tensor.Tensor { return tensor.New(tensor.F32, shape...) }

// Sync returns nil: there is never recorded work.
func (b *Backend) Sync() error { return nil }

// checkF32 reports an error unless t is an F32 tensor whose data matches
// its shape.
func checkF32(op, what string, t *tensor.Tensor) error {
	if t == nil {
		return fmt.Errorf("cpu %s: %s is nil", op, what)
	}
	if t.DType != tensor.F32 {
		return fmt.Errorf("cpu %s: %s is %s, want F32", op, what, t)
	}
	if len(t.Data) != t.Len()*4 {
		return fmt.Errorf("cpu %s: %s has %d bytes for %s", op, what, len(t.Data), t)
	}
	return nil
}

func lastDim(t *tensor.Tensor) int {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[len(t.Shape)-1]
}

// checkSame checks dst and x are F32 with the same element count and
// returns the row length of x.
func checkSame(op string, dst, x *tensor.Tensor) (int, error) {
	if err := checkF32(op, "x", x); err != nil {
		return 0, err
	}
	if err := checkF32(op, "dst", dst); err != nil {
		return 0, err
	}
	if dst.Len() != x.Len() {
		return 0, fmt.Errorf("cpu %s: dst %s and x %s differ in size", op, dst, x)
	}
	return lastDim(x), nil
}

// elementwise runs fn over index ranges of n elements in parallel, in
// ranges of at least 32K elements (cheap ops: a smaller share is not worth
// handing to a helper).
func (b *Backend) elementwise(n int, fn func(lo, hi int)) {
	b.pool.split(n, 1<<15, fn)
}

// elementwiseHeavy is elementwise for ops that cost tens of nanoseconds
// per element (tanh, GELU): ranges of at least 2K elements, so decode-size
// rows (2048-16384) are split too.
func (b *Backend) elementwiseHeavy(n int, fn func(lo, hi int)) {
	b.pool.split(n, 1<<11, fn)
}

// slicePool hands out reusable slices of T.
type slicePool[T any] struct{ p sync.Pool }

// get returns a slice of n Ts with arbitrary contents; hand it back with
// put.
func (sp *slicePool[T]) get(n int) *[]T {
	v, _ := sp.p.Get().(*[]T)
	if v == nil || cap(*v) < n {
		s := make([]T, n)
		return &s
	}
	*v = (*v)[:n]
	return v
}

func (sp *slicePool[T]) put(v *[]T) { sp.p.Put(v) }

// getBuf returns a scratch slice of n float32s with arbitrary contents;
// hand it back with putBuf.
func (b *Backend) getBuf(n int) *[]float32 { return b.bufs.get(n) }

// getZeroBuf is getBuf with the contents cleared.
func (b *Backend) getZeroBuf(n int) *[]float32 {
	v := b.getBuf(n)
	clear(*v)
	return v
}

func (b *Backend) putBuf(v *[]float32) { b.bufs.put(v) }
