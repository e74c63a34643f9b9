package cpu

import (
	"sync"
	"sync/atomic"
)

// pool is a fixed set of helper goroutines owned by one Backend. Work is
// split into tasks; the calling goroutine always takes part, so a call
// never waits for a busy pool and nested use cannot deadlock.
type pool struct {
	helpers int
	jobs    chan func()
	once    sync.Once
	closed  atomic.Bool
}

func newPool(threads int) *pool {
	p := &pool{helpers: threads - 1, jobs: make(chan func())}
	for i := 0; i < p.helpers; i++ {
		go func() {
			for job := range p.jobs {
				job()
			}
		}()
	}
	return p
}

// run calls fn(i) for every i in [0, tasks), spread over the caller and
// idle helpers, and returns when all calls have returned.
func (p *pool) run(tasks int, fn func(i int)) {
	if tasks <= 0 {
		return
	}
	if tasks == 1 || p.helpers == 0 || p.closed.Load() {
		for i := 0; i < tasks; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var failure atomic.Pointer[any]
	work := func() {
		defer func() {
			// A panic in a helper would kill the process; hand it to the
			// caller instead, who re-raises it where it can be recovered.
			if r := recover(); r != nil {
				failure.CompareAndSwap(nil, &r)
				next.Store(int64(tasks))
			}
		}()
		for {
			i := int(next.Add(1) - 1)
			if i >= tasks {
				return
			}
			fn(i)
		}
	}
	var wg sync.WaitGroup
	for k := 0; k < p.helpers && k < tasks-1; k++ {
		wg.Add(1)
		select {
		case p.jobs <- func() { defer wg.Done(); work() }:
		default:
			wg.Done()
		}
	}
	work()
	wg.Wait()
	if r := failure.Load(); r != nil {
		panic(*r)
	}
}

// close stops the helpers. Running jobs finish first.
func (p *pool) close() {
	p.once.Do(func() {
		p.closed.Store(true)
		close(p.jobs)
	})
}

// split divides [0, n) into at most parts contiguous ranges of at least
// minSize elements (the last may be shorter) and runs fn on each.
func (p *pool) split(n, minSize int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	parts := p.helpers + 1
	if minSize < 1 {
		minSize = 1
	}
	if maxParts := (n + minSize - 1) / minSize; parts > maxParts {
		parts = maxParts
	}
	chunk := (n + parts - 1) / parts
	parts = (n + chunk - 1) / chunk
	p.run(parts, func(i int) {
		lo := i * chunk
		fn(lo, min(lo+chunk, n))
	})
}
