package kvcache

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"mlxchat/tensor"
)

// DefaultSink is the number of leading tokens kept as an attention sink when
// Options.Sink is zero.
const DefaultSink = 4

// NoSink, as Options.Sink, disables the attention sink.
const NoSink = -1

// DefaultStep is the capacity granularity, in tokens, when Options.Step is
// zero.
const DefaultStep = 256

// DefaultRewindSlack is the number of keys a sliding layer keeps beyond its
// window for Rewind when Options.RewindSlack is zero.
const DefaultRewindSlack = 256

// NoRewindSlack, as Options.RewindSlack, keeps no keys beyond the window:
// a sliding layer then cannot rewind once keys have slid out of it.
const NoRewindSlack = -1

// TrimKindGlobal is the TrimEvent.Kind of a trim of the global layers to fit
// MaxKV.
const TrimKindGlobal = "global"

// LayerSpec describes the cache of one attention layer.
type LayerSpec struct {
	// KVHeads and HeadDim give the shape of one token's keys (and values):
	// [KVHeads, HeadDim].
	KVHeads, HeadDim int
	// Window is 0 for a global (full-attention) layer, or the sliding window
	// in keys: a query at position p sees keys at positions (p-Window, p].
	Window int
	// SharedFrom is -1 when the layer owns its cache, else the index of the
	// layer whose keys and values it reads (it must own its cache and have
	// the same KVHeads, HeadDim and Window). Note the zero value means
	// "shared from layer 0".
	SharedFrom int
}

// Options configures a Cache.
type Options struct {
	// MaxKV caps the live keys of global layers (0 = unlimited). Before a
	// chunk, Begin drops the oldest keys after the sink so the chunk fits.
	// It also caps the sliding windows: a sliding layer's effective window
	// is min(Window, MaxKV).
	MaxKV int
	// Sink is how many leading tokens trimming never drops: 0 means
	// DefaultSink, NoSink (or any negative value) means none. Set it to the
	// system prompt's token count to keep the whole system prompt. The
	// effective sink is at most MaxKV/2 (see Cache.Sink).
	Sink int
	// Step is the capacity growth granularity in tokens (0 = DefaultStep).
	Step int
	// Quantized8 stores keys and values as int8 with one float32 absmax
	// scale per token and head ((HeadDim+4)/(4*HeadDim) of the float32
	// rows' memory, a little over a quarter); views are dequantized into
	// a float32 scratch on every Append.
	Quantized8 bool
	// Float16 stores keys and values as IEEE half floats (half the
	// float32 rows' memory, rounding each value to 11 significant bits);
	// views are decoded into the float32 scratch like Quantized8's. At
	// most one of Quantized8 and Float16 may be set; neither means
	// float32 rows that views read in place.
	Float16 bool
	// RewindSlack is how many keys each sliding layer keeps, out of view,
	// after they slide out of its window, so that Rewind can go back that
	// many tokens: 0 means DefaultRewindSlack, NoRewindSlack (or any
	// negative value) none. It costs RewindSlack rows of K and V per
	// sliding layer that owns its cache (Go memory, in the storage format:
	// 2 * RewindSlack * KVHeads * HeadDim * 4 bytes for F32), allocated
	// when the layer first drops a key and counted in Stats.Bytes.
	RewindSlack int
	// Alloc, when set (typically a tensor.Backend's Alloc), provides the
	// storage: it is called with one dimension, a number of F32 elements,
	// and the returned tensor's Data is used as raw bytes. View tensors
	// then carry its Handle, so a GPU backend can read keys and values in
	// place instead of staging them. A nil result or one with too little
	// Data falls back to Go memory. Nil means Go memory.
	Alloc func(shape ...int) *tensor.Tensor
	// Copy, when set together with Alloc (typically the same backend's
	// Copy), makes Append write the chunk's keys and values into storage
	// by recording Copy(dst, src) on F32 row ranges instead of copying
	// host bytes, so an asynchronous backend need not finish computing k
	// and v (no Sync) before Append: the rows stay in backend memory and
	// views read them in place. Storage must then come from Alloc (Append
	// fails otherwise) and ops the backend records must see each other's
	// writes in recording order. Everything else that moves rows (Begin's
	// trims, Commit's window slide, Rewind, SetSink growth) still copies
	// on the host, so those calls must be made with no recorded work
	// pending (after the backend's Sync). Ignored with Quantized8 or
	// Float16, whose rows are encoded on the host. Nil means host copies.
	Copy func(dst, src *tensor.Tensor) error
	// DecodeF16, when set (typically a tensor.HalfDecoder's DecodeF16),
	// expands the half floats of a Float16 cache's views into the float32
	// scratch: it must write the exact float32 value of each of the first
	// len(dst) values of src into dst. Nil means a lookup table on the
	// calling goroutine. Ignored unless Float16 is set.
	DecodeF16 func(dst []float32, src []uint16)
	// DecodeInt8Rows, when set (typically a tensor.Int8RowDecoder's),
	// expands a Quantized8 cache's rows for its views: rows of KVHeads
	// float32 scales then KVHeads x HeadDim int8 values, each value times
	// its head's scale as one float32 product. Nil means a Go loop on the
	// calling goroutine. Ignored unless Quantized8 is set.
	DecodeInt8Rows func(dst []float32, src []byte, rows, heads, dim int)
}

