// Package kvcache holds per-layer key/value caches and is the single source
// of truth for attention masks: appending a chunk returns its keys, values
// and mask together, built from the live window.
//
// It may import tensor only.
//
// # Use
//
// One Cache serves one sequence across all layers of a model. For every
// chunk (a prefill chunk of n tokens, or a decode step of 1):
//
//	ev, err := c.Begin(n)           // trims all layers in lockstep; ev reports it
//	pos0 := c.Offset()              // RoPE positions pos0 .. pos0+n-1
//	for each layer i:
//	    rotate q, k at pos0
//	    view, err := c.Append(i, k, v)   // owning layers
//	    view, err := c.Shared(i)         // layers with SharedFrom >= 0
//	    (or c.SharedTail(i, rows): the same view for the chunk's last rows)
//	    attention(q, view.K, view.V, view.Mask)
//	err = c.Commit()                // Offset += n
//
// Offset() does not move between Begin and Commit, so every layer of a
// chunk, shared-KV layers included, uses the same RoPE positions (as
// transformers does; mlx-lm rotates Gemma 3n's shared layers after the
// producer's update, mlx-lm issue #1674). The engine clamps its prefill
// chunk to MaxChunk() before Begin.
//
// On failure in the middle of a chunk call Abort (drops the chunk's rows,
// Offset unchanged). Errors are returned, never panics: bad shapes, Append
// on a shared layer, appending twice, Shared before its source appended,
// Commit without Begin or with a layer missing, Begin while a chunk is open.
//
// # Positions and masks
//
// Offset() counts committed tokens; it never decreases except on Reset
// and Rewind, and trimming never changes it. Every stored key keeps its absolute
// position. A View's K and V rows are in storage order and Mask.Keys lists
// their absolute positions in that same order as runs (tensor.Span); they
// need not be contiguous or sorted (sink run, then a ring buffer's two runs).
// Mask.QueryStart is Offset() and Mask.Rows is n; query row q at position
// Offset()+q may see key position p iff p <= Offset()+q and, for a sliding
// layer, Offset()+q-p < Mask.Window. Mask.KeyLen() == K.Shape[0] always, and
// every row sees at least its own key, so no row is fully masked.
//
// # Global layers and MaxKV trimming
//
// A global layer (Window 0) holds sink ∪ recent: the first Sink() positions
// and a run of the most recent ones. With MaxKV > 0, Begin(n) drops the
// oldest recent keys (never the sink) from every global layer at once until
// live+n <= MaxKV, and returns a TrimEvent (Dropped == 0: nothing trimmed).
// So a global view never holds more than MaxKV keys. Begin fails, changing
// nothing, when n > MaxChunk() = MaxKV - Sink(); the message names the
// largest chunk that fits. SetMaxKV takes effect at the next Begin (lowering
// it mid-conversation trims then).
//
// The sink is Options.Sink tokens (0 means DefaultSink = 4, NoSink means
// none; SetSink changes it, e.g. to the system prompt length). The effective
// sink, Sink(), is at most MaxKV/2, so at least half the cap is left for
// recent tokens; once a trim has happened the sink can shrink (its newest
// tokens become ordinary, oldest-first trimmable keys) but never grow back.
//
// # Pins
//
// SetPins marks absolute position runs (a pinned message) that trimming
// never drops either: a global layer then holds sink ∪ pinned ∪ recent,
// and a trim drops the d oldest keys outside the sink and the pins. The
// pins are positions, so they may be set before their tokens are appended
// (a prompt about to be prefilled); a position trimmed before it was
// pinned stays trimmed. The sink and the pins together may use at most
// half of MaxKV: SetPins, and a SetMaxKV or SetSink that would break that,
// fail with an error naming the numbers. MaxChunk() = MaxKV - Sink() -
// Pinned(), so a chunk always fits. Unpinned keys become ordinary keys, the
// oldest, trimmed first. Rewind drops the pins at positions it drops (their
// tokens are gone), and it may go back into a pinned run that the newest
// keys continue without a gap. Stats.Pinned counts live pinned keys and
// Stats.Spans lists the live positions (sink, pinned runs, recent window),
// for a UI that shows which messages are still attended. Storage: a global
// layer keeps its sink and the pinned keys a trim has passed in a kept
// region in front of its ring; crossing a pin (or releasing one) rebuilds
// the layer's rows once, every other trim just advances the ring.
//
// # Sliding layers
//
// A sliding layer (Window w > 0) has the effective window
// we = min(w, MaxKV) (MaxKV > 0), which is also its Mask.Window. Between
// chunks it keeps at most we-1 keys, no sink. Begin(n) keeps those we-1
// keys and Append adds the n chunk keys, so the view holds up to we-1+n keys
// and the chunk's first row sees a full window; the mask stops every row at
// we keys. At decode (n = 1) the view is exactly the last we keys. Commit
// drops back to we-1. Because the window never depends on how the prompt was
// chunked, sliding attention is the same for any chunking. While a chunk is
// open a sliding layer may hold more than MaxKV keys (we-1+n), but no query
// row ever sees more than we <= MaxKV of them. Sliding layers keep no sink
// and do not report trims: dropping keys outside the window is their normal
// operation.
//
// # Rewind
//
// Rewind(n) drops the last n committed tokens from every layer in
// lockstep, so Offset() goes back to T = Offset()-n and the next chunk is
// appended and rotated at T: the engine keeps the longest common prefix of
// the fed tokens and a new prompt (mlx-lm's trim_prompt_cache, llama.cpp's
// common-prefix reuse). MaxRewind() says how far it can go and CanRewind(n)
// whether n is possible; otherwise Rewind fails, changing nothing, with a
// message naming the limiting layer, and the caller resets instead.
//
// Global layers drop the rows of positions [T, Offset()); those must still
// be live, so a rewind into keys already trimmed (or into the sink after a
// trim) is impossible. Sliding layers must get back the window-1 keys
// before T, some of which had slid out: each sliding layer copies the keys
// it drops into a slack ring of Options.RewindSlack rows (default
// DefaultRewindSlack = 256; NoRewindSlack for none), out of every view, and
// Rewind puts the needed ones back in front of its window. So a cache with
// sliding layers can rewind at most RewindSlack tokens once their windows
// are full (exactly that many in steady state). The slack costs
// RewindSlack rows of K and V per owning sliding layer in the storage
// format (for F32, 2*RewindSlack*KVHeads*HeadDim*4 bytes; 1 MiB for 2 KV
// heads of 256), allocated at the layer's first dropped key, freed by
// Reset, counted in Stats.Bytes and LayerStats.Slack. Saving costs a copy
// of each key as it leaves the window (one row per layer per decode step).
//
// Anchor marks the current Offset A so that Rewind can go back to it from
// any distance (CanRewind(Offset()-A), AnchorRewind), beyond MaxRewind,
// while the global layers still hold every position from A on: each
// owning sliding layer copies the window-1 keys before A aside (counted in
// Stats.Bytes). A document summarized in pieces anchors after the shared
// prompt prefix and rewinds there for every piece, so the prefix is
// prefilled once. One anchor at a time; a rewind to before it, ClearAnchor
// and Reset drop it.
//
// What is exact: Rewind never undoes a trim. If no global trim happened
// since the chunk holding position T began, i.e. n <= ExactRewind()
// (always when nothing was ever trimmed, as with MaxKV 0), then, with MaxKV
// and the sink unchanged since, the cache is precisely in the state it had
// at Offset T (inside a chunk: the state that chunk would have left had it
// ended at T): the same keys, rows and masks, so later chunks give what a
// fresh cache fed the same tokens in the same chunks gives. For a larger n
// (up to MaxRewind) the keys trimmed since T stay trimmed: the global
// layers keep the sink and the recent keys before T, fewer than a cache fed
// only the first T tokens would hold, and Stats.Trimmed, the sink and
// Offset = Live + Trimmed stay consistent. That state satisfies every
// invariant (it is the state a cache reaches when its cap was briefly
// lowered); it just attends less old context, as continuing a trimmed
// cache does.
//
// # Shared layers
//
// A layer with SharedFrom = j >= 0 has no storage; Shared returns exactly the
// View layer j got from Append in the same chunk (same tensors, same mask).
// j must own its cache and have the same KVHeads, HeadDim and Window.
//
// # Memory
//
// Each owning layer stores K and V in two buffers of capacity rows: a sink
// region and a ring. Capacity grows in Options.Step-token steps (never per
// token). When a layer reaches its steady state (global: live+n == MaxKV;
// sliding: we-1 keys kept) the capacity is set to exactly live+n, so the ring
// is full after each append and trimming plus appending copies nothing but
// the new rows. Capacity shrinks when it exceeds the need by more than
// max(2*Step, need), e.g. after MaxKV is lowered; Reset frees everything.
// Two rules keep the first decoded token after a long prompt from moving
// the cache into fresh memory (page faults cost 0.06-0.3 s on Gemma 3n
// E2B after 2048 tokens): a prompt chunk that grows a global layer adds
// one Step of room, and a sliding layer grown by a chunk keeps its
// window-sized buffers until the first decoded token shrinks it back into
// them (counted in Stats, dropped once decoding starts).
// Stats reports bytes per layer and in total, live keys, Offset (seen),
// trimmed positions and the windows.
//
// With Options.Alloc (e.g. a GPU backend's Alloc) the buffers come from the
// backend and View tensors carry their Handle, so the backend can bind keys
// and values in place; storage is written only by Append, so an asynchronous
// backend that syncs before each Append never sees a row change under a
// recorded op.
//
// Rows are float32 by default (2 x KVHeads x HeadDim x 4 bytes per token),
// the format views hand to attention, read in place. With Options.Float16
// they are stored as IEEE half floats (x 2 bytes), with
// Options.Quantized8 as int8 with one float32 absmax scale per token and
// head (2 x KVHeads x (HeadDim+4)); Append then decodes the whole view
// into a float32 scratch, through Options.DecodeF16 or
// Options.DecodeInt8Rows when set (models/blocks.NewCache passes a
// backend's tensor.HalfDecoder or tensor.Int8RowDecoder: on the CPU, over
// every thread with F16C/NEON or AVX2, 3-6x faster than the lookup table
// or Go loop used otherwise; BenchmarkDecodeStepFormats). The layers no other layer reads share one
// scratch (a layer attends its view before the next layer appends); a
// layer that others share from has its own. A scratch is as large as the
// views need (rounded up to Step rows, but never beyond what the store
// asking holds, so a small cap has a small scratch) and is freed at a
// Begin once it is more than twice what the views since the last Begin
// needed. Stats.ScratchBytes counts them. So with a few layers 8-bit
// storage holds less than 16-bit, and 16-bit less than float32, at every
// cap (TestSmallerFormatsHoldLess); 8-bit is always below 16-bit, whose
// scratch is the same.
// TokenBytes, GlobalTokenBytes and Footprint give the bytes per token and
// the memory of a cache full at a given cap, from the layer specs, so a UI
// can say what a larger --max-kv-size would cost.
//
// # Validity of views
//
// View tensors alias cache storage or scratch. They stay valid until the
// next Begin, Commit, Abort, Rewind, SetMaxKV, SetSink or Reset, or the
// next Append to the same layer; with Float16 or Quantized8, the view of a layer no
// other layer shares from only until the next Append to any layer (the
// shared scratch). A Cache is not safe for concurrent use.
package kvcache
