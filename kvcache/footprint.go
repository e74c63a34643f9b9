package kvcache

// TokenBytes is the storage one token's keys and values take in a layer
// that owns its cache, in the format of opts: 2 x KVHeads x HeadDim x 4
// bytes as float32, x 2 with Float16, or with Quantized8 2 x KVHeads x
// (HeadDim + 4) (int8 values and one float32 scale per head). The
// float32 scratch Float16 and Quantized8 views are decoded into is not
// per token (see Footprint).
func TokenBytes(spec LayerSpec, opts Options) int64 {
	return 2 * int64(opts.encoding().rowBytes(spec.KVHeads, spec.HeadDim))
}

// GlobalTokenBytes is what one more token of MaxKV costs: TokenBytes summed
// over the global layers that own their cache (sliding layers hold at most
// their window whatever the cap; shared layers hold nothing).
// With Float16 or Quantized8 the float32 scratch the views are decoded
// into grows by one row per token too (a row of the widest global layer
// for the shared scratch, one per global layer others share from), so it
// is included.
func GlobalTokenBytes(specs []LayerSpec, opts Options) int64 {
	sources := map[int]bool{}
	for _, sp := range specs {
		if sp.SharedFrom >= 0 {
			sources[sp.SharedFrom] = true
		}
	}
	var n int64
	widest := 0
	for i, sp := range specs {
		if sp.SharedFrom >= 0 || sp.Window > 0 {
			continue
		}
		n += TokenBytes(sp, opts)
		if opts.encoding() == encF32 {
			continue
		}
		width := sp.KVHeads * sp.HeadDim * 4
		if sources[i] {
			n += 2 * int64(width)
		} else {
			widest = max(widest, width)
		}
	}
	return n + 2*int64(widest)
}

// Footprint is the memory (as Stats.Bytes counts it) a cache of these
// layers with options opts holds once it has seen more than maxKV tokens
// and decodes at the cap maxKV > 0: each owning global layer maxKV rows,
// each owning sliding layer its effective window min(Window, maxKV) plus
// its rewind slack, and with Float16 or Quantized8 the float32 scratch
// the views are decoded into, exactly as large as the views (one shared by
// the layers no other layer reads, one per layer others share from; a long
// prefill chunk may leave it larger until a later chunk releases it). It
// is what a suggested --max-kv-size would cost.
func Footprint(specs []LayerSpec, opts Options, maxKV int) int64 {
	if maxKV <= 0 {
		return 0
	}
	slackRows := opts.RewindSlack
	switch {
	case slackRows == 0:
		slackRows = DefaultRewindSlack
	case slackRows < 0:
		slackRows = 0
	}
	sources := map[int]bool{}
	for _, sp := range specs {
		if sp.SharedFrom >= 0 {
			sources[sp.SharedFrom] = true
		}
	}
	var total int64
	shared := 0 // largest view among the layers sharing one scratch, in bytes
	for i, sp := range specs {
		if sp.SharedFrom >= 0 {
			continue
		}
		rows := maxKV
		slack := 0
		if sp.Window > 0 {
			rows = min(sp.Window, maxKV)
			slack = slackRows
		}
		total += int64(rows+slack) * TokenBytes(sp, opts)
		if opts.encoding() == encF32 {
			continue
		}
		width := sp.KVHeads * sp.HeadDim * 4
		if sources[i] {
			total += 2 * int64(rows*width)
		} else {
			shared = max(shared, rows*width)
		}
	}
	return total + 2*int64(shared)
}