// encoding is the row format opts ask for.
func (opts Options) encoding() encoding {
	switch {
	case opts.Quantized8:
		return encQ8
	case opts.Float16:
		return encF16
	}
	return encF32
}

// Bits is the storage precision opts ask for, in bits per value: 32, 16
// or 8.
func (opts Options) Bits() int {
	switch opts.encoding() {
	case encQ8:
		return 8
	case encF16:
		return 16
	}
	return 32
}

// DefaultOptions returns unlimited MaxKV, a DefaultSink-token sink,
// DefaultStep growth and F32 storage.
func DefaultOptions() Options {
	return Options{Sink: DefaultSink, Step: DefaultStep, RewindSlack: DefaultRewindSlack}
}

// View is what a layer attends for the current chunk: every live key and
// value of the layer (the chunk's own included) in storage order, and the
// mask that says which query row may see which of them. K and V are F32
// [Mask.KeyLen(), KVHeads, HeadDim]; K.Shape[0] == Mask.KeyLen() always,
// Mask.QueryStart is Offset() and Mask.Rows the chunk length.
//
// K and V may alias the cache's storage: they are valid until the next
// Begin, Commit, Abort, Rewind, SetMaxKV, SetSink or Reset, or the next
// Append to the same layer; with Quantized8, for a layer that no other
// layer shares from, until the next Append to any layer (its rows are
// dequantized into a scratch those layers share). Callers must not write
// to them.
type View struct {
	K, V *tensor.Tensor
	Mask tensor.Mask
}

// TrimEvent reports what Begin dropped from the global layers to fit the
// chunk under MaxKV. Dropped == 0 means nothing was trimmed.
type TrimEvent struct {
	Dropped    int    // tokens dropped from every global layer
	LiveBefore int    // live keys of a global layer before the trim
	LiveAfter  int    // live keys after the trim (before the chunk is appended)
	Kind       string // TrimKindGlobal when Dropped > 0, else ""
}

// LayerStats describes one layer's cache.
type LayerStats struct {
	Kind       string // "global", "sliding" or "shared"
	Live       int    // keys currently held (a shared layer reports its source's)
	Capacity   int    // rows allocated (0 for shared layers)
	Bytes      int64  // bytes allocated for K, V, rewind slack and anchor copies (0 for shared layers)
	Slack      int    // keys kept out of view for Rewind (sliding layers; 0 otherwise)
	Window     int    // effective sliding window, 0 for global layers
	SharedFrom int    // source layer, -1 when the layer owns its cache
}

// Stats is a snapshot of the cache for meters and /stats.
type Stats struct {
	Offset  int   // tokens seen: the next RoPE position
	Live    int   // live keys of the global layers (of the first layer if none is global)
	MaxKV   int   // 0 = unlimited
	Sink    int   // effective sink size
	Trimmed int   // positions dropped from the global layers since New/Reset
	Window  int   // smallest effective sliding window (0 = no sliding layer)
	Bytes   int64 // total bytes allocated (layers and ScratchBytes)
	// LiveBytes is the encoded size of the live keys and values of the
	// layers that own a store, each stored row once (a shared layer's
	// reads of its source are not counted again): what one decode step's
	// attention must read of the cache at the least, the KV part of a
	// decode roofline.
	LiveBytes int64
	// ScratchBytes is the float32 scratch Float16 and Quantized8 views
	// are decoded into (counted in Bytes, not in the layers').
	ScratchBytes int64
	// Pinned is how many live keys of the global layers are pinned
	// positions outside the sink (they count in Live).
	Pinned int
	// Spans are the live positions of the global layers (of the first
	// owning layer if none is global), ascending and merged: the sink,
	// pinned runs, the recent window.
	Spans []tensor.Span
	// Anchor is the anchored Offset (see Anchor), -1 when none.
	Anchor int
	Layers []LayerStats
}

