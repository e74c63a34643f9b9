package tensor

import "fmt"

// Matrix is a weight matrix of Out rows by In columns, used as y = x·Wᵀ.
// It is either dense (W is F32, F16 or BF16 of shape [Out, In]) or MLX
// affine-quantized: W is U32 of shape [Out, In*Bits/32] with element i of a
// row stored in bits [Bits*(i%per), Bits*(i%per)+Bits) of word i/per, where
// per = 32/Bits, and each group of GroupSize consecutive inputs dequantizes
// as w = scale*q + bias with Scales and Biases of shape [Out, In/GroupSize].
type Matrix struct {
	Out, In   int
	W         *Tensor
	Scales    *Tensor
	Biases    *Tensor
	Bits      int // 0 when dense
	GroupSize int // 0 when dense
}

// Quantized reports whether the matrix is affine-quantized.
func (m *Matrix) Quantized() bool { return m.Bits != 0 }

// Validate checks that the tensors agree with Out, In and the quantization
// parameters, so kernels never index out of range.
func (m *Matrix) Validate(name string) error {
	if m.Out <= 0 || m.In <= 0 {
		return fmt.Errorf("%s: bad matrix size %dx%d", name, m.Out, m.In)
	}
	if !m.Quantized() {
		if m.W == nil || !m.W.DType.IsFloat() {
			return fmt.Errorf("%s: dense weight must be a float tensor, got %v", name, m.W)
		}
		if ShapeMatches(m.W, m.W.DType, []int{m.Out, m.In}) {
			return nil // no name+".weight" built: every product validates its matrix
		}
		return CheckShape(name+".weight", m.W, m.W.DType, m.Out, m.In)
	}
	switch m.Bits {
	case 2, 3, 4, 5, 6, 8:
	default:
		return fmt.Errorf("%s: unsupported quantization bits %d (want 4 or 8)", name, m.Bits)
	}
	if 32%m.Bits != 0 {
		return fmt.Errorf("%s: unsupported quantization bits %d (want 4 or 8)", name, m.Bits)
	}
	if m.GroupSize <= 0 || m.In%m.GroupSize != 0 {
		return fmt.Errorf("%s: input size %d is not a multiple of group size %d", name, m.In, m.GroupSize)
	}
	// Names are built only for an error: every product validates its
	// matrix, and concatenating them each time allocated.
	if !ShapeMatches(m.W, U32, []int{m.Out, m.In * m.Bits / 32}) {
		return CheckShape(name+".weight", m.W, U32, m.Out, m.In*m.Bits/32)
	}
	for _, s := range [...]struct {
		what string
		t    *Tensor
	}{{".scales", m.Scales}, {".biases", m.Biases}} {
		if s.t == nil || !s.t.DType.IsFloat() {
			return fmt.Errorf("%s%s: want a float tensor, got %v", name, s.what, s.t)
		}
		if !ShapeMatches(s.t, s.t.DType, []int{m.Out, m.In / m.GroupSize}) {
			return CheckShape(name+s.what, s.t, s.t.DType, m.Out, m.In/m.GroupSize)
		}
	}
	return nil
}

// Bytes is the number of weight bytes a full pass over the matrix reads
// (packed weights plus scales and biases): the numerator of a roofline.
func (m *Matrix) Bytes() int {
	n := len(m.W.Data)
	if m.Scales != nil {
		n += len(m.Scales.Data)
	}
	if m.Biases != nil {
		n += len(m.Biases.Data)
	}
	return n
}
