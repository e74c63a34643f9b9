package tensor

import "math"

// ArgmaxOps is implemented by backends that can pick a row's largest value
// where they computed it (the GPU backends), so greedy decoding copies one
// index to the host per step instead of a vocabulary-sized row of logits.
// Models use it through a type assertion (models/blocks RunChunkArgmax);
// on other backends they take ArgmaxF32 of the row on the host, which
// gives the same index.
type ArgmaxOps interface {
	// Argmax writes into dst (I32 or U32 of x.Rows() values) the index of
	// the largest value of each row of x, as ArgmaxF32 chooses it.
	Argmax(dst, x *Tensor) error
	// Discard tells the backend that the host will not read t's Data
	// after the next Sync (its values only feed ops recorded before it,
	// such as the logits an Argmax reads), so a backend that copies
	// results back to host memory may skip t's and leave Data stale.
	Discard(t *Tensor)
}

// ArgmaxF32 is the index of the largest value of x: the first one on ties;
// only values above -Inf count (NaN never does), and 0 when there is none.
// It is greedy decoding's choice (engine's sampler at temperature 0).
func ArgmaxF32(x []float32) int {
	best := 0
	bv := float32(math.Inf(-1))
	for i, v := range x {
		if v > bv {
			best, bv = i, v
		}
	}
	return best
}
