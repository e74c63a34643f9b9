package blocks

import (
	"fmt"

	"mlxchat/tensor"
)

// Activation is the nonlinearity of a gated MLP's gate branch.
type Activation uint8

const (
	// GeluTanh is the tanh approximation of GELU (Gemma's
	// gelu_pytorch_tanh).
	GeluTanh Activation = iota
	// SiLU is x·sigmoid(x) (Llama, Qwen, OLMo, Cohere: hidden_act silu).
	SiLU
)

func (a Activation) String() string {
	switch a {
	case GeluTanh:
		return "gelu_tanh"
	case SiLU:
		return "silu"
	}
	return fmt.Sprintf("activation(%d)", uint8(a))
}

// MLP is a gated feed-forward block:
// out = (act(sparsify(x·Wgᵀ + bg)) ⊙ (x·Wuᵀ + bu))·Wdᵀ + bd, where act is
// Act and sparsify is Gemma 3n's gaussian top-k (kept values above
// mean + SparsityStd·std of each row, shifted down by that cutoff) when
// Sparse is set. Biases are optional.
type MLP struct {
	// Layer is the layer index, for error messages.
	Layer int
	// Gate, Up, Down are the projections.
	Gate, Up, Down *tensor.Matrix
	// GateBias, UpBias, DownBias are F32 [1, out] biases (nil: none).
	GateBias, UpBias, DownBias *tensor.Tensor
	// Act is the gate activation (zero value: GeluTanh).
	Act Activation
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
	if err := project(be, g, x, m.Gate, m.GateBias); err != nil {
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
	var err error
	switch m.Act {
	case GeluTanh:
		err = be.GeluTanh(g, g)
	case SiLU:
		err = be.SiLU(g, g)
	default:
		err = fmt.Errorf("unknown activation %s", m.Act)
	}
	if err != nil {
		return fmt.Errorf("layer %d %s: %w", m.Layer, m.Act, err)
	}
	if err := m.gateUp(be, g, u, x); err != nil {
		return err
	}
	if err := m.down(be, out, g); err != nil {
		return fmt.Errorf("layer %d down_proj: %w", m.Layer, err)
	}
	return nil
}

// down projects the gated activations h into out. In a sparse layer most
// of h is zero, and a backend that can skip the columns of down_proj a
// zero meets (tensor.GatedOps) reads only the others.
func (m *MLP) down(be tensor.Backend, out, h *tensor.Tensor) error {
	ops, ok := be.(tensor.GatedOps)
	if !ok || !m.Sparse {
		return project(be, out, h, m.Down, m.DownBias)
	}
	if err := ops.SparseMatMul(out, h, m.Down); err != nil {
		return err
	}
	if m.DownBias != nil {
		return be.Add(out, out, m.DownBias)
	}
	return nil
}

// gateUp multiplies the activated gate g by up_proj of x, through u. In a
// sparse layer most of g is zero, and a backend that can skip the rows of
// up_proj a zero meets (tensor.GatedOps) computes only the others.
func (m *MLP) gateUp(be tensor.Backend, g, u, x *tensor.Tensor) error {
	if ops, ok := be.(tensor.GatedOps); ok && m.Sparse {
		if err := ops.GatedMatMul(g, x, m.Up, m.UpBias); err != nil {
			return fmt.Errorf("layer %d up_proj (gated): %w", m.Layer, err)
		}
		return nil
	}
	if err := project(be, u, x, m.Up, m.UpBias); err != nil {
		return fmt.Errorf("layer %d up_proj: %w", m.Layer, err)
	}
	if err := be.Mul(g, g, u); err != nil {
		return fmt.Errorf("layer %d gate*up: %w", m.Layer, err)
	}
	return nil
}

// WeightBytes is the number of weight bytes one token reads. It counts
// up_proj and down_proj whole also in a sparse layer; GatedWeightBytes is
// what a backend with tensor.GatedOps reads there.
func (m *MLP) WeightBytes() int64 {
	return int64(m.Gate.Bytes()+m.Up.Bytes()+m.Down.Bytes()) + tensorBytes(m.GateBias, m.UpBias, m.DownBias)
}

// GatedWeightBytes is WeightBytes for a sparse layer on a backend with
// tensor.GatedOps, when the gate keeps the share keep of its activations
// (1 - the layer's activation sparsity): gate_proj whole, that share of
// up_proj's rows, and of down_proj's codes that share (its columns) plus
// every scale and bias, since nearly every group holds a kept column. Not
// sparse, it is WeightBytes.
func (m *MLP) GatedWeightBytes(keep float64) int64 {
	if !m.Sparse {
		return m.WeightBytes()
	}
	// A dense down_proj has no scales or biases (nil, counted as 0).
	down := float64(len(m.Down.W.Data))*keep + float64(tensorBytes(m.Down.Scales, m.Down.Biases))
	return int64(m.Gate.Bytes()) + int64(float64(m.Up.Bytes())*keep) + int64(down) + tensorBytes(m.GateBias, m.UpBias, m.DownBias)
}
