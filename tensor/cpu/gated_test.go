package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"mlxchat/tensor"
)

// TestGatedMatMul holds GatedMatMul to a float64 reference of what it
// replaces (MatMul, Add of the bias, Mul) wherever the gate is non-zero,
// and to exact zeros where it is zero, at every kernel level, both widths,
// every group size and scale dtype, for gates from empty to full
// (gathered rows and the whole product) and 1-5 rows of x. The portable
// kernels must also match MatMul+Add+Mul bit for bit; the SIMD ones run a
// gathered row alone where MatMul runs it beside others (pairs, four-row
// passes), which sums in another order.
func TestGatedMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	sizes := []struct{ n, in, out int }{{1, 256, 300}, {2, 384, 97}, {3, 1024, 64}, {5, 128, 40}, {1, 320, 77}}
	eachQuantCase(t, rng, []int{4, 8}, sizes, func(c quantCase) {
		for _, density := range []float64{0, 0.05, 0.2, 0.6, 1} {
			for _, withBias := range []bool{false, true} {
				what := fmt.Sprintf("%s density %g bias %v", c, density, withBias)
				checkGated(t, what, c.b, rng, c.m, c.x, c.n, density, withBias, c.want, c.mag)
			}
		}
	})
}

func checkGated(t *testing.T, what string, b *Backend, rng *rand.Rand, m *tensor.Matrix, xv []float32, n int, density float64, withBias bool,
	want, mag []float64) {
	t.Helper()
	out := m.Out
	gv := make([]float32, n*out)
	for i := range gv {
		if rng.Float64() < density {
			gv[i] = float32(rng.NormFloat64())
		}
	}
	var bias *tensor.Tensor
	if withBias {
		bias = mustT(t, randF32(rng, out, 0.5), 1, out)
	}
	x := mustT(t, xv, n, m.In)
	// What GatedMatMul replaces.
	u := b.Alloc(n, out)
	if err := b.MatMul(u, x, m); err != nil {
		t.Fatal(err)
	}
	if bias != nil {
		if err := b.Add(u, u, bias); err != nil {
			t.Fatal(err)
		}
	}
	g := mustT(t, append([]float32(nil), gv...), n, out)
	if err := b.GatedMatMul(g, x, m, bias); err != nil {
		t.Fatal(err)
	}
	got, uv := g.F32(), u.F32()
	for i, gi := range gv {
		if gi == 0 {
			if got[i] != 0 {
				t.Fatalf("%s: element %d = %g where the gate is 0", what, i, got[i])
			}
			continue
		}
		if w := gi * uv[i]; got[i] != w && !b.simd {
			t.Fatalf("%s: element %d = %g, MatMul+Add+Mul %g", what, i, got[i], w)
		}
		exact := want[i]
		if bias != nil {
			exact += float64(bias.F32()[i%out])
		}
		tol := math.Abs(float64(gi)) * (decodeTolerance*mag[i] + 1e-6*math.Abs(exact) + 1e-30)
		if d := math.Abs(float64(got[i]) - float64(gi)*exact); !(d <= tol) {
			t.Fatalf("%s: element %d = %g, want %g (|Δ| %.3g)", what, i, got[i], float64(gi)*exact, d)
		}
	}
}

// TestMatVecRows runs the gathered kernel calls directly (GatedMatMul
// falls back to the whole product when they decline): each listed row's
// dot is within the decode kernels' tolerance of the float64 reference,
// for scattered, adjacent, first and last rows.
func TestMatVecRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, b := range backends(t) {
		for _, bits := range []int{4, 8} {
			for _, gs := range []int{32, 64, 128} {
				for _, sd := range []tensor.DType{tensor.BF16, tensor.F32} {
					const in, out = 512, 203
					m, err := tensor.QuantizeAffine(randF32(rng, out*in, 0.05), out, in, bits, gs, sd)
					if err != nil {
						t.Fatal(err)
					}
					if !b.canGather(m) {
						continue
					}
					wd, terms := refDequant(t, m)
					xv := testX(rng, 1, in)
					want, mag := refProduct(xv, wd, terms, 1, in, out)
					for _, rows := range [][]int32{{0}, {out - 1}, {0, 1, 2, 3, 4}, {3, 17, 18, 90, 150, 202}, evenRows(out)} {
						dst := make([]float32, len(rows))
						if !b.matvecRows(dst, xv, m, rows) {
							t.Fatalf("q%d g%d %s: matvecRows declined a finite x", bits, gs, sd)
						}
						w, mg := make([]float64, len(rows)), make([]float64, len(rows))
						for k, j := range rows {
							w[k], mg[k] = want[j], mag[j]
						}
						checkProduct(t, fmt.Sprintf("%d threads avx512 %v q%d g%d %s rows %v", b.threads, b.avx512, bits, gs, sd, rows), dst, w, mg)
					}
				}
			}
		}
	}
}

// TestGatedMatMulNaN: an x row the decode kernels cannot split (a NaN)
// goes through the whole product; the gate's zeros stay zero and the rest
// take the NaN, as MatMul and Mul give them.
func TestGatedMatMulNaN(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	for _, b := range backends(t) {
		m, err := tensor.QuantizeAffine(randF32(rng, 64*256, 0.05), 64, 256, 4, 64, tensor.BF16)
		if err != nil {
			t.Fatal(err)
		}
		xv := randF32(rng, 256, 1)
		xv[7] = float32(math.NaN())
		gv := make([]float32, 64)
		gv[3], gv[40] = 1, -2
		g := mustT(t, gv, 1, 64)
		if err := b.GatedMatMul(g, mustT(t, xv, 1, 256), m, nil); err != nil {
			t.Fatal(err)
		}
		for j, v := range g.F32() {
			if nan := math.IsNaN(float64(v)); nan != (j == 3 || j == 40) || (!nan && v != 0) {
				t.Fatalf("avx512 %v simd %v: element %d = %g", b.avx512, b.simd, j, v)
			}
		}
	}
}

func evenRows(out int) []int32 {
	var r []int32
	for j := 0; j < out; j += 2 {
		r = append(r, int32(j))
	}
	return r
}
