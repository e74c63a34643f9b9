package blocks

import (
	"fmt"
	"strings"

	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// Weights reads the tensors of one model from a checkpoint under a name
// prefix (for example "model.language_model."), checking every shape, and
// adds up the bytes a decode step reads.
type Weights struct {
	CK     *checkpoint.Checkpoint
	Prefix string
}

// Matrix loads the dense or quantized linear/embedding weight at
// Prefix+path, which must be out rows by in columns.
func (w *Weights) Matrix(path string, out, in int) (*tensor.Matrix, error) {
	return w.CK.MatrixShape(w.Prefix+path, out, in)
}

// Norm loads a 1-D float tensor (F32, F16 or BF16) of n values, as
// RMSNorm takes it, without copying.
func (w *Weights) Norm(path string, n int) (*tensor.Tensor, error) {
	return w.CK.FloatTensor(w.Prefix+path, n)
}

// F32 loads a float tensor of the given shape and returns a host F32 copy
// (for small parameters used as operands of elementwise ops); from a
// checkpoint opened by checkpoint.OpenHeaders the copy holds zeros.
func (w *Weights) F32(path string, shape ...int) (*tensor.Tensor, error) {
	vals, err := w.CK.Floats(w.Prefix+path, shape...)
	if err != nil {
		return nil, err
	}
	return tensor.FromF32(vals, shape...)
}

// OnePlus loads a norm weight of n values stored zero-centred (Gemma's
// convention) and returns 1 + w as an F32 tensor [n], computed in float32
// as transformers does.
func (w *Weights) OnePlus(path string, n int) (*tensor.Tensor, error) {
	t, err := w.F32(path, n)
	if err != nil {
		return nil, err
	}
	v := t.F32()
	for i := range v {
		v[i] = 1 + v[i]
	}
	return t, nil
}

// RMSNorm loads the RMSNorm at path (its ".weight", width n); with onePlus
// the stored weight is zero-centred and 1 + w is precomputed in F32.
func (w *Weights) RMSNorm(path string, n int, eps float32, onePlus bool) (*Norm, error) {
	var t *tensor.Tensor
	var err error
	if onePlus {
		t, err = w.OnePlus(path+".weight", n)
	} else {
		t, err = w.Norm(path+".weight", n)
	}
	if err != nil {
		return nil, err
	}
	return &Norm{Name: w.Prefix + path, Kind: RMSNorm, Weight: t, Eps: eps}, nil
}

// LayerNorm loads the LayerNorm at path: its ".weight" (width n) and, when
// the checkpoint has one, its ".bias".
func (w *Weights) LayerNorm(path string, n int, eps float32) (*Norm, error) {
	t, err := w.Norm(path+".weight", n)
	if err != nil {
		return nil, err
	}
	nm := &Norm{Name: w.Prefix + path, Kind: LayerNorm, Weight: t, Eps: eps}
	if w.CK.Has(w.Prefix + path + ".bias") {
		if nm.Bias, err = w.Norm(path+".bias", n); err != nil {
			return nil, err
		}
	}
	return nm, nil
}

// Bias loads the bias of the linear module at path (its ".bias", n values)
// as an F32 row [1, n] for a broadcast Add.
func (w *Weights) Bias(path string, n int) (*tensor.Tensor, error) {
	t, err := w.F32(path+".bias", n)
	if err != nil {
		return nil, err
	}
	return Reshape(t, 1, n), nil
}

// Linear loads the matrix at path (out by in) and, when withBias, its bias.
func (w *Weights) Linear(path string, out, in int, withBias bool) (*tensor.Matrix, *tensor.Tensor, error) {
	m, err := w.Matrix(path, out, in)
	if err != nil {
		return nil, nil, err
	}
	if !withBias {
		return m, nil, nil
	}
	b, err := w.Bias(path, out)
	if err != nil {
		return nil, nil, err
	}
	return m, b, nil
}

// DenseF32 loads a small float matrix [out, in] as a dense F32 Matrix,
// each value passed through f (nil: unchanged), e.g. to clip coefficients.
func (w *Weights) DenseF32(path string, out, in int, f func(float32) float32) (*tensor.Matrix, error) {
	t, err := w.F32(path+".weight", out, in)
	if err != nil {
		return nil, err
	}
	if f != nil {
		v := t.F32()
		for i := range v {
			v[i] = f(v[i])
		}
	}
	return &tensor.Matrix{Out: out, In: in, W: t}, nil
}

// FindPrefix returns the first candidate prefix under which the checkpoint
// holds marker (e.g. "embed_tokens.weight"), or an error listing what was
// tried.
func FindPrefix(ck *checkpoint.Checkpoint, marker string, candidates ...string) (string, error) {
	for _, p := range candidates {
		if ck.Has(p + marker) {
			return p, nil
		}
	}
	return "", fmt.Errorf("model directory %s: no tensor %q under any of the prefixes %s", ck.Dir, marker, strings.Join(quoteAll(candidates), ", "))
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// RowBytes is the number of bytes Gather reads for one row of m.
func RowBytes(m *tensor.Matrix) int64 {
	if m.Out == 0 {
		return 0
	}
	n := int64(len(m.W.Data) / m.Out)
	if m.Scales != nil {
		n += int64(len(m.Scales.Data) / m.Out)
	}
	if m.Biases != nil {
		n += int64(len(m.Biases.Data) / m.Out)
	}
	return n
}

// Describe summarizes how a matrix is stored: "4-bit affine, group 64,
// BF16 scales" or "dense BF16".
func Describe(m *tensor.Matrix) string {
	if m.Quantized() {
		return fmt.Sprintf("%d-bit affine, group %d, %s scales", m.Bits, m.GroupSize, m.Scales.DType)
	}
	return "dense " + m.W.DType.String()
}