type layer struct {
	spec     LayerSpec
	st       *store // nil for shared layers
	appended bool   // appended in the open chunk
	view     View   // the open chunk's view, once appended
}

// Cache is the key/value cache of one sequence across all layers of a model.
// It is not safe for concurrent use; the engine goroutine owns it.
type Cache struct {
	layers    []layer
	maxKV     int
	sink      int // requested sink
	step      int
	hasGlobal bool

	offset   int
	open     bool
	n        int // length of the open chunk
	trimmed  int
	didTrim  bool // a global trim happened since New/Reset
	sinkKept int  // sink used by the last global trim
	// trimEnd is the Offset at which the chunk that last trimmed ended
	// (lowered to the Offset by Abort and Rewind): rewinding to a position
	// at or after it undoes no trim (see ExactRewind).
	trimEnd int
	// copyRows is set when Append records row copies through Options.Copy.
	copyRows bool
	// pins are the pinned positions (sorted, merged runs): never trimmed.
	pins []tensor.Span
	// anchor is the Offset that Rewind can always return to while the
	// global layers still hold it (-1: none); see Anchor.
	anchor int
	// With Quantized8: shared is the dequantization scratch of the
	// layers no other layer reads; scratches lists it and the scratch of
	// each layer others share from.
	shared    *scratch
	scratches []*scratch
}

// New validates the layer specs and options and returns an empty cache.
// Storage is allocated lazily, in Options.Step-token steps.
func New(specs []LayerSpec, opts Options) (*Cache, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("kvcache: no layers")
	}
	if opts.MaxKV < 0 {
		return nil, fmt.Errorf("kvcache: max-kv-size %d: want 0 (unlimited) or a positive number of tokens", opts.MaxKV)
	}
	if opts.Step < 0 {
		return nil, fmt.Errorf("kvcache: step %d: want 0 (default %d) or a positive number of tokens", opts.Step, DefaultStep)
	}
	c := &Cache{maxKV: opts.MaxKV, step: opts.Step, layers: make([]layer, len(specs)), anchor: -1}
	c.copyRows = c.appendCopy(opts) != nil
	slackRows := opts.RewindSlack
	switch {
	case slackRows == 0:
		slackRows = DefaultRewindSlack
	case slackRows < 0:
		slackRows = 0
	}
	if c.step == 0 {
		c.step = DefaultStep
	}
	switch {
	case opts.Sink == 0:
		c.sink = DefaultSink
	case opts.Sink > 0:
		c.sink = opts.Sink
	}
	sources := map[int]bool{} // layers others share from
	for _, sp := range specs {
		if sp.SharedFrom >= 0 {
			sources[sp.SharedFrom] = true
		}
	}
	if opts.Quantized8 && opts.Float16 {
		return nil, fmt.Errorf("kvcache: Quantized8 and Float16 both set: want one storage format")
	}
	enc := opts.encoding()
	decodeF16, decodeI8 := opts.DecodeF16, opts.DecodeInt8Rows
	if decodeF16 == nil {
		decodeF16 = decodeF16Table
	}
	if decodeI8 == nil {
		decodeI8 = decodeInt8RowsGo
	}
	if enc != encF32 {
		widest := 0
		for _, sp := range specs {
			widest = max(widest, sp.KVHeads*sp.HeadDim*4)
		}
		c.shared = &scratch{step: max(1, c.step*widest)}
		c.scratches = []*scratch{c.shared}
	}
	for i, sp := range specs {
		if sp.KVHeads <= 0 || sp.HeadDim <= 0 || sp.Window < 0 {
			return nil, fmt.Errorf("kvcache: layer %d: bad spec %+v: want KVHeads > 0, HeadDim > 0, Window >= 0", i, sp)
		}
		c.layers[i].spec = sp
		if sp.SharedFrom < 0 {
			c.layers[i].spec.SharedFrom = -1
			sl := 0
			if sp.Window > 0 {
				sl = slackRows
			}
			scr := c.shared
			if enc != encF32 && sources[i] {
				scr = &scratch{step: max(1, c.step*sp.KVHeads*sp.HeadDim*4)}
				c.scratches = append(c.scratches, scr)
			}
			c.layers[i].st = newStore(sp.KVHeads, sp.HeadDim, enc, c.step, sl, scr, opts.Alloc, c.appendCopy(opts))
			c.layers[i].st.sliding = sp.Window > 0
			c.layers[i].st.decodeF16, c.layers[i].st.decodeI8 = decodeF16, decodeI8
			if sp.Window == 0 {
				c.hasGlobal = true
			}
		}
	}
	for i, sp := range specs {
		if sp.SharedFrom < 0 {
			continue
		}
		src := sp.SharedFrom
		switch {
		case src >= len(specs):
			return nil, fmt.Errorf("kvcache: layer %d shares layer %d, but there are only %d layers", i, src, len(specs))
		case src == i:
			return nil, fmt.Errorf("kvcache: layer %d shares from itself (use SharedFrom -1 for a layer that owns its cache)", i)
		case specs[src].SharedFrom >= 0:
			return nil, fmt.Errorf("kvcache: layer %d shares layer %d, which itself shares layer %d; point it at the owner", i, src, specs[src].SharedFrom)
		case specs[src].KVHeads != sp.KVHeads || specs[src].HeadDim != sp.HeadDim || specs[src].Window != sp.Window:
			return nil, fmt.Errorf("kvcache: layer %d (kv heads %d, head dim %d, window %d) shares layer %d (kv heads %d, head dim %d, window %d): they must match",
				i, sp.KVHeads, sp.HeadDim, sp.Window, src, specs[src].KVHeads, specs[src].HeadDim, specs[src].Window)
		}
	}
	return c, nil
}

