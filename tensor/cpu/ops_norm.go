package cpu

import (
	"math"

	"mlxchat/tensor"
)

// LayerNorm computes dst = (x - mean)/sqrt(var + eps)·weight + bias per
// row, with the population variance accumulated in float64.
func (b *Backend) LayerNorm(dst, x, weight, bias *tensor.Tensor, eps float32) error {
	n, err := checkSame("layernorm", dst, x)
	if err != nil {
		return err
	}
	w, releaseW, err := b.normParam("layernorm", "weight", weight, n)
	if err != nil {
		return err
	}
	defer releaseW()
	bs, releaseB, err := b.normParam("layernorm", "bias", bias, n)
	if err != nil {
		return err
	}
	defer releaseB()
	if n == 0 {
		return nil
	}
	d, v := dst.F32(), x.F32()
	b.rowSplit(len(v)/n, n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			layerNormRow(d[r*n:(r+1)*n], v[r*n:(r+1)*n], w, bs, eps)
		}
	})
	return nil
}

// layerNormRow normalizes one row; dst may alias x.
func layerNormRow(dst, x, w, bias []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := sum / float64(len(x))
	var ss float64
	for _, v := range x {
		d := float64(v) - mean
		ss += d * d
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	for i, v := range x {
		// Centred in float64: a row far from zero keeps its small spread.
		y := float32((float64(v) - mean) * inv)
		if w != nil {
			y *= w[i]
		}
		if bias != nil {
			y += bias[i]
		}
		dst[i] = y
	}
}

// SiLU computes dst = x·sigmoid(x) = x / (1 + e^-x).
func (b *Backend) SiLU(dst, x *tensor.Tensor) error {
	if _, err := checkSame("silu", dst, x); err != nil {
		return err
	}
	d, s := dst.F32(), x.F32()
	b.elementwiseHeavy(len(s), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d[i] = silu(s[i])
		}
	})
	return nil
}

func silu(x float32) float32 {
	return x / (1 + expf(-x))
}
