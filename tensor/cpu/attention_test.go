package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"mlxchat/tensor"
)

// TestAttentionForms checks Attention against the float64 brute force on
// the shapes that pick its different paths on every kernel level: query
// vectors in full tiles of four (the AVX-512 kernels: head sizes that are
// multiples of 16 and 64) and in partial ones, key counts that are not a
// multiple of the tile or the block, decode rows whose keys are split
// between threads (one range entirely outside a sliding window), storage
// order that is not position order (a wrapped ring), trimmed caches, and
// chunks whose blocks are seen by some rows only.
func TestAttentionForms(t *testing.T) {
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
		{"gemma 3n head size chunk", 90, 37, []tensor.Span{{Start: 0, Len: 127}}, 0, 8, 2, 256},
		{"tiles, head size not a multiple of 64", 100, 29, []tensor.Span{{Start: 20, Len: 109}}, 40, 8, 2, 48},
		{"gemma 3n decode", 1400, 1, []tensor.Span{{Start: 0, Len: 1401}}, 0, 8, 2, 256},
		{"decode keys not a multiple of 4", 1032, 1, []tensor.Span{{Start: 0, Len: 4}, {Start: 500, Len: 533}}, 0, 4, 1, 64},
		{"decode, one range outside the window", 1100, 1, []tensor.Span{{Start: 0, Len: 1101}}, 300, 8, 2, 64},
		{"decode wrapped ring", 1500, 1, []tensor.Span{{Start: 1100, Len: 401}, {Start: 700, Len: 400}}, 512, 4, 1, 128},
		{"two decode rows", 900, 2, []tensor.Span{{Start: 0, Len: 902}}, 0, 4, 2, 64},
		{"three rows, group of 2", 700, 3, []tensor.Span{{Start: 0, Len: 703}}, 0, 4, 2, 64},
		{"decode mha", 600, 1, []tensor.Span{{Start: 0, Len: 601}}, 0, 3, 3, 32},
		{"gemma 3 4b decode (pairs of heads)", 3000, 1, []tensor.Span{{Start: 0, Len: 3001}}, 1024, 8, 4, 256},
		{"qwen3 decode (pairs of heads)", 777, 1, []tensor.Span{{Start: 0, Len: 778}}, 0, 4, 2, 128},
	}
	for _, bk := range backends(t) {
		for _, tc := range tests {
			m, err := tensor.NewMask(tc.qStart, tc.nq, tc.keys, tc.window)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			nk := m.KeyLen()
			q := mustT(t, randF32(rng, tc.nq*tc.hq*tc.d, 1), tc.nq, tc.hq, tc.d)
			k := mustT(t, randF32(rng, nk*tc.hkv*tc.d, 1), nk, tc.hkv, tc.d)
			v := mustT(t, randF32(rng, nk*tc.hkv*tc.d, 1), nk, tc.hkv, tc.d)
			scale := float32(1 / math.Sqrt(float64(tc.d)))
			dst := bk.Alloc(tc.nq, tc.hq, tc.d)
			if err := bk.Attention(dst, q, k, v, m, scale); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			name := fmt.Sprintf("%s (simd %v, avx512 %v, %d threads)", tc.name, bk.simd, bk.avx512, bk.Threads())
			compare(t, name, dst.F32(), refAttention(q.F32(), k.F32(), v.F32(), tc.nq, tc.hq, nk, tc.hkv, tc.d, m, float64(scale)), 1e-5, 1e-4)
		}
	}
}

// BenchmarkAttentionPrefill times a 512-row chunk of Gemma 3n E2B shape
// (8 query heads, 2 KV heads, head size 256) after 1536 cached keys.
func BenchmarkAttentionPrefill(b *testing.B) { benchAttention(b, 512, 1536, 1, 8, 2, 256) }

// BenchmarkAttentionDecode times one decode row of the same shape after
// 2048 cached keys.
func BenchmarkAttentionDecode(b *testing.B) { benchAttention(b, 1, 2048, 1, 8, 2, 256) }

// BenchmarkAttentionDecodeCold is one decode step after 8192 keys, its
// keys and values read from memory as in a forward pass: it cycles through
// four layers' caches, 128 MiB in all.
func BenchmarkAttentionDecodeCold(b *testing.B) { benchAttention(b, 1, 8192, 4, 8, 2, 256) }

// BenchmarkAttentionDecodePairs is BenchmarkAttentionDecodeCold with two
// query heads per KV head (Gemma 3 4B: 8 heads, 4 KV heads, head size 256).
func BenchmarkAttentionDecodePairs(b *testing.B) { benchAttention(b, 1, 8192, 4, 8, 4, 256) }

// benchAttention times Attention on 2 threads at each SIMD kernel level
// for nq query rows of hq heads (hkv KV heads of size d) after past cached
// keys, cycling through sets of keys and values.
func benchAttention(b *testing.B, nq, past, sets, hq, hkv, d int) {
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
	for _, l := range availableLevels()[1:] {
		b.Run(l.String(), func(b *testing.B) {
			bk := newBackendLevel(2, l)
			defer bk.Close()
			out := bk.Alloc(nq, hq, d)
			for i := 0; b.Loop(); i++ {
				if err := bk.Attention(out, q, ks[i%sets], vs[i%sets], m, 0.0625); err != nil {
					b.Fatal(err)
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
