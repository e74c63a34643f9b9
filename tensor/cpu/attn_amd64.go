//go:build amd64

package cpu

import "unsafe"

//go:generate go run gen_attn.go

// attnArgs is what the attention kernels read (AVX-512: attn512_amd64.s,
// AVX2: attn_amd64.s, both written by gen_attn.go) for one tile of two or four query vectors. Offsets
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

// scores512 and scoresAVX2 are attnKernels.scores for AVX-512 and AVX2.
func scores512(t *attnTile, k []float32, stride, bn int)  { scoresTiled(t, k, stride, bn, true) }
func scoresAVX2(t *attnTile, k []float32, stride, bn int) { scoresTiled(t, k, stride, bn, false) }

// pv512 and pvAVX2 are attnKernels.pv for AVX-512 and AVX2.
func pv512(t *attnTile, v []float32, stride, bn int)  { pvTiled(t, v, stride, bn, true) }
func pvAVX2(t *attnTile, v []float32, stride, bn int) { pvTiled(t, v, stride, bn, false) }

// scoresTiled runs the generated scores kernels of AVX-512 (wide) or AVX2
// (gen_attn.go) on tiles of four or two vectors whose head size is a
// multiple of a register (16 or 8 floats), over as many keys as fill
// whole kernel tiles (4 or 2 keys for four vectors, twice that for two);
// the other keys and tiles go to scoresDot2 with the AVX2 kernels.
func scoresTiled(t *attnTile, k []float32, stride, bn int, wide bool) {
	d := len(t.q[0])
	lanes, step := 8, 2
	if wide {
		lanes, step = 16, 4
	}
	if t.n == 2 {
		step *= 2
	}
	n := bn / step * step
	if (t.n != 4 && t.n != 2) || d%lanes != 0 || n == 0 || !tileLaidOut(&t.q, &t.s, d, t.n) {
		scoresDot2(dot2SIMD, t, k, stride, bn, 0)
		return
	}
	_ = k[(bn-1)*stride+d-1]
	_, _ = t.q[t.n-1][d-1], t.s[t.n-1][bn-1]
	a := attnArgs{q: unsafe.Pointer(&t.q[0][0]), s: unsafe.Pointer(&t.s[0][0]), kv: unsafe.Pointer(&k[0]),
		stride: 4 * stride, keys: n, d: d, pf: attnPrefetchRows * 4 * stride}
	// Direct calls: through a function value a would escape (an
	// allocation per call).
	switch {
	case wide && t.n == 4:
		attnScores4(&a)
	case wide:
		attnScores2(&a)
	case t.n == 4:
		attnScores4AVX(&a)
	default:
		attnScores2AVX(&a)
	}
	if n < bn {
		scoresDot2(dot2SIMD, t, k, stride, bn, n)
	}
}

// pvTiled runs the generated pv kernels of AVX-512 (wide) or AVX2 on
// tiles of four or two vectors whose head size is a multiple of the
// kernel's chunk (64 or 16 floats for four vectors, twice that for two);
// the other tiles go to pvSIMD per vector.
func pvTiled(t *attnTile, v []float32, stride, bn int, wide bool) {
	d := len(t.acc[0])
	chunk := 16
	if wide {
		chunk = 64
	}
	if t.n == 2 {
		chunk *= 2
	}
	if (t.n != 4 && t.n != 2) || d%chunk != 0 || !tileLaidOut(&t.acc, &t.s, d, t.n) {
		pvEach(pvSIMD, t, v, stride, bn)
		return
	}
	_ = v[(bn-1)*stride+d-1]
	_, _ = t.acc[t.n-1][d-1], t.s[t.n-1][bn-1]
	a := attnArgs{q: unsafe.Pointer(&t.acc[0][0]), s: unsafe.Pointer(&t.s[0][0]), kv: unsafe.Pointer(&v[0]),
		stride: 4 * stride, keys: bn, d: d, pf: attnPrefetchRows * 4 * stride}
	switch {
	case wide && t.n == 4:
		attnPV4(&a)
	case wide:
		attnPV2(&a)
	case t.n == 4:
		attnPV4AVX(&a)
	default:
		attnPV2AVX(&a)
	}
}
