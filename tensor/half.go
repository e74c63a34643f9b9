package tensor

// HalfDecoder is implemented by backends that expand IEEE half floats into
// float32 host memory faster than a lookup table on one core does: the CPU
// backend converts with F16C or NEON instructions over all its threads.
// The KV cache takes it through kvcache.Options.DecodeF16 to decode the
// views of a Float16 cache, which it does for every layer at every step.
type HalfDecoder interface {
	// DecodeF16 writes the float32 value of each of the first len(dst)
	// half floats of src into dst, exactly (every half float is a
	// float32). src must hold at least len(dst) values.
	DecodeF16(dst []float32, src []uint16)
}

// Int8RowDecoder is implemented by backends that expand rows of scaled
// int8 values into float32 host memory faster than a Go loop on one core
// does: the CPU backend, over all its threads and with AVX2 on amd64. The
// KV cache takes it through kvcache.Options.DecodeInt8Rows to decode the
// views of a Quantized8 cache.
type Int8RowDecoder interface {
	// DecodeInt8Rows decodes rows rows of src into dst. Each row of src is
	// heads little-endian float32 scales followed by heads·dim int8
	// values; value j of head h of row r becomes
	// dst[(r·heads+h)·dim+j] = scale[h]·float32(value), one float32
	// product, so the result is exact and the same on every backend.
	DecodeInt8Rows(dst []float32, src []byte, rows, heads, dim int)
}
