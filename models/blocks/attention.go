package blocks

import (
	"fmt"

	"mlxchat/kvcache"
	"mlxchat/tensor"
)

// Attention is a grouped-query self-attention block:
//
//	q = rope(qnorm(x·Wqᵀ)), k = rope(knorm(x·Wkᵀ)), v = vnorm(x·Wvᵀ)
//	out = attention(q, K, V, mask)·Woᵀ
//
// with K, V and the mask from kvcache (its own cache, or the cache of the
// layer it shares). Norms are per head over HeadDim; a nil norm weight with
// VNorm set is an unweighted RMSNorm, as Gemma 3n's v_norm.
type Attention struct {
	// Layer is the index of this layer in the cache.
	Layer int
	// Heads, KVHeads and HeadDim give the projection shapes.
	Heads, KVHeads, HeadDim int
	// Q, K, V, O are the projections; K and V are nil for a layer that
	// reads another layer's cache (Shared).
	Q, K, V, O *tensor.Matrix
	// QNorm and KNorm are per-head RMSNorm weights (nil: no norm).
	QNorm, KNorm *tensor.Tensor
	// VNorm applies an unweighted per-head RMSNorm to the values.
	VNorm bool
	// Eps is the RMSNorm epsilon.
	Eps float32
	// Rope is the rotary table of this layer's kind (shared by every
	// layer of that kind); nil means no positional rotation (NoPE layers).
	Rope *tensor.Rotary
	// Scale multiplies the scores before the softmax.
	Scale float32
	// Shared is true when the layer reads the cache of another layer.
	Shared bool
}

// Forward writes the block's output for x [n, hidden] into out
// [n, hidden]: the chunk occupies positions cache.Offset()..+n-1 of the
// open chunk (cache.Begin(n) already called).
func (a *Attention) Forward(be tensor.Backend, ar *Arena, cache *kvcache.Cache, out, x *tensor.Tensor) error {
	n := x.Rows()
	pos0 := cache.Offset()
	q := ar.Get(n, a.Heads, a.HeadDim)
	if err := be.MatMul(Reshape(q, n, a.Heads*a.HeadDim), x, a.Q); err != nil {
		return fmt.Errorf("layer %d q_proj: %w", a.Layer, err)
	}
	if a.QNorm != nil {
		qh := Reshape(q, n*a.Heads, a.HeadDim)
		if err := be.RMSNorm(qh, qh, a.QNorm, a.Eps); err != nil {
			return fmt.Errorf("layer %d q_norm: %w", a.Layer, err)
		}
	}
	if a.Rope != nil {
		if err := be.RoPE(q, pos0, a.Rope); err != nil {
			return fmt.Errorf("layer %d rope(q): %w", a.Layer, err)
		}
	}
	var view kvcache.View
	var err error
	if a.Shared {
		view, err = cache.Shared(a.Layer)
	} else {
		k := ar.Get(n, a.KVHeads, a.HeadDim)
		v := ar.Get(n, a.KVHeads, a.HeadDim)
		if err := be.MatMul(Reshape(k, n, a.KVHeads*a.HeadDim), x, a.K); err != nil {
			return fmt.Errorf("layer %d k_proj: %w", a.Layer, err)
		}
		if err := be.MatMul(Reshape(v, n, a.KVHeads*a.HeadDim), x, a.V); err != nil {
			return fmt.Errorf("layer %d v_proj: %w", a.Layer, err)
		}
		kh, vh := Reshape(k, n*a.KVHeads, a.HeadDim), Reshape(v, n*a.KVHeads, a.HeadDim)
		if a.KNorm != nil {
			if err := be.RMSNorm(kh, kh, a.KNorm, a.Eps); err != nil {
				return fmt.Errorf("layer %d k_norm: %w", a.Layer, err)
			}
		}
		if a.VNorm {
			if err := be.RMSNorm(vh, vh, nil, a.Eps); err != nil {
				return fmt.Errorf("layer %d v_norm: %w", a.Layer, err)
			}
		}
		if a.Rope != nil {
			if err := be.RoPE(k, pos0, a.Rope); err != nil {
				return fmt.Errorf("layer %d rope(k): %w", a.Layer, err)
			}
		}
		if !be.Synchronous() && !cache.AppendsOnBackend() { // the cache copies host bytes
			if err := be.Sync(); err != nil {
				return fmt.Errorf("layer %d: %w", a.Layer, err)
			}
		}
		view, err = cache.Append(a.Layer, k, v)
	}
	if err != nil {
		return fmt.Errorf("layer %d: %w", a.Layer, err)
	}
	o := ar.Get(n, a.Heads, a.HeadDim)
	if err := be.Attention(o, q, view.K, view.V, view.Mask, a.Scale); err != nil {
		return fmt.Errorf("layer %d attention: %w", a.Layer, err)
	}
	if err := be.MatMul(out, Reshape(o, n, a.Heads*a.HeadDim), a.O); err != nil {
		return fmt.Errorf("layer %d o_proj: %w", a.Layer, err)
	}
	return nil
}

// WeightBytes is the number of weight bytes one token reads.
func (a *Attention) WeightBytes() int64 {
	n := int64(a.Q.Bytes() + a.O.Bytes())
	if !a.Shared {
		n += int64(a.K.Bytes() + a.V.Bytes())
		if a.KNorm != nil {
			n += int64(len(a.KNorm.Data))
		}
	}
	if a.QNorm != nil {
		n += int64(len(a.QNorm.Data))
	}
	return n
}
