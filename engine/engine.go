package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Tokenizer is what the engine needs from a tokenizer: encoding a rendered
// prompt (special tokens in the text are recognized, no BOS is added beyond
// what the template wrote) and a streaming decoder per answer.
type Tokenizer interface {
	// Encode turns a rendered prompt into token ids.
	Encode(text string) ([]int32, error)
	// NewStream starts the incremental decoder of one answer.
	NewStream() StreamDecoder
}

// SpecialTokens is implemented by a Tokenizer that can tell control
// tokens (<bos>, <start_of_turn>, <pad>, ...) from text. The engine never
// detokenizes such tokens into an answer; a Tokenizer without it has every
// token shown.
type SpecialTokens interface {
	// IsSpecial reports whether id is a control token.
	IsSpecial(id int32) bool
}

// StreamDecoder turns token ids into text incrementally: Add returns the
// text that is complete after id (holding back partial UTF-8), Flush the
// rest at the end of the answer.
type StreamDecoder interface {
	// Add feeds one id and returns the text completed by it.
	Add(id int32) string
	// Flush returns the text still held back at the end of the answer.
	Flush() string
}

// Template renders a conversation into the model's prompt text.
type Template interface {
	// Render formats messages; with addGenerationPrompt the text ends
	// with the header that opens the model's reply.
	Render(messages []Message, addGenerationPrompt bool) (string, error)
}

// Options configure an Engine.
type Options struct {
	// Settings are the initial current settings (see UpdateSettings);
	// zero fields with defaults are normalized.
	Settings Settings
	// Info is reported in Ready; fields the model knows are filled in.
	Info ModelInfo
	// StopTokens end an answer (Done reason stop) in addition to the
	// model's own end-of-sequence ids.
	StopTokens []int32
	// EventBuffer is the Events channel capacity (0 = 16). Delivery never
	// depends on it (see the delivery policy); a small buffer lets a slow
	// reader get coalesced CacheState events instead of a backlog.
	EventBuffer int
}

// Loader loads a model for NewLoading. It reports progress through
// progress (stage, done, total; total 0 = unknown) and should stop early
// when ctx ends.
type Loader func(ctx context.Context, progress func(stage string, done, total int64)) (*Bundle, error)

// Engine runs generation requests on one goroutine. All methods are safe
// for concurrent use.
type Engine struct {
	opts   Options
	loader Loader
	out    *outbox

	mu      sync.Mutex
	queue   []*job
	running *job
	nextID  RequestID
	started bool
	closed  bool
	wake    chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}

	tok Tokenizer // set once the model is ready (for CountTokens)
	// fit is what FitCheck needs, set once the model is ready; current
	// the settings last applied by the engine goroutine; fitPending the
	// FitCheck waiting for the fit goroutine (running while fitBusy).
	fit        *fitModel
	current    Settings
	fitPending *fitJob
	fitBusy    bool

	// Owned by the engine goroutine.
	w       *worker
	loadErr error
}

// job is one submitted request with its cancellation.
type job struct {
	id     RequestID
	req    Request
	ctx    context.Context
	cancel context.CancelFunc
}

// newEngine builds an engine around a worker or a loader.
func newEngine(w *worker, loader Loader, opts Options) *Engine {
	buf := opts.EventBuffer
	if buf <= 0 {
		buf = 16
	}
	return &Engine{
		opts:   opts,
		loader: loader,
		out:    newOutbox(buf),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		w:      w,
	}
}

// NewLoading returns an engine that first runs load on its goroutine
// (after Start), reporting ModelLoading events, then Ready; requests
// submitted meanwhile wait. If loading fails, an Error event with request
// id 0 reports it and every request gets an Error.
func NewLoading(load Loader, opts Options) *Engine {
	return newEngine(nil, load, opts)
}

// FromBundle returns an engine for an already loaded bundle; Start sends
// Ready at once.
func FromBundle(b *Bundle, opts Options) (*Engine, error) {
	w, err := newWorker(b, opts)
	if err != nil {
		return nil, err
	}
	e := newEngine(w, nil, opts)
	e.ready(w)
	return e, nil
}

