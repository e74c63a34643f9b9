package blocks

import (
	"fmt"

	"mlxchat/tensor"
)

// MLP is a gated feed-forward block with the tanh-approximated GELU:
// out = (gelu(sparsify(x·Wgᵀ)) ⊙ x·Wuᵀ)·Wdᵀ, where sparsify is Gemma 3n's
// gaussian top-k (kept values above mean + SparsityStd·std of each row,
// shifted down by that cutoff) when Sparse is set.
type MLP struct {
	// Layer is the layer index, for error messages.
	Layer int
	// Gate, Up, Down are the projections.
	Gate, Up, Down *tensor.Matrix
	// Sparse enables the gaussian top-k on the gate activations, with the
	// cutoff at mean + SparsityStd·std.
	Sparse      bool
	SparsityStd float32
}

// Forward writes the block's output for x [n, hidden] into out [n, hidden].
func (m *MLP) Forward(be tensor.Backend, ar *Arena, out, x *tensor.Tensor) error {
	n := x.Rows()
	g := ar.Get(n, m.Gate.Out)
	u := ar.Get(n, m.Up.Out)
	if err := be.MatMul(g, x, m.Gate); err != nil {
		return fmt.Errorf("layer %d gate_proj: %w", m.Layer, err)
	}
	if m.Sparse {
		ops, ok := be.(tensor.StreamOps)
		if !ok {
			return fmt.Errorf("layer %d: backend %s lacks the activation-sparsity op (tensor.StreamOps)", m.Layer, be.Name())
		}
		if err := ops.GaussianTopK(g, g, m.SparsityStd); err != nil {
			return fmt.Errorf("layer %d activation sparsity: %w", m.Layer, err)
		}
	}
	if err := be.GeluTanh(g, g); err != nil {
		return fmt.Errorf("layer %d gelu: %w", m.Layer, err)
	}
	if err := be.MatMul(u, x, m.Up); err != nil {
		return fmt.Errorf("layer %d up_proj: %w", m.Layer, err)
	}
	if err := be.Mul(g, g, u); err != nil {
		return fmt.Errorf("layer %d gate*up: %w", m.Layer, err)
	}
	if err := be.MatMul(out, g, m.Down); err != nil {
		return fmt.Errorf("layer %d down_proj: %w", m.Layer, err)
	}
	return nil
}

// WeightBytes is the number of weight bytes one token reads.
func (m *MLP) WeightBytes() int64 {
	return int64(m.Gate.Bytes() + m.Up.Bytes() + m.Down.Bytes())
}