// NumLayers is the number of layers the cache was built for.
func (c *Cache) NumLayers() int { return len(c.layers) }

// Offset is the number of tokens committed so far: the absolute (RoPE)
// position of the next chunk's first token. It never decreases except on
// Reset and Rewind; trimming does not change it. It stays constant from Begin to
// Commit, so every layer of a chunk, shared ones included, rotates its
// queries and keys at Offset()+i.
func (c *Cache) Offset() int { return c.offset }

// Live is the number of keys the global layers hold (the live-window
// meter's numerator; the first owning layer's count if none is global).
// Unlike Stats it allocates nothing.
func (c *Cache) Live() int {
	if c.hasGlobal {
		return c.globalLive()
	}
	for i := range c.layers {
		if st := c.layers[i].st; st != nil {
			return st.live()
		}
	}
	return 0
}

// MaxKV is the current cap (0 = unlimited).
func (c *Cache) MaxKV() int { return c.maxKV }

// Sink is the effective attention sink: the requested sink, at most
// MaxKV/2, and never more than what the last trim kept (tokens once trimmed
// cannot come back).
func (c *Cache) Sink() int { return c.sinkFor(c.maxKV, c.sink) }

// sinkFor is the effective sink under cap maxKV for a requested sink.
func (c *Cache) sinkFor(maxKV, sink int) int {
	s := sink
	if maxKV > 0 && s > maxKV/2 {
		s = maxKV / 2
	}
	if c.didTrim && s > c.sinkKept {
		s = c.sinkKept
	}
	return s
}

// MaxChunk is the longest chunk Begin accepts: MaxKV - Sink() - Pinned(),
// or math.MaxInt when MaxKV is 0 or the model has no global layer. The
// engine clamps its prefill chunk to it.
func (c *Cache) MaxChunk() int {
	if c.maxKV == 0 || !c.hasGlobal {
		return math.MaxInt
	}
	return c.maxKV - c.Sink() - c.Pinned()
}

// Pinned is the number of pinned positions outside the sink (see
// SetPins), whether or not they have been appended yet: the keys the pins
// may keep beside the sink.
func (c *Cache) Pinned() int { return pinnedOutside(c.pins, c.Sink()) }

// pinnedOutside counts the positions of pins at or after sink.
func pinnedOutside(pins []tensor.Span, sink int) int {
	n := 0
	for _, r := range pins {
		n += max(0, r.Start+r.Len-max(r.Start, sink))
	}
	return n
}

// Pins returns the pinned positions as sorted, merged runs.
func (c *Cache) Pins() []tensor.Span { return append([]tensor.Span(nil), c.pins...) }

