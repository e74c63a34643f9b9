package engine

import (
	"math"
	"math/rand"
	"testing"
)

// TestExpNeg compares expNeg with math.Exp over [-745, 0] (evenly spaced
// and random arguments, subnormal results among them) and at its edges.
func TestExpNeg(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	check := func(x float64) {
		got, want := expNeg(x), math.Exp(x)
		if want == 0 {
			if got != 0 {
				t.Fatalf("expNeg(%v) = %v, want 0", x, got)
			}
			return
		}
		tol := 1e-15
		if want < 0x1p-1000 {
			// Subnormal results keep fewer bits.
			tol = math.Max(tol, 0x1p-1074/want)
		}
		if e := math.Abs(got-want) / want; e > tol {
			t.Fatalf("expNeg(%v) = %v, math.Exp %v: relative error %g > %g", x, got, want, e, tol)
		}
	}
	for i := 0; i <= 1_000_000; i++ {
		check(-745 * float64(i) / 1_000_000)
		check(-rng.ExpFloat64() * 20)
	}
	for _, x := range []float64{0, math.Copysign(0, -1), -1e-300, -0.5 * math.Ln2, -708.3, -744.4, -745, -745.2, -1000} {
		check(x)
	}
	if got := expNeg(math.Inf(-1)); got != 0 {
		t.Fatalf("expNeg(-Inf) = %v, want 0", got)
	}
	if got := expNeg(math.NaN()); !math.IsNaN(got) {
		t.Fatalf("expNeg(NaN) = %v, want NaN", got)
	}
	if got := expNeg(0); got != 1 {
		t.Fatalf("expNeg(0) = %v, want 1", got)
	}
}
