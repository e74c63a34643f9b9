package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"mlxchat/tensor"
)

// Tests of the Gemma 3n ops against float64 references written from their
// definitions in tensor.Backend.

func gemmaVals(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func gemmaT(t *testing.T, vals []float32, shape ...int) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromF32(vals, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func gemmaClose(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if g := float64(got[i]); math.IsNaN(g) || math.Abs(g-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s: value %d = %g, want %g", what, i, g, want[i])
		}
	}
}

func gemmaBackends(t *testing.T) []*Backend {
	bs := []*Backend{New(1), New(3)}
	t.Cleanup(func() {
		for _, b := range bs {
			b.Close()
		}
	})
	return bs
}

func TestGaussianTopK(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, b := range gemmaBackends(t) {
		for _, tc := range []struct {
			rows, n int
			mult    float32
		}{{1, 8, 1.6448536}, {5, 300, 1.6448536}, {3, 64, 0}, {2, 16, -0.5}} {
			x := gemmaVals(rng, tc.rows*tc.n)
			want := make([]float64, len(x))
			for r := 0; r < tc.rows; r++ {
				row := x[r*tc.n : (r+1)*tc.n]
				var s, ss float64
				for _, v := range row {
					s += float64(v)
				}
				mean := s / float64(tc.n)
				for _, v := range row {
					ss += (float64(v) - mean) * (float64(v) - mean)
				}
				cut := mean + math.Sqrt(ss/float64(tc.n))*float64(tc.mult)
				for i, v := range row {
					want[r*tc.n+i] = math.Max(0, float64(v)-cut)
				}
			}
			xt := gemmaT(t, x, tc.rows, tc.n)
			if err := b.GaussianTopK(xt, xt, tc.mult); err != nil { // in place
				t.Fatal(err)
			}
			gemmaClose(t, "gaussian top-k", xt.F32(), want, 1e-6)
		}
	}
}

func TestMatchRMS(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, b := range gemmaBackends(t) {
		rows, n := 7, 96
		x, ref := gemmaVals(rng, rows*n), gemmaVals(rng, rows*n)
		for i := range x[:n] { // a row whose mean square is below eps
			x[i] *= 1e-4
		}
		for i := range ref {
			ref[i] *= 3
		}
		const eps = 1e-5
		want := make([]float64, len(x))
		for r := 0; r < rows; r++ {
			var mx, mr float64
			for i := 0; i < n; i++ {
				mx += float64(x[r*n+i]) * float64(x[r*n+i])
				mr += float64(ref[r*n+i]) * float64(ref[r*n+i])
			}
			f := math.Sqrt(mr/float64(n)) / math.Sqrt(math.Max(mx/float64(n), eps))
			for i := 0; i < n; i++ {
				want[r*n+i] = float64(x[r*n+i]) * f
			}
		}
		dst := b.Alloc(rows, n)
		if err := b.MatchRMS(dst, gemmaT(t, x, rows, n), gemmaT(t, ref, rows, n), eps); err != nil {
			t.Fatal(err)
		}
		gemmaClose(t, "match rms", dst.F32(), want, 1e-6)
	}
}

func TestMixStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, b := range gemmaBackends(t) {
		for _, tc := range []struct{ s, r, n, w int }{{4, 4, 3, 40}, {2, 1, 5, 7}, {1, 3, 1, 9}} {
			x := gemmaVals(rng, tc.s*tc.n*tc.w)
			c := gemmaVals(rng, tc.n*tc.r*tc.s)
			want := make([]float64, tc.r*tc.n*tc.w)
			for r := 0; r < tc.r; r++ {
				for t := 0; t < tc.n; t++ {
					for i := 0; i < tc.w; i++ {
						var s float64
						for k := 0; k < tc.s; k++ {
							s += float64(c[t*tc.r*tc.s+r*tc.s+k]) * float64(x[(k*tc.n+t)*tc.w+i])
						}
						want[(r*tc.n+t)*tc.w+i] = s
					}
				}
			}
			dst := b.Alloc(tc.r, tc.n, tc.w)
			if err := b.MixStreams(dst, gemmaT(t, x, tc.s, tc.n, tc.w), gemmaT(t, c, tc.n, tc.r*tc.s)); err != nil {
				t.Fatal(err)
			}
			gemmaClose(t, "mix streams", dst.F32(), want, 1e-5)
		}
	}
}

func TestAddScaledStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, b := range gemmaBackends(t) {
		s, n, w := 4, 6, 33
		a, y, c := gemmaVals(rng, s*n*w), gemmaVals(rng, n*w), gemmaVals(rng, n*s)
		want := make([]float64, len(a))
		for si := 0; si < s; si++ {
			for t := 0; t < n; t++ {
				for i := 0; i < w; i++ {
					want[(si*n+t)*w+i] = float64(a[(si*n+t)*w+i]) + float64(c[t*s+si])*float64(y[t*w+i])
				}
			}
		}
		at := gemmaT(t, a, s, n, w)
		if err := b.AddScaledStreams(at, at, gemmaT(t, y, n, w), gemmaT(t, c, n, s)); err != nil {
			t.Fatal(err)
		}
		gemmaClose(t, "add scaled streams", at.F32(), want, 1e-6)
	}
}

func TestSwapAxes01(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, b := range gemmaBackends(t) {
		a, bb, w := 5, 3, 4
		x := gemmaVals(rng, a*bb*w)
		dst := b.Alloc(bb, a, w)
		if err := b.SwapAxes01(dst, gemmaT(t, x, a, bb, w)); err != nil {
			t.Fatal(err)
		}
		d := dst.F32()
		for i := 0; i < a; i++ {
			for j := 0; j < bb; j++ {
				for k := 0; k < w; k++ {
					if d[(j*a+i)*w+k] != x[(i*bb+j)*w+k] {
						t.Fatalf("swap: dst[%d,%d,%d] = %g, want %g", j, i, k, d[(j*a+i)*w+k], x[(i*bb+j)*w+k])
					}
				}
			}
		}
	}
}

func TestGemmaOpErrors(t *testing.T) {
	b := New(1)
	defer b.Close()
	x := b.Alloc(4, 2, 8)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"topk size", b.GaussianTopK(b.Alloc(3), b.Alloc(4), 1)},
		{"match ref", b.MatchRMS(b.Alloc(2, 8), b.Alloc(2, 8), b.Alloc(2, 4), 1e-5)},
		{"mix alias", b.MixStreams(x, x, b.Alloc(2, 16))},
		{"mix coef", b.MixStreams(b.Alloc(4, 2, 8), x, b.Alloc(2, 4))},
		{"mix rank", b.MixStreams(b.Alloc(4, 16), x, b.Alloc(2, 16))},
		{"axpy b", b.AddScaledStreams(x, x, b.Alloc(3, 8), b.Alloc(2, 4))},
		{"axpy coef", b.AddScaledStreams(x, x, b.Alloc(2, 8), b.Alloc(2, 3))},
		{"swap shape", b.SwapAxes01(b.Alloc(4, 2, 8), x)},
		{"swap alias", b.SwapAxes01(&tensor.Tensor{DType: tensor.F32, Shape: []int{2, 4, 8}, Data: x.Data}, x)},
	} {
		if tc.err == nil {
			t.Errorf("%s: want an error", tc.name)
		}
	}
}

// BenchmarkStreamOps times Gemma 3n's AltUp stream mixing at decode size
// (4 streams of 2048, one token): MixStreams with 4x4 coefficients and
// AddScaledStreams, on one thread of each kernel level.
func BenchmarkStreamOps(b *testing.B) {
	rng := rand.New(rand.NewPCG(13, 14))
	const s, w = 4, 2048
	for _, l := range availableLevels() {
		be := newBackendLevel(1, l)
		x, _ := tensor.FromF32(gemmaVals(rng, s*w), s, 1, w)
		y, _ := tensor.FromF32(gemmaVals(rng, w), 1, w)
		mix, _ := tensor.FromF32(gemmaVals(rng, s*s), 1, s*s)
		scale, _ := tensor.FromF32(gemmaVals(rng, s), 1, s)
		dst := be.Alloc(s, 1, w)
		b.Run("mix/"+l.String(), func(b *testing.B) {
			for b.Loop() {
				if err := be.MixStreams(dst, x, mix); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("addscaled/"+l.String(), func(b *testing.B) {
			for b.Loop() {
				if err := be.AddScaledStreams(dst, x, y, scale); err != nil {
					b.Fatal(err)
				}
			}
		})
		be.Close()
	}
}
