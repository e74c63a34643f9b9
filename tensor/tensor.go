package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// Tensor is a dense, row-major, little-endian array. Data is a host-visible
// view of its bytes: a Go slice for CPU tensors, an mmap'd checkpoint region
// for weights, or the shared-memory contents of a GPU buffer. Handle is
// reserved for the backend that owns the storage (nil for plain host
// tensors).
type Tensor struct {
	DType  DType
	Shape  []int
	Data   []byte
	Handle any
}

// NumElements is the product of the shape (1 for a scalar).
func NumElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// New returns a zeroed host tensor.
func New(dtype DType, shape ...int) *Tensor {
	s := append([]int(nil), shape...)
	return &Tensor{DType: dtype, Shape: s, Data: make([]byte, NumElements(s)*dtype.Size())}
}

// FromBytes wraps existing bytes (for example an mmap'd region) without
// copying. It fails if the byte length disagrees with dtype and shape.
func FromBytes(dtype DType, shape []int, data []byte) (*Tensor, error) {
	want := NumElements(shape) * dtype.Size()
	if len(data) != want {
		return nil, fmt.Errorf("tensor %s%v needs %d bytes, got %d", dtype, shape, want, len(data))
	}
	return &Tensor{DType: dtype, Shape: append([]int(nil), shape...), Data: data}, nil
}

// FromF32 copies values into a new F32 host tensor of the given shape.
func FromF32(values []float32, shape ...int) (*Tensor, error) {
	if NumElements(shape) != len(values) {
		return nil, fmt.Errorf("tensor shape %v holds %d values, got %d", shape, NumElements(shape), len(values))
	}
	t := New(F32, shape...)
	copy(t.F32(), values)
	return t, nil
}

// Len is the number of elements.
func (t *Tensor) Len() int { return NumElements(t.Shape) }

// Dim returns the size of axis i; negative i counts from the end.
func (t *Tensor) Dim(i int) int {
	if i < 0 {
		i += len(t.Shape)
	}
	return t.Shape[i]
}

// Rows is the product of every axis but the last: the number of rows when the
// tensor is seen as a matrix over its last axis.
func (t *Tensor) Rows() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return NumElements(t.Shape[:len(t.Shape)-1])
}

// String describes dtype and shape, e.g. "F32[3 256]".
func (t *Tensor) String() string { return fmt.Sprintf("%s%v", t.DType, t.Shape) }

// F32 views the data of an F32 tensor as []float32 without copying. It panics
// on another dtype, which is a programming error, never input-dependent.
func (t *Tensor) F32() []float32 {
	if t.DType != F32 {
		panic(fmt.Sprintf("tensor: F32 view of %s tensor", t.DType))
	}
	return viewAs[float32](t.Data)
}

// U32 views the data of a U32 tensor without copying.
func (t *Tensor) U32() []uint32 {
	if t.DType != U32 {
		panic(fmt.Sprintf("tensor: U32 view of %s tensor", t.DType))
	}
	return viewAs[uint32](t.Data)
}

// U16 views the data of an F16 or BF16 tensor as raw bit patterns.
func (t *Tensor) U16() []uint16 {
	if t.DType != F16 && t.DType != BF16 {
		panic(fmt.Sprintf("tensor: U16 view of %s tensor", t.DType))
	}
	return viewAs[uint16](t.Data)
}

func viewAs[T any](b []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)
}

// ToF32 converts any floating-point or integer tensor to a new []float32.
func (t *Tensor) ToF32() ([]float32, error) {
	n := t.Len()
	out := make([]float32, n)
	if err := DecodeF32(out, t.DType, t.Data); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t, err)
	}
	return out, nil
}

// DecodeF32 converts len(dst) elements of dtype from src into dst.
func DecodeF32(dst []float32, dtype DType, src []byte) error {
	if len(src) < len(dst)*dtype.Size() {
		return fmt.Errorf("need %d bytes of %s, have %d", len(dst)*dtype.Size(), dtype, len(src))
	}
	switch dtype {
	case F32:
		copy(dst, viewAs[float32](src[:len(dst)*4]))
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case F64:
		for i := range dst {
			dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
		}
	case U32:
		for i := range dst {
			dst[i] = float32(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case I32:
		for i := range dst {
			dst[i] = float32(int32(binary.LittleEndian.Uint32(src[4*i:])))
		}
	case I64:
		for i := range dst {
			dst[i] = float32(int64(binary.LittleEndian.Uint64(src[8*i:])))
		}
	case U8:
		for i := range dst {
			dst[i] = float32(src[i])
		}
	default:
		return fmt.Errorf("cannot convert %s to F32", dtype)
	}
	return nil
}

// EncodeF32 converts src into dtype (F32, F16 or BF16) bytes written to dst.
func EncodeF32(dst []byte, dtype DType, src []float32) error {
	if len(dst) < len(src)*dtype.Size() {
		return fmt.Errorf("need %d bytes of %s, have %d", len(src)*dtype.Size(), dtype, len(dst))
	}
	switch dtype {
	case F32:
		copy(viewAs[float32](dst), src)
	case F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
		}
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
		}
	default:
		return fmt.Errorf("cannot encode F32 as %s", dtype)
	}
	return nil
}

// CheckShape returns an error naming what unless t has exactly the given
// dtype and shape. A negative entry in shape matches any size.
func CheckShape(what string, t *Tensor, dtype DType, shape ...int) error {
	if ShapeMatches(t, dtype, shape) {
		return nil
	}
	// A copy for the message: were shape itself handed to fmt, every call
	// (the checks run for every op) would allocate it.
	want := append([]int(nil), shape...)
	if t == nil {
		return fmt.Errorf("%s: missing tensor, want %s%v", what, dtype, want)
	}
	return fmt.Errorf("%s: got %s, want %s%v", what, t, dtype, want)
}

// ShapeMatches reports whether CheckShape would accept t: it is not nil,
// has dtype and shape's rank, and every non-negative entry of shape
// equals t's size on that axis.
func ShapeMatches(t *Tensor, dtype DType, shape []int) bool {
	if t == nil || t.DType != dtype || len(t.Shape) != len(shape) {
		return false
	}
	for i, d := range shape {
		if d >= 0 && t.Shape[i] != d {
			return false
		}
	}
	return true
}
