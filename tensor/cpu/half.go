package cpu

// halfChunk is the fewest half floats DecodeF16 hands one thread: below
// that, handing out the work costs more than converting it.
const halfChunk = 1 << 14

// DecodeF16 writes the float32 value of each of the first len(dst) half
// floats of src into dst (tensor.HalfDecoder), with F16C or NEON
// conversions spread over the backend's threads (in Go on the portable
// level). The KV cache decodes a Float16 cache's views through it.
func (b *Backend) DecodeF16(dst []float32, src []uint16) {
	src = src[:len(dst)]
	b.pool.split(len(dst), halfChunk, func(lo, hi int) {
		if b.simd {
			cvtSIMD(dst[lo:hi], src[lo:hi], true)
			return
		}
		for i := lo; i < hi; i++ {
			dst[i] = cvt16(src[i], true)
		}
	})
}
