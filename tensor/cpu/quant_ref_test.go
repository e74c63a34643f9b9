package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"mlxchat/tensor"
)

// refDequant decodes an MLX affine-quantized matrix to float64 without
// the package's (or package tensor's) code: codes are read bit by bit from
// the little-endian words, BF16/F16 scales and biases decoded here. It
// also returns |s·q| + |b| per weight: kernels that sum s·Σq·x and b·Σx
// separately (as MLX does) round relative to those terms, which can be
// far larger than the weight where s·q and b cancel.
func refDequant(t testing.TB, m *tensor.Matrix) (w, terms []float64) {
	t.Helper()
	dec := func(x *tensor.Tensor, i int) float64 {
		switch x.DType {
		case tensor.F32:
			return float64(math.Float32frombits(uint32(x.Data[4*i]) | uint32(x.Data[4*i+1])<<8 | uint32(x.Data[4*i+2])<<16 | uint32(x.Data[4*i+3])<<24))
		case tensor.BF16:
			return float64(math.Float32frombits((uint32(x.Data[2*i]) | uint32(x.Data[2*i+1])<<8) << 16))
		case tensor.F16:
			h := uint32(x.Data[2*i]) | uint32(x.Data[2*i+1])<<8
			sign, exp, frac := 1.0, int(h>>10&31), float64(h&1023)
			if h>>15 != 0 {
				sign = -1
			}
			if exp == 0 {
				return sign * frac * math.Pow(2, -24)
			}
			return sign * (1 + frac/1024) * math.Pow(2, float64(exp-15))
		}
		t.Fatalf("refDequant: scales dtype %s", x.DType)
		return 0
	}
	groups := m.In / m.GroupSize
	out := make([]float64, m.Out*m.In)
	terms = make([]float64, m.Out*m.In)
	bitsPerRow := m.In * m.Bits
	for o := 0; o < m.Out; o++ {
		for j := 0; j < m.In; j++ {
			bit := o*bitsPerRow + j*m.Bits
			var q uint32
			for k := 0; k < m.Bits; k++ {
				byteAt := m.W.Data[(bit+k)/8]
				q |= uint32(byteAt>>((bit+k)%8)&1) << k
			}
			g := o*groups + j/m.GroupSize
			sq, b := dec(m.Scales, g)*float64(q), dec(m.Biases, g)
			out[o*m.In+j] = sq + b
			terms[o*m.In+j] = math.Abs(sq) + math.Abs(b)
		}
	}
	return out, terms
}

// refProduct is y[r][o] = Σ x[r][i]·w[o][i] in float64, and the scale
// Σ |x[r][i]|·terms[o][i] that float32 rounding errors are relative to.
func refProduct(x []float32, w, terms []float64, n, in, out int) (y, mag []float64) {
	y, mag = make([]float64, n*out), make([]float64, n*out)
	for r := 0; r < n; r++ {
		for o := 0; o < out; o++ {
			var s, a float64
			for i := 0; i < in; i++ {
				s += float64(x[r*in+i]) * w[o*in+i]
				a += math.Abs(float64(x[r*in+i])) * terms[o*in+i]
			}
			y[r*out+o], mag[r*out+o] = s, a
		}
	}
	return y, mag
}

// decodeTolerance bounds |product - exact| relative to Σ|x|·(|s·q|+|b|)
// for the quantized products: float32 accumulation of a few thousand
// terms in 8-16 lanes stays near 1e-6; x rounded to int16 per group (what
// the decode kernels did before the two-level split) is off by up to
// max|x_g|/65534 per element, which activations with outliers (testX)
// push past 1e-4.
const decodeTolerance = 1e-5

// testX returns n rows of x like a transformer's activations: normal
// values, a few channels 300-1000 times larger, and a row whose values
// span many orders of magnitude.
func testX(rng *rand.Rand, n, in int) []float32 {
	x := randF32(rng, n*in, 1)
	for r := 0; r < n; r++ {
		row := x[r*in : (r+1)*in]
		for k := 0; k < 3; k++ {
			row[rng.IntN(in)] *= float32(300 + 700*rng.Float64())
		}
		if r%3 == 2 {
			for i := range row {
				row[i] *= float32(math.Pow(10, 4*rng.Float64()-2))
			}
		}
	}
	return x
}