// SetPins replaces the pinned positions: absolute positions (runs, in any
// order, possibly overlapping, possibly not yet appended) that trimming
// never drops, beside the sink (a pinned message, with the system prompt
// and the sink in the never-trimmed prefix). It applies from the next
// trim; a position trimmed before it was pinned stays trimmed. The sink
// and the pins together may use at most half of MaxKV, so that at least
// half the cap is left for recent tokens: SetPins fails, changing nothing,
// when Sink()+pinned > MaxKV/2, naming both numbers. nil unpins all;
// unpinned keys become ordinary keys, the oldest ones, trimmed first.
func (c *Cache) SetPins(spans []tensor.Span) error {
	if c.open {
		return fmt.Errorf("kvcache: SetPins while a chunk is open; call it between chunks")
	}
	pins, err := normalizeSpans(spans)
	if err != nil {
		return err
	}
	if err := c.checkFixed(c.maxKV, c.sinkFor(c.maxKV, c.sink), pins); err != nil {
		return err
	}
	c.pins = pins
	return nil
}

// checkFixed reports an error when sink plus pins exceed half of maxKV.
func (c *Cache) checkFixed(maxKV, sink int, pins []tensor.Span) error {
	if maxKV == 0 || len(pins) == 0 {
		return nil
	}
	if p := pinnedOutside(pins, sink); sink+p > maxKV/2 {
		return fmt.Errorf("kvcache: %d pinned tokens and the %d-token sink need %d, more than half of max-kv-size %d (%d); unpin some or raise max-kv-size",
			p, sink, sink+p, maxKV, maxKV/2)
	}
	return nil
}

// normalizeSpans validates runs of positions and returns them sorted and
// merged (nil for none).
func normalizeSpans(spans []tensor.Span) ([]tensor.Span, error) {
	var out []tensor.Span
	for _, r := range spans {
		if r.Start < 0 || r.Len <= 0 {
			return nil, fmt.Errorf("kvcache: pinned span %+v: want Start >= 0 and Len > 0", r)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b tensor.Span) int { return a.Start - b.Start })
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && r.Start <= merged[n-1].Start+merged[n-1].Len {
			merged[n-1].Len = max(merged[n-1].Len, r.Start+r.Len-merged[n-1].Start)
			continue
		}
		merged = append(merged, r)
	}
	if len(merged) == 0 {
		return nil, nil
	}
	return merged, nil
}

// fixed is the never-trimmed positions: the sink and the pins, merged.
func (c *Cache) fixed() []tensor.Span {
	spans := c.pins
	if s := c.Sink(); s > 0 {
		spans = append([]tensor.Span{{Start: 0, Len: s}}, spans...)
	}
	out, _ := normalizeSpans(spans)
	return out
}

// window is the effective window of a sliding layer: min(Window, MaxKV).
func (c *Cache) window(sp LayerSpec) int {
	if sp.Window > 0 && c.maxKV > 0 && c.maxKV < sp.Window {
		return c.maxKV
	}
	return sp.Window
}

// globalLive is the live count of the global layers (all equal).
func (c *Cache) globalLive() int {
	for i := range c.layers {
		if l := &c.layers[i]; l.st != nil && l.spec.Window == 0 {
			return l.st.live()
		}
	}
	return 0
}

// Begin opens a chunk of n tokens at positions Offset()..Offset()+n-1.
// It first trims every layer in lockstep: global layers drop their oldest
// keys after the sink until live+n <= MaxKV (reported in the TrimEvent), and
// sliding layers keep only the window-1 keys the chunk's first row needs.
// Pinned positions (SetPins) are kept like the sink. It fails, changing
// nothing, if a chunk is already open or n > MaxChunk().
func (c *Cache) Begin(n int) (TrimEvent, error) {
	if c.open {
		return TrimEvent{}, fmt.Errorf("kvcache: Begin(%d) while a chunk of %d tokens is open; call Commit or Abort first", n, c.n)
	}
	if n <= 0 {
		return TrimEvent{}, fmt.Errorf("kvcache: Begin(%d): a chunk needs at least one token", n)
	}
	if mc := c.MaxChunk(); n > mc {
		return TrimEvent{}, fmt.Errorf("kvcache: chunk of %d tokens cannot fit under max-kv-size %d with a %d-token sink; use a prefill chunk <= %d",
			n, c.maxKV, c.Sink(), mc)
	}
	var ev TrimEvent
	if c.maxKV > 0 && c.hasGlobal {
		live := c.globalLive()
		if live+n > c.maxKV {
			sink := c.Sink()
			fixed := c.fixed()
			d := live + n - c.maxKV
			for i := range c.layers {
				if l := &c.layers[i]; l.st != nil && l.spec.Window == 0 {
					l.st.trimFixed(d, fixed)
				}
			}
			c.trimmed += d
			c.didTrim = true
			c.sinkKept = sink
			c.trimEnd = c.offset + n
			ev = TrimEvent{Dropped: d, LiveBefore: live, LiveAfter: live - d, Kind: TrimKindGlobal}
		}
	}
	c.trimSliding()
	for _, sc := range c.scratches {
		sc.release()
	}
	c.open, c.n = true, n
	for i := range c.layers {
		c.layers[i].appended = false
		c.layers[i].view = View{}
	}
	return ev, nil
}

