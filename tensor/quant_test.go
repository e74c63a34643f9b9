package tensor

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestQuantizeAffineRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, bits := range []int{2, 4, 8} {
		for _, gs := range []int{32, 64, 128} {
			for _, sd := range []DType{Invalid, BF16, F16, F32} {
				out, in := 5, 256
				vals := make([]float32, out*in)
				for i := range vals {
					vals[i] = float32(rng.NormFloat64()) * 0.05
				}
				m, err := QuantizeAffine(vals, out, in, bits, gs, sd)
				if err != nil {
					t.Fatalf("bits %d gs %d: %v", bits, gs, err)
				}
				if err := m.Validate("q"); err != nil {
					t.Fatalf("bits %d gs %d: invalid matrix: %v", bits, gs, err)
				}
				wantSD := sd
				if sd == Invalid {
					wantSD = BF16
				}
				if m.Scales.DType != wantSD || m.Biases.DType != wantSD {
					t.Fatalf("scale dtype %s/%s, want %s", m.Scales.DType, m.Biases.DType, wantSD)
				}
				deq, err := Dequantize(m)
				if err != nil {
					t.Fatal(err)
				}
				scales, _ := m.Scales.ToF32()
				for i, v := range vals {
					s := math.Abs(float64(scales[i/gs]))
					// Half a step of rounding, up to one more step where the
					// zero-exact nudge (scale = edge/q0) shrinks the range,
					// plus storing scale/bias in 16 bits.
					tol := 1.5*s + s*float64(int(1)<<bits)/128 + 1e-6
					if d := math.Abs(float64(deq[i] - v)); d > tol {
						t.Fatalf("bits %d gs %d %s: elem %d: got %g want %g (err %g > %g)", bits, gs, sd, i, deq[i], v, d, tol)
					}
				}
			}
		}
	}
}

// TestQuantizeAffineHandWorked checks scale, bias and codes against values
// worked out by hand from MLX's rules.
func TestQuantizeAffineHandWorked(t *testing.T) {
	tests := []struct {
		name        string
		vals        func(i int) float32
		bits        int
		scale, bias float32
		codes       func(i int) uint32
	}{
		{
			// lo=0, hi=31: |lo| <= |hi| so the scale is negative and the
			// bias is the max: q0 = round(31/(-31/15)) = -15.
			name: "ramp up", bits: 4,
			vals:  func(i int) float32 { return float32(i) },
			scale: -31.0 / 15, bias: 31,
			codes: func(i int) uint32 { return uint32(math.Round(float64((float32(i) - 31) / float32(-31.0/15)))) },
		},
		{
			// lo=-31, hi=0: |lo| > |hi|, positive scale, bias = min.
			name: "ramp down", bits: 4,
			vals:  func(i int) float32 { return -float32(i) },
			scale: 31.0 / 15, bias: -31,
			codes: func(i int) uint32 { return uint32(math.Round(float64((-float32(i) + 31) / float32(31.0/15)))) },
		},
		{
			// all equal and positive: range 0 -> lo=5, hi=5, scale = 1e-7
			// negated, q0 = round(5/-1e-7) != 0 so scale = 5/q0, bias = 5,
			// every code 0.
			name: "constant", bits: 8,
			vals:  func(int) float32 { return 5 },
			scale: func() float32 { five, eps := float32(5), float32(1e-7); return five / round32(five/-eps) }(), bias: 5,
			codes: func(int) uint32 { return 0 },
		},
		{
			// all zero: q0 = 0 so bias 0 and scale stays 1e-7 (negated).
			name: "zeros", bits: 4,
			vals:  func(int) float32 { return 0 },
			scale: -1e-7, bias: 0,
			codes: func(int) uint32 { return 0 },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vals := make([]float32, 32)
			for i := range vals {
				vals[i] = tc.vals(i)
			}
			m, err := QuantizeAffine(vals, 1, 32, tc.bits, 32, F32)
			if err != nil {
				t.Fatal(err)
			}
			s, b := m.Scales.F32()[0], m.Biases.F32()[0]
			if s != tc.scale || b != tc.bias {
				t.Fatalf("scale,bias = %g,%g want %g,%g", s, b, tc.scale, tc.bias)
			}
			per := 32 / tc.bits
			words := m.W.U32()
			for i := range vals {
				got := words[i/per] >> (tc.bits * (i % per)) & (1<<tc.bits - 1)
				if want := tc.codes(i); got != want {
					t.Fatalf("code %d = %d, want %d", i, got, want)
				}
			}
		})
	}
}

