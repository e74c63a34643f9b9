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
// Offset() counts committed tokens; it never decreases (except on Reset)
// and trimming never changes it. Every stored key keeps its absolute
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
// Stats reports bytes per layer and in total, live keys, Offset (seen),
// trimmed positions and the windows.
//
// With Options.Alloc (e.g. a GPU backend's Alloc) the buffers come from the
// backend and View tensors carry their Handle, so the backend can bind keys
// and values in place; storage is written only by Append, so an asynchronous
// backend that syncs before each Append never sees a row change under a
// recorded op.
//
// With Options.Quantized8 rows are stored as int8 with one float32 absmax
// scale per token and head; Append dequantizes the whole view into a
// per-layer F32 scratch, so the API and the aliasing rules are unchanged.
//
// # Validity of views
//
// View tensors alias cache storage or scratch. They stay valid until the
// next Begin, Commit, Abort, SetMaxKV, SetSink or Reset, or the next Append
// to the same layer. A Cache is not safe for concurrent use.
package kvcache
