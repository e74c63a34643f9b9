package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// pool is a fixed set of helper goroutines owned by one Backend. Work is
// split into tasks that the calling goroutine and any helper that is free
// claim one by one, so a call never depends on a busy helper: an offer no
// helper has picked up by the time the caller has claimed every task is
// withdrawn instead of waited for.
type pool struct {
	helpers int
	jobs    chan *offer
	mu      sync.RWMutex // held for reading while offering, for writing by close
	closed  bool
}

// run is one call of pool.run: the task counter shared by its workers.
type run struct {
	tasks   int
	next    atomic.Int64
	fn      func(int)
	wg      sync.WaitGroup
	done    atomic.Int32 // helpers that took an offer and finished
	failure atomic.Pointer[any]
}

// offer invites one helper to join a run. state: 0 pending, 1 taken,
// 2 withdrawn.
type offer struct {
	r     *run
	state atomic.Int32
}

// spinFor is how long a helper that just finished a task keeps polling
// for the next offer before it parks, and how long a caller polls for
// helpers finishing before it blocks. Decode runs one op after another
// with gaps of microseconds to a few hundred (a 2048x512 matvec takes ~10
// µs, the head's serial steps ~200), and waking a parked goroutine costs
// tens of microseconds on a loaded VM, during which the caller works
// alone. On Gemma 3n E2B at 512 of context (2 threads, Xeon, alternating
// settings in one process) 1 ms instead of 50 µs left 2 of 409 runs a
// token without their helper instead of 50 and read 6% faster; a helper
// stops polling after this long, so an idle backend parks within 1 ms.
const spinFor = time.Millisecond

func newPool(threads int) *pool {
	p := &pool{helpers: max(threads-1, 0)}
	p.jobs = make(chan *offer, p.helpers)
	for i := 0; i < p.helpers; i++ {
		go p.helper()
	}
	return p
}

// helper takes offers until the pool closes. After each one it polls the
// queue for up to spinFor before blocking on it.
func (p *pool) helper() {
	for {
		o, ok := <-p.jobs
		if !ok {
			return
		}
		for {
			if o.state.CompareAndSwap(0, 1) {
				r := o.r
				r.work()
				r.done.Add(1)
				r.wg.Done()
			}
			if o = p.poll(); o == nil {
				break
			}
		}
	}
}

// poll waits up to spinFor for an offer without parking; nil when none
// came (or the pool closed).
func (p *pool) poll() *offer {
	start := time.Now()
	for n := 0; ; n++ {
		if len(p.jobs) > 0 {
			select {
			case o, ok := <-p.jobs:
				if !ok {
					return nil
				}
				return o
			default:
			}
		}
		if n&63 == 63 {
			if time.Since(start) > spinFor {
				return nil
			}
			// A caller that did park is readied onto this P's run queue:
			// let it run instead of spinning in front of it.
			runtime.Gosched()
		}
		spinPause()
	}
}

// work claims and runs tasks until none are left. A panic in a task stops
// the run and is kept for the caller, who re-raises it on its own
// goroutine where it can be recovered.
func (r *run) work() {
	defer func() {
		if v := recover(); v != nil {
			r.failure.CompareAndSwap(nil, &v)
			r.next.Store(int64(r.tasks))
		}
	}()
	for {
		i := int(r.next.Add(1) - 1)
		if i >= r.tasks {
			return
		}
		r.fn(i)
	}
}

// run calls fn(i) for every i in [0, tasks), spread over the caller and
// free helpers, and returns when all calls have returned.
func (p *pool) run(tasks int, fn func(i int)) {
	if tasks <= 0 {
		return
	}
	serial := func() {
		for i := 0; i < tasks; i++ {
			fn(i)
		}
	}
	if tasks == 1 || p.helpers == 0 {
		serial()
		return
	}
	r := &run{tasks: tasks, fn: fn}
	offers := make([]offer, min(p.helpers, tasks-1))
	sent := 0
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		serial()
		return
	}
	for i := range offers {
		offers[i].r = r
		r.wg.Add(1)
		select {
		case p.jobs <- &offers[i]:
			sent++
		default:
			r.wg.Done()
		}
		if sent < i+1 {
			break
		}
	}
	p.mu.RUnlock()
	r.work()
	taken := int32(0)
	for i := 0; i < sent; i++ {
		if offers[i].state.CompareAndSwap(0, 2) {
			// Take the withdrawn offer out of the queue if it is still
			// there: left in, it fills the queue, and the next run's offer
			// finds no room and goes without a helper. Whatever this takes
			// out is withdrawn or about to be (its caller does its tasks
			// itself), so taking another run's offer costs that run only
			// its helper.
			select {
			case <-p.jobs:
			default:
			}
			r.wg.Done()
		} else {
			taken++
		}
	}
	// Helpers that joined are finishing their last task: poll briefly
	// rather than park (waking a parked caller takes the scheduler
	// microseconds, a large part of a small op).
	if taken > 0 && r.done.Load() < taken {
		start := time.Now()
		for n := 1; r.done.Load() < taken; n++ {
			if n&63 == 0 && time.Since(start) > spinFor {
				break
			}
			spinPause()
		}
	}
	r.wg.Wait()
	if v := r.failure.Load(); v != nil {
		panic(*v)
	}
}