// CountTokens returns how many tokens text encodes to (for the TUI's
// collapsed-paste label). It is safe to call from any goroutine; before the
// model is ready it returns an error.
func (e *Engine) CountTokens(text string) (int, error) {
	e.mu.Lock()
	tok := e.tok
	e.mu.Unlock()
	if tok == nil {
		return 0, fmt.Errorf("the model is not loaded yet")
	}
	ids, err := tok.Encode(text)
	if err != nil {
		return 0, err
	}
	return len(ids), nil
}

// Start launches the engine goroutine and the event pump. Cancelling ctx
// stops both (like Close). Requests submitted before Start wait for it.
// Calling Start more than once does nothing.
func (e *Engine) Start(ctx context.Context) {
	e.mu.Lock()
	if e.started || e.closed {
		e.mu.Unlock()
		return
	}
	e.started = true
	loopCtx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	e.mu.Unlock()
	go e.out.pump(ctx)
	go e.loop(loopCtx)
}

// Submit queues a request and returns its id at once; it never blocks.
// Cancel acts immediately on running and queued requests. After Close,
// Submit returns an id whose request never runs.
func (e *Engine) Submit(req Request) RequestID {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nextID++
	id := e.nextID
	if e.closed {
		return id
	}
	if c, ok := req.(Cancel); ok {
		e.cancelLocked(c.ID)
		return id
	}
	if f, ok := req.(FitCheck); ok {
		e.fitLocked(id, f)
		return id
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.queue = append(e.queue, &job{id: id, req: req, ctx: ctx, cancel: cancel})
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return id
}

// cancelLocked cancels the running request and queued Generates (id 0) or
// the one request with that id.
func (e *Engine) cancelLocked(id RequestID) {
	if e.running != nil && (id == 0 || e.running.id == id) {
		e.running.cancel()
	}
	for _, j := range e.queue {
		if (id == 0 && isAnswer(j.req)) || j.id == id {
			j.cancel()
		}
	}
}

// isAnswer reports whether req produces an answer (Generate, Summarize):
// what Cancel{ID: 0} stops when queued.
func isAnswer(req Request) bool {
	switch req.(type) {
	case Generate, Summarize:
		return true
	}
	return false
}

// Events returns the channel on which every event arrives. It is closed
// after Close (once the queued events are delivered) or when the context
// given to Start ends.
func (e *Engine) Events() <-chan Event { return e.out.ch }

// Close cancels the running request (it still ends with its Done or Error
// event) and a model load in progress, drops queued requests without
// events, waits for the engine goroutine to stop, and lets the pump deliver
// what is queued before closing the Events channel. Later Submits are
// ignored.
func (e *Engine) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	started := e.started
	e.cancelLocked(0)
	for _, j := range e.queue {
		j.cancel()
	}
	cancel := e.cancel
	e.mu.Unlock()
	if cancel != nil {
		cancel() // stops a model load in progress too
	}
	if !started {
		e.out.closeNow()
		return
	}
	select {
	case e.wake <- struct{}{}:
	default:
	}
	<-e.done
	e.out.close()
}

// emit stamps and queues an event for request id.
func (e *Engine) emit(id RequestID, ev Event) {
	e.out.put(stamp(ev, Header{ID: id, At: time.Now()}))
}

// stamp returns ev with its Header set to h.
func stamp(ev Event, h Header) Event {
	switch v := ev.(type) {
	case ModelLoading:
		v.Header = h
		return v
	case Ready:
		v.Header = h
		return v
	case PrefillProgress:
		v.Header = h
		return v
	case Token:
		v.Header = h
		return v
	case Trim:
		v.Header = h
		return v
	case CacheState:
		v.Header = h
		return v
	case Stats:
		v.Header = h
		return v
	case Done:
		v.Header = h
		return v
	case Error:
		v.Header = h
		return v
	case SettingsChanged:
		v.Header = h
		return v
	case Cleared:
		v.Header = h
		return v
	case Fit:
		v.Header = h
		return v
	case Layout:
		v.Header = h
		return v
	case SummarizeProgress:
		v.Header = h
		return v
	case PieceSummary:
		v.Header = h
		return v
	}
	return ev // not an engine event type: delivered as is
}

