package cpu

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// decodeChunk is the fewest values DecodeF16 and DecodeInt8Rows hand one
// thread: below that, handing out the work costs more than converting it.
const decodeChunk = 1 << 14

// DecodeF16 writes the float32 value of each of the first len(dst) half
// floats of src into dst (tensor.HalfDecoder), with F16C or NEON
// conversions spread over the backend's threads (in Go on the portable
// level). The KV cache decodes a Float16 cache's views through it.
func (b *Backend) DecodeF16(dst []float32, src []uint16) {
	src = src[:len(dst)]
	b.pool.split(len(dst), decodeChunk, func(lo, hi int) {
		if b.simd {
			cvtSIMD(dst[lo:hi], src[lo:hi], true)
			return
		}
		for i := lo; i < hi; i++ {
			dst[i] = cvt16(src[i], true)
		}
	})
}

// DecodeInt8Rows expands rows of scaled int8 values into float32
// (tensor.Int8RowDecoder): each row of src is heads little-endian float32
// scales followed by heads·dim int8 values, and value j of head h of row
// r becomes dst[(r·heads+h)·dim+j] = scale[h]·value, as one float32
// product. The rows are spread over the backend's threads, with AVX2 on
// amd64. The KV cache decodes a Quantized8 cache's views through it.
func (b *Backend) DecodeInt8Rows(dst []float32, src []byte, rows, heads, dim int) {
	if rows <= 0 || heads <= 0 || dim <= 0 {
		return
	}
	rb := heads*4 + heads*dim
	_ = src[rows*rb-1]
	_ = dst[rows*heads*dim-1]
	b.pool.split(rows, max(1, decodeChunk/(heads*dim)), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := src[r*rb : (r+1)*rb]
			q := unsafe.Slice((*int8)(unsafe.Pointer(&row[heads*4])), heads*dim)
			for h := 0; h < heads; h++ {
				scale := math.Float32frombits(binary.LittleEndian.Uint32(row[h*4:]))
				o := dst[(r*heads+h)*dim : (r*heads+h+1)*dim]
				if b.simd {
					scaleI8SIMD(o, q[h*dim:(h+1)*dim], scale)
				} else {
					scaleI8Go(o, q[h*dim:(h+1)*dim], scale)
				}
			}
		}
	})
}

// scaleI8Go writes dst[i] = scale·float32(src[i]) for i < len(dst).
func scaleI8Go(dst []float32, src []int8, scale float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = scale * float32(v)
	}
}