func TestQuantizePacking(t *testing.T) {
	// Values chosen so codes are 0..15 with bias 0 and scale 1: lo=0 gives
	// a negative scale, so use a descending group ending in -15.
	vals := make([]float32, 32)
	for i := range vals {
		vals[i] = -float32(i % 16) // lo=-15, hi=0: scale 1, bias -15
	}
	m, err := QuantizeAffine(vals, 1, 32, 4, 32, F32)
	if err != nil {
		t.Fatal(err)
	}
	if m.Scales.F32()[0] != 1 || m.Biases.F32()[0] != -15 {
		t.Fatalf("scale,bias = %g,%g want 1,-15", m.Scales.F32()[0], m.Biases.F32()[0])
	}
	// code(i) = 15 - i%16; element i in bits 4*(i%8) of word i/8.
	want := []uint32{0x89abcdef, 0x01234567, 0x89abcdef, 0x01234567}
	for i, w := range m.W.U32() {
		if w != want[i] {
			t.Fatalf("word %d = %#x, want %#x", i, w, want[i])
		}
	}
	m8, err := QuantizeAffine(vals, 1, 32, 8, 32, F32)
	if err != nil {
		t.Fatal(err)
	}
	// 8-bit: n=255, scale = 15/255 -> q0 = round(-15/(15/255)) = -255.
	if got := m8.W.U32()[0]; got != 0xccddeeff {
		t.Fatalf("8-bit word 0 = %#x, want 0xccddeeff", got)
	}
}

func TestQuantizeErrors(t *testing.T) {
	ok := make([]float32, 64)
	tests := []struct {
		name                 string
		vals                 []float32
		out, in, bits, group int
		sd                   DType
		want                 string
	}{
		{"bits", ok, 1, 64, 3, 32, BF16, "bits"},
		{"group", ok, 1, 64, 4, 16, BF16, "group size"},
		{"not multiple", ok, 2, 32, 4, 64, BF16, "multiple"},
		{"count", ok, 2, 64, 4, 32, BF16, "values"},
		{"dtype", ok, 1, 64, 4, 32, U32, "scale dtype"},
		{"size", nil, 0, 64, 4, 32, BF16, "size"},
	}
	for _, tc := range tests {
		_, err := QuantizeAffine(tc.vals, tc.out, tc.in, tc.bits, tc.group, tc.sd)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}

func TestDequantizeDenseAndErrors(t *testing.T) {
	vals := []float32{1, -2, 3.5, 0.25, 8, -0.5}
	for _, dt := range []DType{F32, F16, BF16} {
		w := New(dt, 2, 3)
		if err := EncodeF32(w.Data, dt, vals); err != nil {
			t.Fatal(err)
		}
		got, err := Dequantize(&Matrix{Out: 2, In: 3, W: w})
		if err != nil {
			t.Fatal(err)
		}
		for i := range vals {
			if got[i] != vals[i] {
				t.Fatalf("%s: elem %d = %g want %g", dt, i, got[i], vals[i])
			}
		}
	}
	if _, err := Dequantize(&Matrix{Out: 2, In: 3, W: New(F32, 3, 2)}); err == nil {
		t.Fatal("shape mismatch accepted")
	}
	if _, err := Dequantize(nil); err == nil {
		t.Fatal("nil matrix accepted")
	}
	m, err := QuantizeAffine(make([]float32, 64), 1, 64, 4, 64, BF16)
	if err != nil {
		t.Fatal(err)
	}
	if err := DequantizeRow(m, 1, make([]float32, 64)); err == nil {
		t.Fatal("row out of range accepted")
	}
	if err := DequantizeRow(m, 0, make([]float32, 63)); err == nil {
		t.Fatal("short destination accepted")
	}
}
