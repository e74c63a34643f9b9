package models

import (
	"mlxchat/kvcache"
	"mlxchat/models/blocks"
	"mlxchat/tensor"
)

// Info describes a loaded model: model type, vocabulary, layers, context
// length, stop ids and the cache layout (see blocks.Info).
type Info = blocks.Info

// Model is a loaded language model that runs on a tensor.Backend.
//
// Forward runs ids (one chunk) through the model at cache.Offset(): it
// opens the chunk with cache.Begin (which trims the cache to its MaxKV, so
// callers that want the TrimEvent compare cache.Stats() before and after),
// appends to every layer and commits; on error the chunk is aborted. It
// returns logits [len(ids), VocabSize], or [1, VocabSize] for the last
// token when lastOnly is set, as F32 owned by the caller.
//
// Implementations may also implement io.Closer to release the checkpoint
// mapping.
type Model interface {
	// Config describes the model.
	Config() Info
	// NewCache returns an empty cache laid out for the model.
	NewCache(opts kvcache.Options) (*kvcache.Cache, error)
	// Forward runs one chunk; see the type's documentation.
	Forward(cache *kvcache.Cache, ids []int32, lastOnly bool) (*tensor.Tensor, error)
	// WeightBytes is the number of weight bytes read per decode token, the
	// numerator of the decode roofline.
	WeightBytes() int64
}

// Greedy is implemented by models that can return greedy decoding's next
// token without handing the logits to the caller: every model here (on
// GPU backends the index is taken on the GPU and only it is read back).
//
// ForwardArgmax runs one chunk exactly as Forward does and returns the
// index of the largest logit of the chunk's last token, as
// tensor.ArgmaxF32 chooses it (the first on ties, never NaN, 0 when no
// logit is above -Inf).
type Greedy interface {
	ForwardArgmax(cache *kvcache.Cache, ids []int32) (int32, error)
}
