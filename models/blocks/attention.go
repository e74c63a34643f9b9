package blocks

import (
	"fmt"

	"mlxchat/kvcache"
	"mlxchat/tensor"
)

// Attention is a grouped-query self-attention block:
//
//	q = rope(qnorm(x·Wqᵀ + bq)), k = rope(knorm(x·Wkᵀ + bk)), v = vnorm(x·Wvᵀ + bv)
//	out = attention(q, K, V, mask)·Woᵀ + bo
//
// with K, V and the mask from kvcache (its own cache, or the cache of the
// layer it shares). The q/k norms are RMSNorms per head over HeadDim
// (Gemma, Qwen3) or, with FullWidthQKNorm, over the whole projection before
// it is split into heads (OLMo 2/3); a nil norm weight with VNorm set is an
// unweighted per-head RMSNorm, as Gemma 3n's v_norm. Biases are optional.
type Attention struct {
	// Layer is the index of this layer in the cache.
	Layer int
	// Heads, KVHeads and HeadDim give the projection shapes.
	Heads, KVHeads, HeadDim int
	// Q, K, V, O are the projections; K and V are nil for a layer that
	// reads another layer's cache (Shared).
	Q, K, V, O *tensor.Matrix
	// QBias, KBias, VBias and OBias are F32 [1, out] biases (nil: none).
	QBias, KBias, VBias, OBias *tensor.Tensor
	// QNorm and KNorm are RMSNorm weights (nil: no norm): [HeadDim] per
	// head, or [Heads·HeadDim] and [KVHeads·HeadDim] with FullWidthQKNorm.
	QNorm, KNorm *tensor.Tensor
	// FullWidthQKNorm normalizes q and k over their whole width.
	FullWidthQKNorm bool
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
// open chunk (cache.Begin(n) already called). A Shared layer may also take
// only the chunk's last rows (kvcache.Cache.SharedTail): x's rows are
// then the chunk's last x.Rows() positions.
func (a *Attention) Forward(be tensor.Backend, ar *Arena, cache *kvcache.Cache, out, x *tensor.Tensor) error {
	n := x.Rows()
	pos0 := cache.Offset()
	var view kvcache.View
	if a.Shared {
		var err error
		if view, err = cache.SharedTail(a.Layer, n); err != nil {
			return fmt.Errorf("layer %d: %w", a.Layer, err)
		}
		pos0 = view.Mask.QueryStart
	}
	q := ar.Get(n, a.Heads, a.HeadDim)
	if err := project(be, Reshape(q, n, a.Heads*a.HeadDim), x, a.Q, a.QBias); err != nil {
		return fmt.Errorf("layer %d q_proj: %w", a.Layer, err)
	}
	if a.QNorm != nil {
		if err := a.qkNorm(be, q, n, a.Heads, a.QNorm); err != nil {
			return fmt.Errorf("layer %d q_norm: %w", a.Layer, err)
		}
	}
	if a.Rope != nil {
		if err := be.RoPE(q, pos0, a.Rope); err != nil {
			return fmt.Errorf("layer %d rope(q): %w", a.Layer, err)
		}
	}
	if !a.Shared {
		k := ar.Get(n, a.KVHeads, a.HeadDim)
		v := ar.Get(n, a.KVHeads, a.HeadDim)
		if err := project(be, Reshape(k, n, a.KVHeads*a.HeadDim), x, a.K, a.KBias); err != nil {
			return fmt.Errorf("layer %d k_proj: %w", a.Layer, err)
		}
		if err := project(be, Reshape(v, n, a.KVHeads*a.HeadDim), x, a.V, a.VBias); err != nil {
			return fmt.Errorf("layer %d v_proj: %w", a.Layer, err)
		}
		vh := Reshape(v, n*a.KVHeads, a.HeadDim)
		if a.KNorm != nil {
			if err := a.qkNorm(be, k, n, a.KVHeads, a.KNorm); err != nil {
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
		var err error
		if view, err = cache.Append(a.Layer, k, v); err != nil {
			return fmt.Errorf("layer %d: %w", a.Layer, err)
		}
	}
	o := ar.Get(n, a.Heads, a.HeadDim)
	if err := be.Attention(o, q, view.K, view.V, view.Mask, a.Scale); err != nil {
		return fmt.Errorf("layer %d attention: %w", a.Layer, err)
	}
	if err := project(be, out, Reshape(o, n, a.Heads*a.HeadDim), a.O, a.OBias); err != nil {
		return fmt.Errorf("layer %d o_proj: %w", a.Layer, err)
	}
	return nil
}

// qkNorm applies the q or k norm to t [n, heads, HeadDim] in place.
func (a *Attention) qkNorm(be tensor.Backend, t *tensor.Tensor, n, heads int, w *tensor.Tensor) error {
	rows := Reshape(t, n*heads, a.HeadDim)
	if a.FullWidthQKNorm {
		rows = Reshape(t, n, heads*a.HeadDim)
	}
	return be.RMSNorm(rows, rows, w, a.Eps)
}

// project computes dst = x·mᵀ (+ bias, a broadcast row, when not nil).
func project(be tensor.Backend, dst, x *tensor.Tensor, m *tensor.Matrix, bias *tensor.Tensor) error {
	if err := be.MatMul(dst, x, m); err != nil {
		return err
	}
	if bias != nil {
		return be.Add(dst, dst, bias)
	}
	return nil
}

// WeightBytes is the number of weight bytes one token reads.
func (a *Attention) WeightBytes() int64 {
	n := int64(a.Q.Bytes()+a.O.Bytes()) + tensorBytes(a.QNorm, a.QBias, a.OBias)
	if !a.Shared {
		n += int64(a.K.Bytes()+a.V.Bytes()) + tensorBytes(a.KNorm, a.KBias, a.VBias)
	}
	return n
}

// tensorBytes adds up the data of the non-nil tensors.
func tensorBytes(ts ...*tensor.Tensor) int64 {
	var n int64
	for _, t := range ts {
		if t != nil {
			n += int64(len(t.Data))
		}
	}
	return n
}
