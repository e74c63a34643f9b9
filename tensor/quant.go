package tensor

import (
	"fmt"
	"math"
)

// QuantizeAffine quantizes a row-major [out, in] matrix the way MLX's
// affine quantizer (mlx.core.quantize, mode "affine") does on Apple GPUs,
// which is how mlx-community checkpoints are produced:
//
// For each group of groupSize consecutive inputs of a row, with
// n = 2^bits-1, lo = min(group) and hi = max(0, max(group)):
//
//	scale = max((hi-lo)/n, 1e-7), negated when |lo| <= |hi|
//	edge  = lo if |lo| > |hi| else hi
//	q0    = round(edge/scale)
//	if q0 != 0 { scale = edge/q0; bias = edge } else { bias = 0 }
//	q     = clamp(round((w-bias)/scale), 0, n)
//
// so that zero is exactly representable whenever q0 != 0. Arithmetic is
// float32 and round is half away from zero, as in the Metal kernel. (MLX's
// CPU fallback differs in two details: it takes hi over the group without
// the 0 floor and rounds half to even.) The quantization uses the float32
// scale and bias; they are then stored rounded to scaleDType (BF16 when
// scaleDType is Invalid, else F16 or F32), so Dequantize returns
// storedScale*q + storedBias exactly like mlx.core.dequantize.
//
// Packing: element i of a row sits in bits [bits*(i%per), bits*(i%per)+bits)
// of word i/per with per = 32/bits. bits must be 2, 4 or 8; groupSize must
// be 32, 64 or 128 and divide in.
func QuantizeAffine(values []float32, out, in, bits, groupSize int, scaleDType DType) (*Matrix, error) {
	if out <= 0 || in <= 0 {
		return nil, fmt.Errorf("quantize: bad matrix size %dx%d", out, in)
	}
	if len(values) != out*in {
		return nil, fmt.Errorf("quantize: %dx%d matrix needs %d values, got %d", out, in, out*in, len(values))
	}
	switch bits {
	case 2, 4, 8:
	default:
		return nil, fmt.Errorf("quantize: unsupported bits %d (want 2, 4 or 8)", bits)
	}
	switch groupSize {
	case 32, 64, 128:
	default:
		return nil, fmt.Errorf("quantize: unsupported group size %d (want 32, 64 or 128)", groupSize)
	}
	if in%groupSize != 0 {
		return nil, fmt.Errorf("quantize: input size %d is not a multiple of group size %d", in, groupSize)
	}
	if scaleDType == Invalid {
		scaleDType = BF16
	}
	if scaleDType != BF16 && scaleDType != F16 && scaleDType != F32 {
		return nil, fmt.Errorf("quantize: scale dtype %s not supported (want BF16, F16 or F32)", scaleDType)
	}
	per := 32 / bits
	groups := in / groupSize
	w := New(U32, out, in/per)
	scales := make([]float32, out*groups)
	biases := make([]float32, out*groups)
	words := w.U32()
	nBins := float32(int(1)<<bits - 1)
	for g := 0; g < out*groups; g++ {
		grp := values[g*groupSize : (g+1)*groupSize]
		lo, hi := float32(math.MaxFloat32), float32(0)
		for _, v := range grp {
			lo = min(lo, v)
			hi = max(hi, v)
		}
		scale := max((hi-lo)/nBins, 1e-7)
		side := abs32(lo) > abs32(hi)
		if !side {
			scale = -scale
		}
		edge := hi
		if side {
			edge = lo
		}
		q0 := round32(edge / scale)
		bias := float32(0)
		if q0 != 0 {
			scale = edge / q0
			bias = edge
		}
		scales[g], biases[g] = scale, bias
		base := g * groupSize / per
		for i, v := range grp {
			q := round32((v - bias) / scale)
			q = min(max(q, 0), nBins)
			words[base+i/per] |= uint32(q) << (bits * (i % per))
		}
	}
	st := New(scaleDType, out, groups)
	bt := New(scaleDType, out, groups)
	if err := EncodeF32(st.Data, scaleDType, scales); err != nil {
		return nil, fmt.Errorf("quantize: storing scales: %w", err)
	}
	if err := EncodeF32(bt.Data, scaleDType, biases); err != nil {
		return nil, fmt.Errorf("quantize: storing biases: %w", err)
	}
	return &Matrix{Out: out, In: in, W: w, Scales: st, Biases: bt, Bits: bits, GroupSize: groupSize}, nil
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// round32 rounds half away from zero, like Metal's round.
func round32(x float32) float32 { return float32(math.Round(float64(x))) }

// Dequantize expands a matrix to row-major [Out, In] float32 values. Dense
// matrices are converted; quantized ones give storedScale*q + storedBias.
func Dequantize(m *Matrix) ([]float32, error) {
	if m == nil {
		return nil, fmt.Errorf("dequantize: nil matrix")
	}
	if err := m.Validate("dequantize"); err != nil {
		return nil, err
	}
	out := make([]float32, m.Out*m.In)
	if !m.Quantized() {
		if err := DecodeF32(out, m.W.DType, m.W.Data); err != nil {
			return nil, fmt.Errorf("dequantize: %w", err)
		}
		return out, nil
	}
	for r := 0; r < m.Out; r++ {
		if err := DequantizeRow(m, r, out[r*m.In:(r+1)*m.In]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DequantizeRow writes row r of m (dense or quantized) as float32 into dst,
// which must hold m.In values. It trusts that m passed Validate and checks
// only r and len(dst).
func DequantizeRow(m *Matrix, r int, dst []float32) error {
	if r < 0 || r >= m.Out {
		return fmt.Errorf("dequantize: row %d out of range [0, %d)", r, m.Out)
	}
	if len(dst) != m.In {
		return fmt.Errorf("dequantize: row needs %d values, destination holds %d", m.In, len(dst))
	}
	if !m.Quantized() {
		size := m.W.DType.Size()
		return DecodeF32(dst, m.W.DType, m.W.Data[r*m.In*size:(r+1)*m.In*size])
	}
	groups := m.In / m.GroupSize
	sb := make([]float32, 2*groups)
	ss := m.Scales.DType.Size()
	bs := m.Biases.DType.Size()
	if err := DecodeF32(sb[:groups], m.Scales.DType, m.Scales.Data[r*groups*ss:]); err != nil {
		return fmt.Errorf("dequantize scales: %w", err)
	}
	if err := DecodeF32(sb[groups:], m.Biases.DType, m.Biases.Data[r*groups*bs:]); err != nil {
		return fmt.Errorf("dequantize biases: %w", err)
	}
	per := 32 / m.Bits
	wpr := m.In / per
	words := m.W.U32()[r*wpr : (r+1)*wpr]
	mask := uint32(1)<<m.Bits - 1
	for i := range dst {
		q := (words[i/per] >> (m.Bits * (i % per))) & mask
		g := i / m.GroupSize
		dst[i] = sb[g]*float32(q) + sb[groups+g]
	}
	return nil
}
