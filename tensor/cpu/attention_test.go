package cpu

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"mlxchat/tensor"
)

// TestAttentionBlockedMatchesRows checks that the prefill (blocked) form of
// Attention gives bit-identical results to the per-(row, head) form, on odd
// row counts, head groupings, head sizes, key blocks that straddle
// attnBlock, trimmed caches and sliding windows, and on every kernel level.
func TestAttentionBlockedMatchesRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	tests := []struct {
		name       string
		qStart, nq int
		keys       []tensor.Span
		window     int
		hq, hkv, d int
	}{
		{"causal odd", 0, 7, []tensor.Span{{Start: 0, Len: 7}}, 0, 8, 2, 36},
		{"mha rows not a multiple", 130, 19, []tensor.Span{{Start: 0, Len: 149}}, 0, 3, 3, 17},
		{"gqa one kv head", 60, 33, []tensor.Span{{Start: 0, Len: 93}}, 0, 5, 1, 40},
		{"trimmed chunk", 200, 21, []tensor.Span{{Start: 0, Len: 4}, {Start: 120, Len: 101}}, 0, 8, 2, 32},
		{"sliding window", 150, 45, []tensor.Span{{Start: 60, Len: 135}}, 70, 4, 2, 24},
		{"window below block", 0, 67, []tensor.Span{{Start: 0, Len: 67}}, 5, 2, 1, 8},
		{"group above attnQueries", 10, 5, []tensor.Span{{Start: 0, Len: 15}}, 0, 20, 1, 8},
		{"gemma 3n head size", 90, 37, []tensor.Span{{Start: 0, Len: 127}}, 0, 8, 2, 256}, // four vectors share value rows (pv4)
		{"pv4 window, head size not a multiple of 64", 100, 29, []tensor.Span{{Start: 20, Len: 109}}, 40, 8, 2, 48},
	}
	for _, bk := range backends(t) {
		dot, axpy, exps := dotF32, axpyF32, expSubF32
		if bk.simd {
			dot, axpy, exps = dotSIMD, axpySIMD, expSubSIMD
		}
		for _, tc := range tests {
			m, err := tensor.NewMask(tc.qStart, tc.nq, tc.keys, tc.window)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			nk := m.KeyLen()
			q := mustT(t, randF32(rng, tc.nq*tc.hq*tc.d, 1), tc.nq, tc.hq, tc.d)
			k := mustT(t, randF32(rng, nk*tc.hkv*tc.d, 1), nk, tc.hkv, tc.d)
			v := mustT(t, randF32(rng, nk*tc.hkv*tc.d, 1), nk, tc.hkv, tc.d)
			shape, err := tensor.CheckAttention(q, q, k, v, m)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			scale := float32(1 / math.Sqrt(float64(tc.d)))
			rows := make([]float32, tc.nq*tc.hq*tc.d)
			blocked := make([]float32, len(rows))
			var b1, b2 atomic.Int64
			bk.attentionRows(rows, q.F32(), k.F32(), v.F32(), m.KeyPositions(), m, shape, scale, dot, axpy, exps, &b1)
			bk.attentionBlocked(blocked, q.F32(), k.F32(), v.F32(), m.KeyPositions(), m, shape, scale, dot, axpy, exps, &b2)
			if b1.Load() != 0 || b2.Load() != 0 {
				t.Fatalf("%s: blind rows %d %d", tc.name, b1.Load(), b2.Load())
			}
			for i := range rows {
				if math.Float32bits(rows[i]) != math.Float32bits(blocked[i]) {
					t.Fatalf("%s (simd %v, %d threads): element %d blocked %v, per-row %v", tc.name, bk.simd, bk.Threads(), i, blocked[i], rows[i])
				}
			}
			// Attention itself takes the blocked form for these chunks and
			// must still match the float64 brute force.
			dst := bk.Alloc(tc.nq, tc.hq, tc.d)
			if err := bk.Attention(dst, q, k, v, m, scale); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			compare(t, tc.name, dst.F32(), refAttention(q.F32(), k.F32(), v.F32(), tc.nq, tc.hq, nk, tc.hkv, tc.d, m, float64(scale)), 1e-5, 1e-4)
		}
	}
}

