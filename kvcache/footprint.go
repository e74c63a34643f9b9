package kvcache

// TokenBytes is the storage one token's keys and values take in a layer
// that owns its cache: 2 x KVHeads x HeadDim x 4 bytes as F32, or with
// Quantized8 2 x KVHeads x (HeadDim + 4) (int8 values and one float32 scale
// per head).
func TokenBytes(spec LayerSpec, quantized8 bool) int64 {
	if quantized8 {
		return 2 * int64(spec.KVHeads) * int64(spec.HeadDim+4)
	}
	return 2 * int64(spec.KVHeads) * int64(spec.HeadDim) * 4
}

// GlobalTokenBytes is what one more token of MaxKV costs: TokenBytes summed
// over the global layers that own their cache (sliding layers hold at most
// their window whatever the cap; shared layers hold nothing).
func GlobalTokenBytes(specs []LayerSpec, quantized8 bool) int64 {
	var n int64
	for _, sp := range specs {
		if sp.SharedFrom < 0 && sp.Window == 0 {
			n += TokenBytes(sp, quantized8)
		}
	}
	return n
}

// Footprint is the memory (as Stats.Bytes counts it) a cache of these
// layers with options opts holds once it has seen more than maxKV tokens
// and decodes at the cap maxKV > 0: each owning global layer maxKV rows,
// each owning sliding layer its effective window min(Window, maxKV) plus
// its rewind slack, and with Quantized8 the float32 scratch the views are
// dequantized into (one shared by the layers no other layer reads, one per
// layer others share from; a long prefill chunk may leave it larger until
// a later chunk releases it). It is what a suggested --max-kv-size would
// cost.
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
	widest := 0
	for _, sp := range specs {
		if sp.SharedFrom >= 0 {
			sources[sp.SharedFrom] = true
		}
		widest = max(widest, sp.KVHeads*sp.HeadDim*4)
	}
	step := opts.Step
	if step == 0 {
		step = DefaultStep
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
		total += int64(rows+slack) * TokenBytes(sp, opts.Quantized8)
		if !opts.Quantized8 {
			continue
		}
		width := sp.KVHeads * sp.HeadDim * 4
		if sources[i] {
			total += 2 * int64(roundUp(rows*width, step*width))
		} else {
			shared = max(shared, rows*width)
		}
	}
	if opts.Quantized8 {
		total += 2 * int64(roundUp(shared, step*widest))
	}
	return total
}