// trimSliding drops sliding-layer keys older than the effective window needs.
func (c *Cache) trimSliding() {
	for i := range c.layers {
		l := &c.layers[i]
		if l.st == nil || l.spec.Window == 0 {
			continue
		}
		if keep := c.window(l.spec) - 1; l.st.m > keep {
			l.st.slideOut(l.st.m - keep)
		}
	}
}

// Append adds the open chunk's keys and values for a layer that owns its
// cache. k and v are F32 [n, KVHeads, HeadDim], already rotated (RoPE at
// positions Offset()+i). It returns the layer's view: all live keys (sink,
// recent or window, then the chunk) and their mask. Each layer appends once
// per chunk.
func (c *Cache) Append(layerIdx int, k, v *tensor.Tensor) (View, error) {
	if err := c.checkLayer("Append", layerIdx); err != nil {
		return View{}, err
	}
	l := &c.layers[layerIdx]
	if l.st == nil {
		return View{}, fmt.Errorf("kvcache: Append to layer %d, which shares layer %d's cache; call Shared(%d)", layerIdx, l.spec.SharedFrom, layerIdx)
	}
	if l.appended {
		return View{}, fmt.Errorf("kvcache: layer %d appended twice in one chunk", layerIdx)
	}
	for _, t := range []struct {
		name string
		t    *tensor.Tensor
	}{{"k", k}, {"v", v}} {
		// The label is built only for a mismatch: Append runs for every
		// layer of every decode step.
		if !tensor.ShapeMatches(t.t, tensor.F32, []int{c.n, l.spec.KVHeads, l.spec.HeadDim}) {
			return View{}, tensor.CheckShape(fmt.Sprintf("kvcache: layer %d %s", layerIdx, t.name), t.t, tensor.F32, c.n, l.spec.KVHeads, l.spec.HeadDim)
		}
		if want := c.n * l.spec.KVHeads * l.spec.HeadDim * 4; len(t.t.Data) < want {
			return View{}, fmt.Errorf("kvcache: layer %d %s: %s holds %d bytes, want %d", layerIdx, t.name, t.t, len(t.t.Data), want)
		}
	}
	w := c.window(l.spec)
	exact := false
	limit, headroom := 0, 0
	if l.spec.Window == 0 {
		exact = c.maxKV > 0 && l.st.live()+c.n == c.maxKV
		limit = c.maxKV
		if c.n > 1 {
			// A prompt chunk that grows a global layer leaves a step of
			// room, so the answer's first tokens do not move the whole
			// cache into fresh memory (page faults and all) right after a
			// prompt that filled it: ~0.3 s after 2048 tokens of Gemma 3n.
			headroom = c.step
		}
	} else {
		exact = l.st.m == w-1
	}
	l.st.prepare(c.n, exact, limit, headroom)
	if c.n == 1 {
		l.st.dropSpare()
	}
	if err := l.st.write(k, v, c.n, c.offset); err != nil {
		return View{}, fmt.Errorf("kvcache: layer %d: %w", layerIdx, err)
	}
	view, err := c.makeView(l, w)
	if err != nil {
		// Roll the rows back so the layer stays consistent.
		l.st.dropNewest(c.n)
		return View{}, fmt.Errorf("kvcache: layer %d: %w", layerIdx, err)
	}
	l.appended, l.view = true, view
	return view, nil
}