// close stops the helpers once they have finished what they were offered.
// Later runs execute on the caller alone. It is safe to call at any time
// and more than once.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.jobs)
	}
}

// split divides [0, n) into contiguous ranges of at least minSize elements
// (the last may be shorter), one per thread at most, and runs fn on each.
func (p *pool) split(n, minSize int, fn func(lo, hi int)) {
	p.splitParts(n, minSize, p.helpers+1, fn)
}

// splitParts is split with an explicit upper bound on the number of ranges.
func (p *pool) splitParts(n, minSize, parts int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if minSize < 1 {
		minSize = 1
	}
	if maxParts := (n + minSize - 1) / minSize; parts > maxParts {
		parts = maxParts
	}
	if parts < 1 {
		parts = 1
	}
	chunk := (n + parts - 1) / parts
	parts = (n + chunk - 1) / chunk
	p.run(parts, func(i int) {
		lo := i * chunk
		fn(lo, min(lo+chunk, n))
	})
}

// streamRegion is one worker's share of a stream call: the rows [lo, hi)
// not yet claimed, packed as lo<<32 | hi so that the owner's claims from
// the front and a thief's split of the back are single compare-and-swaps.
// Padded to a cache line so that two workers' claims never share one.
type streamRegion struct {
	state atomic.Uint64
	_     [56]byte
}

func packRange(lo, hi int) uint64     { return uint64(lo)<<32 | uint64(hi) }
func unpackRange(s uint64) (int, int) { return int(s >> 32), int(s & 0xffffffff) }

// stream calls fn(worker, lo, hi) over ascending, contiguous pieces that
// together cover [0, n) exactly once. [0, n) is cut into one region per
// thread (of at least minRows rows); each worker walks its own region from
// the front, so the weight rows it reads form one sequential stream whose
// prefetches run on into its next piece. A worker whose region is done
// takes the back half of the region with the most rows left (or all of
// it, when that is at most one piece) as its new region, so the workers
// finish within about a piece of each other even when one joined late or
// never came. Pieces start at a quarter of the rows left in the region,
// clamped to [minPiece, maxPiece] and rounded to align rows (a power of
// two), so that a long product makes few calls and its last pieces are
// small. worker identifies the calling worker, in [0, threads): no two
// calls with the same worker run at once.
func (p *pool) stream(n, minRows, minPiece, maxPiece, align int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	if n >= 1<<31 {
		panic("cpu: stream over 2^31 rows")
	}
	parts := min(p.helpers+1, max(1, n/max(minRows, 1)))
	if parts == 1 {
		fn(0, 0, n)
		return
	}
	regions := make([]streamRegion, parts)
	for i := range regions {
		lo := roundDown(n*i/parts, align)
		hi := n
		if i+1 < parts {
			hi = roundDown(n*(i+1)/parts, align)
		}
		regions[i].state.Store(packRange(lo, hi))
	}
	p.run(parts, func(w int) {
		own := &regions[w]
		for {
			for {
				s := own.state.Load()
				lo, hi := unpackRange(s)
				if lo >= hi {
					break
				}
				e := hi
				if size := roundDown(min(max((hi-lo)/4, minPiece), maxPiece), align); lo+size < hi && size > 0 {
					e = lo + size
				}
				if own.state.CompareAndSwap(s, packRange(e, hi)) {
					fn(w, lo, e)
				}
			}
			if !steal(regions, own, minPiece, align) {
				return
			}
		}
	})
}

// steal moves the back half of the region with the most rows left (all of
// it when that is at most minPiece rows) into own, which is empty. It
// reports false when every region is empty.
func steal(regions []streamRegion, own *streamRegion, minPiece, align int) bool {
	for {
		best, bestLeft := -1, 0
		for i := range regions {
			lo, hi := unpackRange(regions[i].state.Load())
			if hi-lo > bestLeft {
				best, bestLeft = i, hi-lo
			}
		}
		if best < 0 {
			return false
		}
		v := &regions[best]
		s := v.state.Load()
		lo, hi := unpackRange(s)
		if lo >= hi {
			continue
		}
		mid := lo // lo is a multiple of align, so mid >= lo
		if hi-lo > minPiece {
			mid = roundDown(lo+(hi-lo)/2, align)
		}
		if !v.state.CompareAndSwap(s, packRange(lo, mid)) {
			continue
		}
		// own is empty and only its worker refills it; a thief that read
		// it before it emptied fails its swap.
		own.state.Store(packRange(mid, hi))
		return true
	}
}

// roundDown rounds v down to a multiple of align (a power of two).
func roundDown(v, align int) int { return v &^ (align - 1) }
