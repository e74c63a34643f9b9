package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestElementwiseKernelsExact checks the vector forms of the elementwise
// kernels against the Go loops bit for bit, at lengths around the 8-wide
// blocks and with dst aliasing an input (the ops run in place).
func TestElementwiseKernelsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	kernels := []struct {
		name      string
		vec, loop func(d, x, y []float32)
	}{
		{"add", addSIMD, addKernel},
		{"mul", mulSIMD, mulKernel},
		{"scale", func(d, x, _ []float32) { scaleSIMD(d, x, 0.37) }, func(d, x, _ []float32) { scaleKernel(d, x, 0.37) }},
		{"scale·w", func(d, x, y []float32) { scaleMulSIMD(d, x, y, 1.7e-3) }, func(d, x, y []float32) { scaleMulKernel(d, x, y, 1.7e-3) }},
	}
	for _, k := range kernels {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 2048, 2051} {
			x, y := randF32(rng, n, 3), randF32(rng, n, 3)
			if n > 3 {
				x[1], y[2] = float32(math.Inf(1)), float32(math.NaN())
			}
			want, got := make([]float32, n), make([]float32, n)
			k.loop(want, x, y)
			k.vec(got, x, y)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s n=%d: [%d] = %g, Go loop %g", k.name, n, i, got[i], want[i])
				}
			}
			inPlace := append([]float32(nil), x...)
			k.vec(inPlace, inPlace, y)
			for i := range want {
				if math.Float32bits(inPlace[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s n=%d in place: [%d] = %g, want %g", k.name, n, i, inPlace[i], want[i])
				}
			}
		}
	}
}

// TestRMSNormInPlaceLevels runs RMSNorm in place (as a decode step does,
// on one 2048-wide row) at every kernel level and compares with the
// float64 definition.
func TestRMSNormInPlaceLevels(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 22))
	const n, eps = 2051, 1e-6
	xv, wv := randF32(rng, 2*n, 4), randF32(rng, n, 1)
	want := refRMSNorm(xv, wv, n, eps)
	for _, l := range availableLevels() {
		b := newBackendLevel(2, l)
		x := mustT(t, append([]float32(nil), xv...), 2, n)
		if err := b.RMSNorm(x, x, mustT(t, wv, n), eps); err != nil {
			t.Fatal(err)
		}
		compare(t, "rmsnorm in place", x.F32(), want, 1e-5, 1e-5)
		b.Close()
	}
}

// TestGaussianTopKRowSIMD compares the vector row with the Go loop: the
// float64 sums may round differently, so values agree to a few ulps of the
// cut; a zero comes out +0 and a NaN row stays NaN, as with Go's max.
func TestGaussianTopKRowSIMD(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 23))
	for _, n := range []int{1, 7, 8, 9, 64, 300, 8192, 8195} {
		for _, mult := range []float64{1.6448536, 0, -0.5} {
			x := randF32(rng, n, 3)
			want, got := make([]float32, n), make([]float32, n)
			gaussianTopKRow(want, x, mult)
			gaussianTopKRowSIMD(got, x, mult)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-6*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("n=%d mult=%g: [%d] = %g, Go loop %g", n, mult, i, got[i], want[i])
				}
			}
		}
	}
	zeros := make([]float32, 19)
	for i := range zeros {
		zeros[i] = float32(math.Copysign(0, -1))
	}
	got := make([]float32, len(zeros))
	gaussianTopKRowSIMD(got, zeros, 0) // cut +0: -0 - 0 = -0, clamped to +0
	for i, v := range got {
		if math.Float32bits(v) != 0 {
			t.Fatalf("all -0 row: [%d] = %g (bits %#x), want +0", i, v, math.Float32bits(v))
		}
	}
	nan := randF32(rng, 19, 1)
	nan[3] = float32(math.NaN())
	gaussianTopKRowSIMD(got, nan, 1)
	for i, v := range got {
		if !math.IsNaN(float64(v)) {
			t.Fatalf("row with a NaN: [%d] = %g, want NaN (as gaussianTopKRow)", i, v)
		}
	}
}

// TestMaxF32 checks maxF32 against a fold of the built-in max for every
// length up to 13 (the four-way body and the tail), with the maximum at
// each position, infinities and NaN.
func TestMaxF32(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	fold := func(s []float32) float32 {
		m := -inf
		for _, x := range s {
			m = max(m, x)
		}
		return m
	}
	same := func(a, b float32) bool { return a == b || (a != a && b != b) }
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 13; n++ {
		for at := 0; at < max(n, 1); at++ {
			for _, special := range []float32{0, 7, inf, -inf, nan} {
				s := make([]float32, n)
				for i := range s {
					s[i] = float32(rng.NormFloat64())
				}
				if n > 0 {
					s[at] = special
				}
				if got, want := maxF32(s), fold(s); !same(got, want) {
					t.Fatalf("maxF32(%v) = %v, want %v", s, got, want)
				}
			}
		}
	}
}
