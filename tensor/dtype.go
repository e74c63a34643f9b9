package tensor

import (
	"fmt"
	"math"
)

// DType is the element type of a tensor.
type DType uint8

// Supported element types. U32 holds packed quantized weights.
const (
	Invalid DType = iota
	F32
	F16
	BF16
	U32
	I32
	U8
	I64
	F64
)

var dtypeInfo = [...]struct {
	name string
	size int
}{
	Invalid: {"invalid", 0},
	F32:     {"F32", 4},
	F16:     {"F16", 2},
	BF16:    {"BF16", 2},
	U32:     {"U32", 4},
	I32:     {"I32", 4},
	U8:      {"U8", 1},
	I64:     {"I64", 8},
	F64:     {"F64", 8},
}

// Size is the number of bytes one element occupies.
func (d DType) Size() int {
	if int(d) >= len(dtypeInfo) {
		return 0
	}
	return dtypeInfo[d].size
}

// String returns the safetensors spelling of the dtype ("F32", "BF16", ...).
func (d DType) String() string {
	if int(d) >= len(dtypeInfo) {
		return fmt.Sprintf("DType(%d)", uint8(d))
	}
	return dtypeInfo[d].name
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 || d == F64 }

// ParseDType maps a safetensors dtype string to a DType.
func ParseDType(s string) (DType, error) {
	for d, info := range dtypeInfo {
		if d != int(Invalid) && info.name == s {
			return DType(d), nil
		}
	}
	return Invalid, fmt.Errorf("unsupported dtype %q (want one of F32, F16, BF16, U32, I32, U8, I64, F64)", s)
}

// BF16ToF32 widens a bfloat16 bit pattern to float32 exactly.
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F32ToBF16 rounds a float32 to the nearest bfloat16 (ties to even), as MLX
// and PyTorch do. NaN stays NaN.
func F32ToBF16(f float32) uint16 {
	bits := math.Float32bits(f)
	if bits&0x7fffffff > 0x7f800000 { // NaN: keep it quiet and non-zero.
		return uint16(bits>>16) | 0x40
	}
	rounding := uint32(0x7fff) + (bits>>16)&1
	return uint16((bits + rounding) >> 16)
}

// F16ToF32 widens an IEEE half-precision bit pattern to float32 exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise.
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	default:
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	}
}

// F32ToF16 rounds a float32 to the nearest IEEE half (ties to even),
// saturating to infinity on overflow.
func F32ToF16(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int32(bits>>23) & 0xff
	mant := bits & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++
	}
	return sign | uint16(half)
}
