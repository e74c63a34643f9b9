package engine

import (
	"fmt"

	"mlxchat/kvcache"
)

// fitModel is what a FitCheck needs from the loaded model; every part is
// immutable or safe for concurrent use.
type fitModel struct {
	promptTools
	specs   []kvcache.LayerSpec
	opts    kvcache.Options // the cache options (Step, RewindSlack); the format per request
	context int             // the model's context length (0 = unknown)
}

// fitJob is a FitCheck waiting for the fit goroutine.
type fitJob struct {
	id  RequestID
	req FitCheck
}

// ready records what FitCheck and CountTokens need once w is built. The
// caller holds e.mu or has not shared e yet.
func (e *Engine) ready(w *worker) {
	e.tok = w.tok
	e.current = w.settings
	fm := &fitModel{promptTools: w.promptTools, context: w.info.ContextLength, opts: kvcache.DefaultOptions()}
	if m, ok := w.lm.(*modelLM); ok {
		fm.specs, fm.opts = m.model.Config().Layers, m.opts
	}
	e.fit = fm
}

// fitLocked queues a FitCheck for the fit goroutine, superseding one still
// waiting, and starts the goroutine if it is idle. The caller holds e.mu.
func (e *Engine) fitLocked(id RequestID, f FitCheck) {
	if old := e.fitPending; old != nil {
		e.emit(old.id, Fit{Superseded: true})
	}
	e.fitPending = &fitJob{id: id, req: f}
	if !e.fitBusy {
		e.fitBusy = true
		go e.fitLoop()
	}
}

// fitLoop answers FitChecks until none is waiting.
func (e *Engine) fitLoop() {
	for {
		e.mu.Lock()
		j := e.fitPending
		e.fitPending = nil
		if j == nil || e.closed {
			e.fitBusy = false
			e.mu.Unlock()
			return
		}
		fm, cur := e.fit, e.current
		e.mu.Unlock()
		var ev Event
		err := safely(func() error {
			if fm == nil {
				return fmt.Errorf("fit check: the model is not loaded yet")
			}
			s := cur
			if j.req.Settings != nil {
				if err := j.req.Settings.Validate(); err != nil {
					return err
				}
				s = j.req.Settings.Normalize()
			}
			f, err := fm.check(j.req.Conversation, s)
			ev = f
			return err
		})
		if err != nil {
			ev = Error{Err: err}
		}
		e.emit(j.id, ev)
	}
}

// fitAnswerRoom is the answer length a suggested cap leaves room for when
// Settings.MaxTokens is 0, and fitCapStep what it is rounded up to.
const (
	fitAnswerRoom = 1024
	fitCapStep    = 1024
)

// check computes the Fit of conv's last message under s.
func (fm *fitModel) check(conv []Message, s Settings) (Fit, error) {
	if len(conv) == 0 {
		return Fit{}, fmt.Errorf("fit check: empty conversation")
	}
	full, index := withSystem(conv, s)
	pt := fm.forSettings(s)
	ids, err := pt.promptIDs(full, true)
	if err != nil {
		return Fit{}, err
	}
	pl := pt.layoutPrompt(full, index, ids, true)
	sink, err := pt.sinkFor(s, full, ids)
	if err != nil {
		return Fit{}, err
	}
	pins := pl.pinned()
	c := s.LiveCap(fm.context)
	f := Fit{PromptTokens: len(ids), MaxKV: s.MaxKV, LiveCap: c, ContextLength: fm.context, Sink: sink}
	for _, p := range pins {
		f.Pinned += max(0, p.End-max(p.Start, sink))
	}
	var msg Span
	for _, m := range pl.msgs {
		if m.index == len(conv)-1 {
			msg = m.tokens
		}
	}
	f.MessageTokens = msg.Len()
	fixed := pins
	if sink > 0 {
		fixed = mergeSpans(append([]Span{{0, sink}}, pins...))
	}
	f.Visible = overlapLen(msg, liveAfter(len(ids), c, fixed))
	f.Fits = f.Visible == f.MessageTokens
	if c > 0 {
		f.Window = max(0, c-sink-f.Pinned)
	}
	bits := s.KVBits
	if bits == 0 {
		bits = 32
	}
	opts := withKVBits(fm.opts, bits)
	f.KVBytesPerToken = kvcache.GlobalTokenBytes(fm.specs, opts)
	if !f.Fits {
		room := s.MaxTokens
		if room == 0 {
			room = fitAnswerRoom
		}
		suggest := (len(ids) + room + fitCapStep - 1) / fitCapStep * fitCapStep
		if fm.context > 0 {
			suggest = min(suggest, fm.context)
		}
		if suggest > c {
			// A cap at the model's context already (MaxKV off, or
			// set to it) has nothing to raise.
			f.SuggestedMaxKV = suggest
			f.SuggestedKVBytes = kvcache.Footprint(fm.specs, opts, suggest)
		}
	}
	return f, nil
}
