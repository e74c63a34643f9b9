package cpu

import (
	"sync"
	"sync/atomic"
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
	failure atomic.Pointer[any]
}

// offer invites one helper to join a run. state: 0 pending, 1 taken,
// 2 withdrawn.
type offer struct {
	r     *run
	state atomic.Int32
}

func newPool(threads int) *pool {
	p := &pool{helpers: max(threads-1, 0)}
	p.jobs = make(chan *offer, p.helpers)
	for i := 0; i < p.helpers; i++ {
		go func() {
			for o := range p.jobs {
				if o.state.CompareAndSwap(0, 1) {
					o.r.work()
					o.r.wg.Done()
				}
			}
		}()
	}
	return p
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
	for i := 0; i < sent; i++ {
		if offers[i].state.CompareAndSwap(0, 2) {
			r.wg.Done()
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