// next takes the next queued job, or nil when the engine is closing.
func (e *Engine) next(ctx context.Context) *job {
	for {
		e.mu.Lock()
		if e.closed || ctx.Err() != nil {
			e.mu.Unlock()
			return nil
		}
		if len(e.queue) > 0 {
			j := e.queue[0]
			e.queue[0] = nil
			e.queue = e.queue[1:]
			e.running = j
			e.mu.Unlock()
			return j
		}
		e.mu.Unlock()
		select {
		case <-e.wake:
		case <-ctx.Done():
		}
	}
}

// loop is the engine goroutine.
func (e *Engine) loop(ctx context.Context) {
	defer close(e.done)
	if e.w == nil {
		e.load(ctx)
	} else {
		e.emit(0, Ready{Info: e.w.info})
		e.emit(0, e.w.cacheState())
	}
	stop := context.AfterFunc(ctx, func() {
		e.mu.Lock()
		e.cancelLocked(0)
		e.mu.Unlock()
	})
	defer stop()
	for {
		j := e.next(ctx)
		if j == nil {
			return
		}
		e.run(j)
		e.mu.Lock()
		e.running = nil
		e.mu.Unlock()
		j.cancel()
	}
}

// load runs the Loader of NewLoading, reporting progress.
func (e *Engine) load(ctx context.Context) {
	var b *Bundle
	err := safely(func() error {
		var err error
		b, err = e.loader(ctx, func(stage string, done, total int64) {
			e.emit(0, ModelLoading{Stage: stage, Done: done, Total: total})
		})
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("model loader returned nothing")
		}
		e.w, err = newWorker(b, e.opts)
		return err
	})
	if err == nil {
		e.mu.Lock()
		e.ready(e.w)
		e.mu.Unlock()
	}
	if err != nil {
		e.loadErr = fmt.Errorf("loading model: %w", err)
		e.emit(0, Error{Err: e.loadErr})
		return
	}
	e.emit(0, Ready{Info: e.w.info})
	e.emit(0, e.w.cacheState())
}

// run executes one job; no panic escapes it.
func (e *Engine) run(j *job) {
	if e.w == nil {
		err := e.loadErr
		if err == nil {
			err = fmt.Errorf("no model loaded")
		}
		e.emit(j.id, Error{Err: err})
		return
	}
	switch r := j.req.(type) {
	case Generate:
		e.generate(j, r)
	case Summarize:
		e.summarize(j, r)
	case UpdateSettings:
		err := safely(func() error { return e.w.updateSettings(r.Settings) })
		if err != nil {
			e.emit(j.id, Error{Err: err})
			return
		}
		e.mu.Lock()
		e.current = e.w.settings
		e.mu.Unlock()
		e.emit(j.id, SettingsChanged{Settings: e.w.settings})
		e.emit(j.id, e.w.cacheState())
	case Reset:
		err := safely(func() error { return e.w.reset() })
		if err != nil {
			e.emit(j.id, Error{Err: err, CacheReset: true})
			return
		}
		e.emit(j.id, Cleared{})
		e.emit(j.id, e.w.cacheState())
	default:
		e.emit(j.id, Error{Err: fmt.Errorf("unknown request type %T", j.req)})
	}
}

// safely runs f and turns a panic into an error carrying the stack's top.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return f()
}

// PanicError is the error of a request that panicked inside the engine or
// the model. Stack is the goroutine stack at the panic, for logs.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the goroutine stack at the panic
}

// Error describes the panic value in one line.
func (p *PanicError) Error() string { return fmt.Sprintf("internal error (panic): %v", p.Value) }