// BenchmarkAttentionPrefill times a 512-row chunk of Gemma 3n E2B shape
// (8 query heads, 2 KV heads, head size 256) after 1536 cached keys.
func BenchmarkAttentionPrefill(b *testing.B) { benchAttentionForms(b, 512, 1536, 1) }

// BenchmarkAttentionDecode times one decode row of the same shape after
// 2048 cached keys.
func BenchmarkAttentionDecode(b *testing.B) { benchAttentionForms(b, 1, 2048, 1) }

// BenchmarkAttentionDecodeCold is one decode step after 8192 keys, its
// keys and values read from memory as in a forward pass: it cycles through
// four layers' caches, 128 MiB in all.
func BenchmarkAttentionDecodeCold(b *testing.B) { benchAttentionForms(b, 1, 8192, 4) }

// benchAttentionForms times both forms of Attention on 2 threads for nq
// query rows after past cached keys, cycling through sets of keys and
// values.
func benchAttentionForms(b *testing.B, nq, past, sets int) {
	for _, form := range []string{"rows", "blocked"} {
		b.Run(form, func(b *testing.B) {
			const hq, hkv, d = 8, 2, 256
			bk := New(2)
			defer bk.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			m, err := tensor.NewMask(past, nq, []tensor.Span{{Start: 0, Len: past + nq}}, 0)
			if err != nil {
				b.Fatal(err)
			}
			nk := m.KeyLen()
			q, _ := tensor.FromF32(randF32(rng, nq*hq*d, 1), nq, hq, d)
			ks, vs := make([]*tensor.Tensor, sets), make([]*tensor.Tensor, sets)
			for i := range ks {
				ks[i], _ = tensor.FromF32(randF32(rng, nk*hkv*d, 1), nk, hkv, d)
				vs[i], _ = tensor.FromF32(randF32(rng, nk*hkv*d, 1), nk, hkv, d)
			}
			shape, err := tensor.CheckAttention(q, q, ks[0], vs[0], m)
			if err != nil {
				b.Fatal(err)
			}
			out := make([]float32, nq*hq*d)
			var blind atomic.Int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k, v := ks[i%sets].F32(), vs[i%sets].F32()
				if form == "rows" {
					bk.attentionRows(out, q.F32(), k, v, m.KeyPositions(), m, shape, 0.0625, dotSIMD, axpySIMD, expSubSIMD, &blind)
				} else {
					bk.attentionBlocked(out, q.F32(), k, v, m.KeyPositions(), m, shape, 0.0625, dotSIMD, axpySIMD, expSubSIMD, &blind)
				}
			}
			flops := 4.0 * float64(d) * float64(hq) * (float64(past)*float64(nq) + float64(nq*(nq+1)/2))
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(float64(2*nk*hkv*d*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "KV-GB/s")
		})
	}
}

// TestExpSub checks the softmax exponentials of both forms against
// float64 math.Exp over [-87, 0] (lengths that are not multiples of 8
// included): within 4e-7 relative, a few float32 ulps.
func TestExpSub(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, f := range []struct {
		name string
		fn   func(dst, src []float32, m float32)
	}{{"portable", expSubF32}, {"simd", expSubSIMD}} {
		for _, n := range []int{1, 7, 8, 13, 64} {
			src := make([]float32, 64)
			for i := range src {
				src[i] = float32(rng.Float64()*83 - 80)
			}
			src[0] = 3 // x - m = 0 exactly
			m := float32(3)
			dst := make([]float32, 64)
			f.fn(dst[:n], src, m)
			for i := 0; i < n; i++ {
				want := math.Exp(float64(src[i] - m))
				if d := math.Abs(float64(dst[i]) - want); d > 4e-7*want {
					t.Fatalf("%s n=%d: e^%v = %v, want %v", f.name, n, src[i]-m, dst[i], want)
				}
			}
		}
	}
}
