package synth

// rng is a splitmix64 generator: cheap, deterministic and good enough to
// fill gigabytes of synthetic weights.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// mix derives an independent stream seed from a base seed and labels.
func mix(seed uint64, labels ...uint64) uint64 {
	r := rng{seed}
	v := r.next()
	for _, l := range labels {
		r.s ^= l * 0xd6e8feb86659fd93
		v = r.next()
	}
	return v
}

// hashName is FNV-1a over a tensor name, so a tensor's data depends only on
// the seed and its name, not on the order tensors are written in.
func hashName(s string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return h
}

// uniform returns a float32 in [-1, 1).
func (r *rng) uniform() float32 {
	return float32(int64(r.next()>>40)-(1<<23)) / (1 << 23)
}
