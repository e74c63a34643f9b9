package engine

import (
	"context"
	"sync"
)

// outbox is the unbounded event queue between the engine goroutine and the
// caller's Events channel. put never blocks; a pump goroutine moves events
// into the channel in order. At most one CacheState is pending at a time: a
// newer one replaces the undelivered older one in place.
type outbox struct {
	ch     chan Event
	notify chan struct{}

	mu       sync.Mutex
	items    []Event
	csIndex  int  // index in items of the pending CacheState, or -1
	closed   bool // no more puts; the pump closes ch once items are delivered
	chClosed bool
}

func newOutbox(buffer int) *outbox {
	return &outbox{ch: make(chan Event, buffer), notify: make(chan struct{}, 1), csIndex: -1}
}

// put queues ev. It never blocks. Events put after close are dropped.
func (o *outbox) put(ev Event) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	if _, isCS := ev.(CacheState); isCS {
		if o.csIndex >= 0 {
			o.items[o.csIndex] = ev
			o.mu.Unlock()
			return
		}
		o.csIndex = len(o.items)
	}
	o.items = append(o.items, ev)
	o.mu.Unlock()
	o.wake()
}

// wake tells the pump there is something to do, without blocking.
func (o *outbox) wake() {
	select {
	case o.notify <- struct{}{}:
	default:
	}
}

// close says no more events will come; the pump delivers what is queued and
// then closes the channel.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.wake()
}

// closeNow closes the channel without a pump (Close before Start).
func (o *outbox) closeNow() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if !o.chClosed {
		o.chClosed = true
		close(o.ch)
	}
}

// pump delivers events until the outbox is closed and drained, or ctx ends
// (then the remaining events are dropped and the channel is closed, so a
// reader that went away never pins the goroutine).
func (o *outbox) pump(ctx context.Context) {
	defer o.closeNow()
	for {
		o.mu.Lock()
		if len(o.items) == 0 {
			closed := o.closed
			o.mu.Unlock()
			if closed {
				return
			}
			select {
			case <-o.notify:
				continue
			case <-ctx.Done():
				return
			}
		}
		ev := o.items[0]
		o.items[0] = nil
		o.items = o.items[1:]
		if o.csIndex == 0 {
			o.csIndex = -1
		} else if o.csIndex > 0 {
			o.csIndex--
		}
		o.mu.Unlock()
		select {
		case o.ch <- ev:
		case <-ctx.Done():
			return
		}
	}
}
