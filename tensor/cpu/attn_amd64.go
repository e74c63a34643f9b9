//go:build amd64

package cpu

import "unsafe"

// attnArgs is what the attention kernels read (AVX-512: attn512_amd64.s,
// AVX2: attn_amd64.s) for one tile of two or four query vectors. Offsets
// are fixed in the assembly; TestAttnArgsLayout keeps the two in step.
type attnArgs struct {
	q      unsafe.Pointer // scores: first query vector; pv: first accumulator (the tile's lie d floats apart)
	s      unsafe.Pointer // first score row (the tile's lie attnBlock floats apart)
	kv     unsafe.Pointer // first key (scores) or value (pv) row
	stride int            // bytes between key or value rows
	keys   int            // scores: a multiple of the kernel's keys per tile; pv: at least 1
	d      int            // floats per vector: a multiple of the kernel's chunk (see each kernel)
	pf     int            // prefetch distance, bytes
}

//go:noescape
func attnScores4(a *attnArgs)

//go:noescape
func attnPV4(a *attnArgs)

//go:noescape
func attnScores2(a *attnArgs)

//go:noescape
func attnPV2(a *attnArgs)

//go:noescape
func attnScores4AVX(a *attnArgs)

//go:noescape
func attnPV4AVX(a *attnArgs)

//go:noescape
func attnScores2AVX(a *attnArgs)

//go:noescape
func attnPV2AVX(a *attnArgs)

// attnPrefetchRows is how many key or value rows ahead the kernels
// prefetch.
const attnPrefetchRows = 40

// tileLaidOut reports whether the first n of a tile's vectors (q or acc)
// lie d floats apart and its score rows attnBlock floats apart, as the
// kernels read them.
func tileLaidOut(vecs *[4][]float32, s *[4][]float32, d, n int) bool {
	for v := 1; v < n; v++ {
		if unsafe.Pointer(&vecs[v][0]) != unsafe.Add(unsafe.Pointer(&vecs[0][0]), 4*v*d) ||
			unsafe.Pointer(&s[v][0]) != unsafe.Add(unsafe.Pointer(&s[0][0]), 4*v*attnBlock) {
			return false
		}
	}
	return true
}

// simdAttnKernels are the AVX2 attention kernels.
func simdAttnKernels() attnKernels {
	return attnKernels{scores: scoresAVX2, pv: pvAVX2, exps: expSubSIMD}
}

// scoresAVX2 is attnKernels.scores for AVX2: tiles of four vectors go to
// attnScores4AVX two keys at a time and tiles of two to attnScores2AVX
// four keys at a time, for head sizes that are multiples of 8; the rest
// is scoresDot2.
func scoresAVX2(t *attnTile, k []float32, stride, bn int) {
	d := len(t.q[0])
	step := 2
	if t.n == 2 {
		step = 4
	}
	n := bn / step * step
	if (t.n != 4 && t.n != 2) || d%8 != 0 || n == 0 || !tileLaidOut(&t.q, &t.s, d, t.n) {
		scoresDot2(dot2SIMD, t, k, stride, bn, 0)
		return
	}
	_ = k[(bn-1)*stride+d-1]
	_, _ = t.q[t.n-1][d-1], t.s[t.n-1][bn-1]
	a := attnArgs{q: unsafe.Pointer(&t.q[0][0]), s: unsafe.Pointer(&t.s[0][0]), kv: unsafe.Pointer(&k[0]),
		stride: 4 * stride, keys: n, d: d, pf: attnPrefetchRows * 4 * stride}
	// Direct calls: through a function value a would escape (an
	// allocation per call).
	if t.n == 2 {
		attnScores2AVX(&a)
	} else {
		attnScores4AVX(&a)
	}
	if n < bn {
		scoresDot2(dot2SIMD, t, k, stride, bn, n)
	}
}

// pvAVX2 is attnKernels.pv for AVX2: tiles of four vectors with head
// sizes that are multiples of 16 go to attnPV4AVX, tiles of two with
// multiples of 32 to attnPV2AVX, the rest to pvSIMD per vector.
func pvAVX2(t *attnTile, v []float32, stride, bn int) {
	d := len(t.acc[0])
	switch {
	case t.n == 4 && d%16 == 0 && tileLaidOut(&t.acc, &t.s, d, 4):
	case t.n == 2 && d%32 == 0 && tileLaidOut(&t.acc, &t.s, d, 2):
	default:
		pvEach(pvSIMD, t, v, stride, bn)
		return
	}
	_ = v[(bn-1)*stride+d-1]
	_, _ = t.acc[t.n-1][d-1], t.s[t.n-1][bn-1]
	a := attnArgs{q: unsafe.Pointer(&t.acc[0][0]), s: unsafe.Pointer(&t.s[0][0]), kv: unsafe.Pointer(&v[0]),
		stride: 4 * stride, keys: bn, d: d, pf: attnPrefetchRows * 4 * stride}
	if t.n == 2 {
		attnPV2AVX(&a)
	} else {
		attnPV4AVX(&a)
	}
}

// scores512 is attnKernels.scores for AVX-512: tiles of four vectors go
// to attnScores4 four keys at a time and tiles of two (two grouped heads
// in decode) to attnScores2 eight keys at a time, for head sizes that are
// multiples of 16; the rest is scoresDot2 with the AVX2 kernels.
func scores512(t *attnTile, k []float32, stride, bn int) {
	d := len(t.q[0])
	step := 4
	if t.n == 2 {
		step = 8
	}
	n := bn / step * step
	if (t.n != 4 && t.n != 2) || d%16 != 0 || n == 0 || !tileLaidOut(&t.q, &t.s, d, t.n) {
		scoresDot2(dot2SIMD, t, k, stride, bn, 0)
		return
	}
	_ = k[(bn-1)*stride+d-1]
	_, _ = t.q[t.n-1][d-1], t.s[t.n-1][bn-1]
	a := attnArgs{q: unsafe.Pointer(&t.q[0][0]), s: unsafe.Pointer(&t.s[0][0]), kv: unsafe.Pointer(&k[0]),
		stride: 4 * stride, keys: n, d: d, pf: attnPrefetchRows * 4 * stride}
	if t.n == 2 {
		attnScores2(&a)
	} else {
		attnScores4(&a)
	}
	if n < bn {
		scoresDot2(dot2SIMD, t, k, stride, bn, n)
	}
}

// pv512 is attnKernels.pv for AVX-512: tiles of four vectors with head
// sizes that are multiples of 64 go to attnPV4, tiles of two with
// multiples of 128 to attnPV2, the rest to pvSIMD per vector.
func pv512(t *attnTile, v []float32, stride, bn int) {
	d := len(t.acc[0])
	switch {
	case t.n == 4 && d%64 == 0 && tileLaidOut(&t.acc, &t.s, d, 4):
	case t.n == 2 && d%128 == 0 && tileLaidOut(&t.acc, &t.s, d, 2):
	default:
		pvEach(pvSIMD, t, v, stride, bn)
		return
	}
	_ = v[(bn-1)*stride+d-1]
	_, _ = t.acc[t.n-1][d-1], t.s[t.n-1][bn-1]
	a := attnArgs{q: unsafe.Pointer(&t.acc[0][0]), s: unsafe.Pointer(&t.s[0][0]), kv: unsafe.Pointer(&v[0]),
		stride: 4 * stride, keys: bn, d: d, pf: attnPrefetchRows * 4 * stride}
	if t.n == 2 {
		attnPV2(&a)
	} else {
		attnPV4(&a)
	}
}
