package blocks

import (
	"fmt"

	"mlxchat/tensor"
)

// NormKind selects the normalization of a Norm.
type NormKind uint8

const (
	// RMSNorm is x / sqrt(mean(x²) + eps) · w.
	RMSNorm NormKind = iota
	// LayerNorm is (x - mean) / sqrt(var + eps) · w (+ b), with the
	// population variance.
	LayerNorm
)

// Norm is one normalization over the last axis with its weight (and
// LayerNorm bias). A Gemma-style (1 + w) weight is precomputed in F32 when
// it is loaded (Weights.RMSNorm), so every norm applies its weight as is.
type Norm struct {
	// Name is the checkpoint path, for error messages.
	Name string
	// Kind is RMSNorm or LayerNorm.
	Kind NormKind
	// Weight scales the normalized values (nil: none); F32, F16 or BF16 [N].
	Weight *tensor.Tensor
	// Bias is LayerNorm's shift (nil: none).
	Bias *tensor.Tensor
	// Eps is added to the mean square (variance).
	Eps float32
}

// Forward writes the normalized rows of x into dst (which may alias x).
func (n *Norm) Forward(be tensor.Backend, dst, x *tensor.Tensor) error {
	var err error
	switch n.Kind {
	case RMSNorm:
		err = be.RMSNorm(dst, x, n.Weight, n.Eps)
	case LayerNorm:
		err = be.LayerNorm(dst, x, n.Weight, n.Bias, n.Eps)
	default:
		err = fmt.Errorf("unknown norm kind %d", n.Kind)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}

// Bytes is the number of weight bytes the norm reads.
func (n *Norm) Bytes() int64 {
	if n == nil {
		return 0
	}
	var b int64
	if n.Weight != nil {
		b += int64(len(n.Weight.Data))
	}
	if n.Bias != nil {
		b += int64(len(n.Bias.Data))
	}
	return b
}