func (c *Cache) makeView(l *layer, w int) (View, error) {
	kb, vb, spans := l.st.view()
	mask, err := tensor.NewMask(c.offset, c.n, spans, w)
	if err != nil {
		return View{}, fmt.Errorf("internal error building the mask: %w", err)
	}
	rows := l.st.live()
	shape := []int{rows, l.spec.KVHeads, l.spec.HeadDim}
	kt, err := tensor.FromBytes(tensor.F32, shape, kb)
	if err != nil {
		return View{}, fmt.Errorf("internal error building K: %w", err)
	}
	vt, err := tensor.FromBytes(tensor.F32, shape, vb)
	if err != nil {
		return View{}, fmt.Errorf("internal error building V: %w", err)
	}
	if mask.KeyLen() != rows {
		return View{}, fmt.Errorf("internal error: mask has %d keys, view %d", mask.KeyLen(), rows)
	}
	if ko, vo := l.st.handles(); ko != nil && vo != nil {
		kt.Handle, vt.Handle = ko.Handle, vo.Handle
	}
	return View{K: kt, V: vt, Mask: mask}, nil
}

// appendCopy is the op Append records row copies with: Options.Copy when
// storage comes from Options.Alloc and is not quantized, else nil.
func (c *Cache) appendCopy(opts Options) func(dst, src *tensor.Tensor) error {
	if opts.Copy == nil || opts.Alloc == nil || opts.encoding() != encF32 {
		return nil
	}
	return opts.Copy
}

// AppendsOnBackend reports whether Append records its row copies through
// Options.Copy (see there) rather than reading k and v on the host: when
// true, an asynchronous backend need not Sync before Append.
func (c *Cache) AppendsOnBackend() bool { return c.copyRows }

// Shared returns, for a layer with SharedFrom >= 0, exactly the view its
// source layer got from Append in the open chunk. The source must have
// appended first.
func (c *Cache) Shared(layerIdx int) (View, error) {
	if err := c.checkLayer("Shared", layerIdx); err != nil {
		return View{}, err
	}
	l := &c.layers[layerIdx]
	if l.st != nil {
		return View{}, fmt.Errorf("kvcache: Shared(%d): layer %d owns its cache; call Append", layerIdx, layerIdx)
	}
	src := &c.layers[l.spec.SharedFrom]
	if !src.appended {
		return View{}, fmt.Errorf("kvcache: Shared(%d): source layer %d has not appended this chunk yet", layerIdx, l.spec.SharedFrom)
	}
	return src.view, nil
}

// SharedTail is Shared for only the last rows query rows of the open
// chunk: the same keys and values, under a mask whose queries are at
// positions Offset()+n-rows .. Offset()+n-1 for a chunk of n. A shared
// layer writes nothing to the cache, so when nothing after it reads its
// other rows (Gemma 3n's KV-shared layers, when only the last token's
// logits are wanted) it may run on the tail alone; the rows it does run
// see exactly the keys they would in the whole chunk. rows must be in
// [1, n]; rows == n is Shared.
func (c *Cache) SharedTail(layerIdx, rows int) (View, error) {
	v, err := c.Shared(layerIdx)
	if err != nil {
		return View{}, err
	}
	if rows < 1 || rows > c.n {
		return View{}, fmt.Errorf("kvcache: SharedTail(%d, %d): the open chunk has %d rows; want 1 to %d", layerIdx, rows, c.n, c.n)
	}
	v.Mask.QueryStart += c.n - rows
	v.Mask.Rows = rows
	return v, nil
}

func (c *Cache) checkLayer(op string, i int) error {
	if i < 0 || i >= len(c.layers) {
		return fmt.Errorf("kvcache: %s: layer %d out of range [0, %d)", op, i, len(c.layers))
	}
	if !c.open {
		return fmt.Errorf("kvcache: %s(%d) without an open chunk; call Begin first", op, i)
	}
	return nil
}

