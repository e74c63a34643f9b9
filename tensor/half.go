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
