package engine

import (
	"fmt"

	"mlxchat/kvcache"
	"mlxchat/models"
	"mlxchat/tensor"
)

// modelLM adapts a models.Model and its kvcache.Cache to the worker's lm
// interface.
type modelLM struct {
	model models.Model
	cache *kvcache.Cache
	opts  kvcache.Options // the options cache was made with
	vocab int
	// logits holds the last forward's last-token logits; reused so a
	// decode step does not allocate a vocabulary-sized slice.
	logits []float32
}

func newModelLM(m models.Model, opts kvcache.Options) (*modelLM, error) {
	info := m.Config()
	if info.VocabSize <= 0 {
		return nil, fmt.Errorf("model reports vocabulary size %d", info.VocabSize)
	}
	c, err := m.NewCache(opts)
	if err != nil {
		return nil, fmt.Errorf("creating the KV cache: %w", err)
	}
	return &modelLM{model: m, cache: c, opts: opts, vocab: info.VocabSize}, nil
}

func (a *modelLM) vocabSize() int { return a.vocab }

func (a *modelLM) configure(cfg cacheConfig) (bool, error) {
	emptied := false
	if cfg.kvBits != a.opts.Bits() {
		opts := withKVBits(a.opts, cfg.kvBits)
		c, err := a.model.NewCache(opts)
		if err != nil {
			return false, fmt.Errorf("creating the %d-bit KV cache: %w", cfg.kvBits, err)
		}
		emptied = a.cache.Offset() > 0
		a.cache, a.opts = c, opts
	}
	// Pins are set per request once the sink and cap are in place.
	if err := a.cache.SetPins(nil); err != nil {
		return emptied, err
	}
	if err := a.cache.SetMaxKV(cfg.maxKV); err != nil {
		return emptied, err
	}
	if err := a.cache.SetSink(cfg.sink); err != nil {
		return emptied, err
	}
	return emptied, nil
}

func (a *modelLM) setPins(pins []Span) error {
	ts := make([]tensor.Span, len(pins))
	for i, p := range pins {
		ts[i] = tensor.Span{Start: p.Start, Len: p.Len()}
	}
	return a.cache.SetPins(ts)
}

func (a *modelLM) canRewind(n int) bool { return a.cache.CanRewind(n) }

func (a *modelLM) anchor() error { return a.cache.Anchor() }

func (a *modelLM) clearAnchor() { a.cache.ClearAnchor() }

func (a *modelLM) anchorAt() int { return a.cache.Stats().Anchor }

func (a *modelLM) kvBits() int { return a.opts.Bits() }

// withKVBits is opts with the storage format of kvBits (32, 16 or 8).
func withKVBits(opts kvcache.Options, kvBits int) kvcache.Options {
	opts.Float16, opts.Quantized8 = kvBits == 16, kvBits == 8
	return opts
}

func (a *modelLM) footprint(kvBits, maxKV int) (perToken, total int64) {
	opts := withKVBits(a.opts, kvBits)
	specs := a.model.Config().Layers
	return kvcache.GlobalTokenBytes(specs, opts), kvcache.Footprint(specs, opts, maxKV)
}

func (a *modelLM) reset() error {
	a.cache.Reset()
	return nil
}

func (a *modelLM) maxChunk() int { return a.cache.MaxChunk() }

func (a *modelLM) maxRewind() int { return a.cache.MaxRewind() }

func (a *modelLM) rewind(n int) error { return a.cache.Rewind(n) }

// forward runs one chunk. models.Model.Forward opens the chunk itself
// (cache Begin trims to MaxKV, then every layer appends, then Commit; Abort
// on error), so the trim is read from the cache's counters around the call.
func (a *modelLM) forward(ids []int32) ([]float32, trimInfo, error) {
	before := a.cache.Stats()
	logits, err := a.model.Forward(a.cache, ids, true)
	if err != nil {
		return nil, trimInfo{}, err
	}
	tr := a.trimSince(before)
	if logits == nil || logits.DType != tensor.F32 || logits.Len() < a.vocab || logits.Len()%a.vocab != 0 {
		return nil, tr, fmt.Errorf("model returned logits %v, want F32 [1, %d]", logits, a.vocab)
	}
	row := logits.F32()
	a.logits = append(a.logits[:0], row[len(row)-a.vocab:]...)
	return a.logits, tr, nil
}

// forwardArgmax runs one chunk and returns the index of the largest
// logit of its last token: from the model (models.Greedy: on a GPU
// backend only that index comes back to the host), else from forward's
// row on the host.
func (a *modelLM) forwardArgmax(ids []int32) (int32, trimInfo, error) {
	g, ok := a.model.(models.Greedy)
	if !ok {
		logits, tr, err := a.forward(ids)
		if err != nil {
			return 0, tr, err
		}
		return int32(tensor.ArgmaxF32(logits)), tr, nil
	}
	before := a.cache.Stats()
	tok, err := g.ForwardArgmax(a.cache, ids)
	if err != nil {
		return 0, trimInfo{}, err
	}
	if tok < 0 || int(tok) >= a.vocab {
		return 0, trimInfo{}, fmt.Errorf("model returned token %d for a vocabulary of %d", tok, a.vocab)
	}
	return tok, a.trimSince(before), nil
}

// trimSince is the trim the cache made since its stats were before.
func (a *modelLM) trimSince(before kvcache.Stats) trimInfo {
	after := a.cache.Stats()
	if d := after.Trimmed - before.Trimmed; d > 0 {
		return trimInfo{Dropped: d, LiveBefore: before.Live, LiveAfter: before.Live - d, Kind: kvcache.TrimKindGlobal}
	}
	return trimInfo{}
}

func (a *modelLM) state() (CacheState, int64) {
	st := a.cache.Stats()
	spans := make([]Span, len(st.Spans))
	for i, r := range st.Spans {
		spans[i] = Span{r.Start, r.Start + r.Len}
	}
	return CacheState{Live: st.Live, Max: st.MaxKV, Seen: st.Offset, Trimmed: st.Trimmed, Window: st.Window,
		Sink: st.Sink, Pinned: st.Pinned, Spans: spans, KVBytes: st.Bytes, KVBits: a.kvBits(), KVLiveBytes: st.LiveBytes}, st.Bytes
}