// Commit ends the open chunk: Offset advances by its length and sliding
// layers drop to the window-1 keys the next token needs. Every layer that
// owns its cache must have appended.
func (c *Cache) Commit() error {
	if !c.open {
		return fmt.Errorf("kvcache: Commit without an open chunk; call Begin first")
	}
	var missing []string
	for i := range c.layers {
		if l := &c.layers[i]; l.st != nil && !l.appended {
			missing = append(missing, fmt.Sprint(i))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kvcache: Commit: layers %s did not append this chunk (Abort to drop it)", strings.Join(missing, ", "))
	}
	c.offset += c.n
	c.closeChunk()
	c.trimSliding()
	return nil
}

// Abort drops the open chunk: rows appended since Begin are removed and
// Offset stays. Trimming done by Begin is kept. Without an open chunk it
// does nothing.
func (c *Cache) Abort() {
	if !c.open {
		return
	}
	for i := range c.layers {
		if l := &c.layers[i]; l.st != nil && l.appended {
			l.st.dropNewest(c.n)
		}
	}
	c.trimEnd = min(c.trimEnd, c.offset)
	c.closeChunk()
}

func (c *Cache) closeChunk() {
	c.open, c.n = false, 0
	for i := range c.layers {
		c.layers[i].appended = false
		c.layers[i].view = View{}
	}
}

// SetMaxKV changes the cap (0 = unlimited). Nothing is dropped now: the
// next Begin trims to the new cap and reports it. Sliding windows follow
// (min(Window, MaxKV)) from the next Begin too. It fails, changing
// nothing, when the pins and the sink would use more than half the new
// cap (see SetPins).
func (c *Cache) SetMaxKV(n int) error {
	if n < 0 {
		return fmt.Errorf("kvcache: max-kv-size %d: want 0 (unlimited) or a positive number of tokens", n)
	}
	if c.open {
		return fmt.Errorf("kvcache: SetMaxKV(%d) while a chunk is open; call it between chunks", n)
	}
	if err := c.checkFixed(n, c.sinkFor(n, c.sink), c.pins); err != nil {
		return err
	}
	c.maxKV = n
	return nil
}

// SetSink changes the requested sink to n tokens (0 = none), e.g. to the
// system prompt's length. It applies from the next trim; after a trim the
// sink can shrink but not grow back (see Sink). With pins it fails,
// changing nothing, when sink and pins would use more than half of MaxKV.
func (c *Cache) SetSink(n int) error {
	if n < 0 {
		return fmt.Errorf("kvcache: sink %d: want 0 (none) or a positive number of tokens", n)
	}
	if c.open {
		return fmt.Errorf("kvcache: SetSink(%d) while a chunk is open; call it between chunks", n)
	}
	if err := c.checkFixed(c.maxKV, c.sinkFor(c.maxKV, n), c.pins); err != nil {
		return err
	}
	c.sink = n
	return nil
}

// Reset empties the cache (Offset 0) and frees its storage; MaxKV and the
// sink setting stay, the pins and the anchor go (their tokens are gone).
// An open chunk is dropped.
func (c *Cache) Reset() {
	c.closeChunk()
	c.pins, c.anchor = nil, -1
	for i := range c.layers {
		if st := c.layers[i].st; st != nil {
			st.reset()
		}
	}
	for _, sc := range c.scratches {
		sc.free()
	}
	c.offset, c.trimmed, c.didTrim, c.sinkKept, c.trimEnd = 0, 0, false, 0, 0
}

// Stats returns a snapshot of sizes and memory.
func (c *Cache) Stats() Stats {
	s := Stats{Offset: c.offset, MaxKV: c.maxKV, Sink: c.Sink(), Trimmed: c.trimmed, Anchor: c.anchor, Layers: make([]LayerStats, len(c.layers))}
	liveSet := false
	for i := range c.layers {
		l := &c.layers[i]
		ls := LayerStats{SharedFrom: l.spec.SharedFrom, Window: c.window(l.spec)}
		owner := l
		if l.st == nil {
			ls.Kind = "shared"
			owner = &c.layers[l.spec.SharedFrom]
		} else {
			ls.Kind = "global"
			if l.spec.Window > 0 {
				ls.Kind = "sliding"
			}
			ls.Capacity = l.st.capRows
			ls.Slack = l.st.sl.m
			ls.Bytes = l.st.bytes()
			s.Bytes += ls.Bytes
			s.LiveBytes += 2 * int64(l.st.live()) * int64(l.st.rowBytes)
			if !liveSet && (l.spec.Window == 0 || !c.hasGlobal) {
				s.Live = l.st.live()
				s.Spans = l.st.positions()
				s.Pinned = overlap(s.Spans, c.pins, c.Sink())
				liveSet = true
			}
		}
		ls.Live = owner.st.live()
		if ls.Window > 0 && (s.Window == 0 || ls.Window < s.Window) {
			s.Window = ls.Window
		}
		s.Layers[i] = ls
	}
	for _, sc := range c.scratches {
		s.ScratchBytes += sc.bytes()
	}
	s.Bytes += s.ScratchBytes
	return s
}

// overlap counts the positions at or after from that lie in both a and b
// (sorted, merged runs).
func overlap(a, b []tensor.Span, from int) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		lo := max(a[i].Start, b[j].Start, from)
		ae, be := a[i].Start+a[i].Len, b[j].Start+b[j].Len
		if hi := min(ae, be); hi > lo {
			n += hi - lo
		}
		if ae <= be {
			i++
		} else {
			j++
		}
	}
	return n
}
