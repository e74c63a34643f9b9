package engine

import (
	"fmt"
)

// trimInfo is what one cache Begin dropped (zero Dropped = no trim).
type trimInfo struct {
	Dropped, LiveBefore, LiveAfter int
	Kind                           string
}

// promptTools renders, tokenizes and lays out prompts. Its parts are
// immutable and safe for concurrent use, so FitCheck uses them off the
// engine goroutine.
type promptTools struct {
	tok  Tokenizer
	tmpl Template
	// contextLength is the model's (ModelInfo.ContextLength, 0 = unknown):
	// the live window when Settings.MaxKV is 0 (Settings.LiveCap).
	contextLength int
}

// cacheConfig is what configure sets on the cache.
type cacheConfig struct {
	maxKV, sink int
	kvBits      int // 32, 16 or 8
}

// lm is the model-plus-cache the worker drives. modelLM (model.go) adapts a
// models.Model and its kvcache.Cache to it.
type lm interface {
	// vocabSize is the number of logits per token.
	vocabSize() int
	// configure sets MaxKV, the sink length and the storage precision for
	// the next chunks, and unpins everything. A lower MaxKV trims at the
	// next begin. It reports whether it had to empty the cache (another
	// storage precision needs a new cache).
	configure(cfg cacheConfig) (emptied bool, err error)
	// setPins pins absolute positions (never trimmed beside the sink).
	setPins(pins []Span) error
	// reset empties the cache (offset back to 0).
	reset() error
	// maxRewind is the most tokens rewind can drop now; canRewind says
	// whether rewind(n) works (n <= maxRewind, or back to the anchor).
	maxRewind() int
	canRewind(n int) bool
	// rewind drops the last n tokens appended, so the next forward runs
	// at the cache's offset minus n (kvcache.Cache.Rewind).
	rewind(n int) error
	// anchor marks the current offset as one rewind can always return
	// to; anchorAt is it (-1: none); clearAnchor drops it.
	anchor() error
	anchorAt() int
	clearAnchor()
	// maxChunk is the longest chunk begin accepts under MaxKV next to the
	// sink (math.MaxInt when unlimited).
	maxChunk() int
	// forward runs one chunk (at most maxChunk tokens): the cache first
	// trims so it fits under MaxKV (reported as the trimInfo), then the
	// model appends it. It returns the logits of the chunk's last token
	// (vocabSize values, valid until the next forward: decode reads them
	// once per step, so one buffer serves every step).
	forward(ids []int32) ([]float32, trimInfo, error)
	// forwardArgmax runs one chunk as forward does and returns the index
	// of the largest logit of its last token (tensor.ArgmaxF32: the
	// sampler's greedy choice) instead of the logits.
	forwardArgmax(ids []int32) (int32, trimInfo, error)
	// state is the live-window meter and the cache's bytes.
	state() (CacheState, int64)
	// kvBits is the storage precision of the cache now (32, 16 or 8).
	kvBits() int
	// footprint is the KV bytes per token of cap, and of a cache full at
	// cap maxKV, with kvBits storage.
	footprint(kvBits, maxKV int) (perToken, total int64)
}

// worker is the engine goroutine's private state: the model, its cache and
// the token ids whose keys and values the cache holds.
type worker struct {
	promptTools
	lm      lm
	special SpecialTokens // tok when it implements SpecialTokens, else nil
	// thinkIDs are the ids of <think> and </think> when the tokenizer has
	// them (nil: the model does not reason in tags); their text is
	// decoded even when they are special, for the reasoning split.
	thinkIDs *thinkTags
	stops    map[int32]bool
	info     ModelInfo
	settings Settings // current settings (normalized)

	// cached is every token id appended to the cache since it was last
	// emptied, in order (trimmed ones included).
	cached []int32
	// trimCap is the live cap (Settings.LiveCap) in force at the cache's
	// last trim (meaningful
	// while the cache's Trimmed count is above zero).
	trimCap int
	// lastPromptLen and lastChunkStart describe the latest prefill: the
	// prompt's length and the index in cached where its last chunk began.
	// Resending that same prompt (a regenerate) redoes that chunk, so the
	// next-token logits come from the very same computation.
	lastPromptLen, lastChunkStart int
	// restartWhy, when set, is why the cache was emptied outside a
	// Generate (RestartKVBits); the next Generate reports it.
	restartWhy string
}

// cacheConfig is the cache configuration of settings s with sink tokens
// for a model of contextLength positions (see Settings.LiveCap).
func (s Settings) cacheConfig(sink, contextLength int) cacheConfig {
	bits := s.KVBits
	if bits == 0 {
		bits = 32
	}
	return cacheConfig{maxKV: s.LiveCap(contextLength), sink: sink, kvBits: bits}
}

func newWorkerLM(m lm, tok Tokenizer, tmpl Template, stops []int32, info ModelInfo, opts Options) (*worker, error) {
	if tok == nil || tmpl == nil {
		return nil, fmt.Errorf("engine needs a tokenizer and a chat template")
	}
	s := opts.Settings.Normalize()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	w := &worker{promptTools: promptTools{tok: tok, tmpl: tmpl, contextLength: info.ContextLength}, lm: m, stops: map[int32]bool{}, info: info, settings: s}
	w.special, _ = tok.(SpecialTokens)
	w.thinkIDs = findThinkTags(tok)
	w.info.Reasoning = w.thinkIDs != nil
	if r, ok := tmpl.(templateReader); ok {
		w.info.ThinkingSwitch = r.Reads("enable_thinking")
	}
	for _, id := range append(append([]int32(nil), stops...), opts.StopTokens...) {
		w.stops[id] = true
	}
	if _, err := m.configure(s.cacheConfig(s.SinkTokens, w.contextLength)); err != nil {
		return nil, err
	}
	return w, nil
}

// isSpecial reports whether id is a control token that the answer text
// leaves out (see SpecialTokens); the decode loop asks for every token, so
// the type assertion is done once in newWorkerLM.
func (w *worker) isSpecial(id int32) bool {
	return w.special != nil && w.special.IsSpecial(id)
}

// cacheState is the current meter as an event.
func (w *worker) cacheState() CacheState {
	cs, _ := w.lm.state()
	return cs
}

// updateSettings validates and installs new current settings; a different
// MaxKV is applied to the cache now (a lower one trims at the next begin).
func (w *worker) updateSettings(s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	s = s.Normalize()
	if emptied, err := w.lm.configure(s.cacheConfig(s.SinkTokens, w.contextLength)); err != nil {
		w.resetAfterFault()
		return err
	} else if emptied {
		w.cached = nil
		w.restartWhy = RestartKVBits
	}
	w.settings = s
	return nil
}

// reset empties the cache and the token history.
func (w *worker) reset() error {
	w.cached = nil
	return w.lm.reset()
}

// resetAfterFault empties the cache after a failure that may have left it
// half-updated; it reports whether that worked.
func (w *worker) resetAfterFault() bool {
	w.cached = nil
	return safely(w.lm.reset) == nil
}