func checkProduct(t *testing.T, what string, got []float32, want, mag []float64) {
	t.Helper()
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= decodeTolerance*mag[i]+1e-30) {
			t.Fatalf("%s: element %d = %g, want %g (|Δ| %.3g, %.3g of Σ|x|·(|s·q|+|b|))", what, i, got[i], want[i], d, d/mag[i])
		}
	}
}

// TestDecodeBF16ScalesInPlace holds the decode kernels that read
// bfloat16 scales and biases in place to the float32 path they replace:
// the same matrix with its scales and biases widened to F32 tensors
// beforehand (which takes the converting path) must give bit-identical
// products, for 1-3 x rows, both widths and every group size, with odd
// row counts (pairs plus a lone row) and several tiles and workers.
func TestDecodeBF16ScalesInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	widen := func(src *tensor.Tensor) *tensor.Tensor {
		dst := tensor.New(tensor.F32, src.Shape...)
		for i, v := range src.U16() {
			dst.F32()[i] = tensor.BF16ToF32(v)
		}
		return dst
	}
	for _, th := range []int{1, 3} {
		be := New(th)
		defer be.Close()
		for _, c := range []struct{ n, in, out, bits, gs int }{
			{1, 2048, 301, 4, 64}, {2, 1024, 77, 4, 32}, {3, 4096, 45, 4, 128},
			{1, 512, 1031, 8, 32}, {2, 2048, 67, 8, 64}, {1, 8192, 33, 8, 128},
		} {
			m, err := tensor.QuantizeAffine(randF32(rng, c.out*c.in, 0.05), c.out, c.in, c.bits, c.gs, tensor.BF16)
			if err != nil {
				t.Fatal(err)
			}
			mf := *m
			mf.Scales, mf.Biases = widen(m.Scales), widen(m.Biases)
			x := mustT(t, testX(rng, c.n, c.in), c.n, c.in)
			got, want := be.Alloc(c.n, c.out), be.Alloc(c.n, c.out)
			if err := be.MatMul(got, x, m); err != nil {
				t.Fatal(err)
			}
			if err := be.MatMul(want, x, &mf); err != nil {
				t.Fatal(err)
			}
			for i, v := range got.F32() {
				if v != want.F32()[i] {
					t.Fatalf("threads=%d n=%d in=%d out=%d q%d g%d: element %d is %v with bf16 scales in place, %v with them widened first",
						th, c.n, c.in, c.out, c.bits, c.gs, i, v, want.F32()[i])
				}
			}
		}
	}
}

// quantCase is one quantized product of a test sweep (eachQuantCase): a
// random matrix m, rows x with outliers (testX) and their float64 product
// want with its error scale mag (refProduct).
type quantCase struct {
	b          *Backend
	m          *tensor.Matrix
	n, in, out int
	x          []float32
	want, mag  []float64
}

func (c quantCase) String() string {
	return fmt.Sprintf("%d threads simd %v avx512 %v: q%d g%d %s n=%d", c.b.threads, c.b.simd, c.b.avx512,
		c.m.Bits, c.m.GroupSize, c.m.Scales.DType, c.n)
}

// eachQuantCase calls fn for every kernel level (backends), bit width in
// bits, group size 32, 64 and 128, scale dtype and size whose inner size
// the group size divides.
func eachQuantCase(t *testing.T, rng *rand.Rand, bits []int, sizes []struct{ n, in, out int }, fn func(c quantCase)) {
	t.Helper()
	for _, b := range backends(t) {
		for _, bw := range bits {
			for _, gs := range []int{32, 64, 128} {
				for _, sd := range []tensor.DType{tensor.BF16, tensor.F16, tensor.F32} {
					for _, sz := range sizes {
						if sz.in%gs != 0 {
							continue
						}
						m, err := tensor.QuantizeAffine(randF32(rng, sz.out*sz.in, 0.05), sz.out, sz.in, bw, gs, sd)
						if err != nil {
							t.Fatal(err)
						}
						wd, terms := refDequant(t, m)
						c := quantCase{b: b, m: m, n: sz.n, in: sz.in, out: sz.out, x: testX(rng, sz.n, sz.in)}
						c.want, c.mag = refProduct(c.x, wd, terms, sz.n, sz.in, sz.out)
						fn(c)
					}
				}
			}
		}
	}
}
