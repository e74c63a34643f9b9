package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mlxchat/tensor"
)

func randF32(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return v
}

func mustT(t testing.TB, vals []float32, shape ...int) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromF32(vals, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// compare fails unless |got-want| <= atol + rtol·|want| everywhere.
func compare(t testing.TB, what string, got []float32, want []float64, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		g := float64(got[i])
		if math.IsNaN(g) || math.Abs(g-want[i]) > atol+rtol*math.Abs(want[i]) {
			t.Fatalf("%s: elem %d = %g, want %g", what, i, g, want[i])
		}
	}
}

// refMatMul is y[r][o] = Σ_i x[r][i]·w[o][i] in float64.
func refMatMul(x []float32, w []float32, n, in, out int) []float64 {
	y := make([]float64, n*out)
	for r := 0; r < n; r++ {
		for o := 0; o < out; o++ {
			var s float64
			for i := 0; i < in; i++ {
				s += float64(x[r*in+i]) * float64(w[o*in+i])
			}
			y[r*out+o] = s
		}
	}
	return y
}

// backends returns the portable kernels on one and three threads and, on
// machines that have them, the SIMD kernels likewise.
func backends(t *testing.T) []*Backend {
	var bs []*Backend
	for _, l := range availableLevels() {
		bs = append(bs, newBackendLevel(1, l), newBackendLevel(3, l))
	}
	t.Cleanup(func() {
		for _, b := range bs {
			b.Close()
		}
	})
	return bs
}

func TestMatMulDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, b := range backends(t) {
		for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
			for _, sz := range []struct{ n, in, out int }{{1, 45, 37}, {3, 64, 8}, {17, 33, 70}} {
				wv := randF32(rng, sz.out*sz.in, 0.2)
				wt := tensor.New(dt, sz.out, sz.in)
				if err := tensor.EncodeF32(wt.Data, dt, wv); err != nil {
					t.Fatal(err)
				}
				m := &tensor.Matrix{Out: sz.out, In: sz.in, W: wt}
				wd, err := tensor.Dequantize(m) // the stored (rounded) weights
				if err != nil {
					t.Fatal(err)
				}
				xv := randF32(rng, sz.n*sz.in, 1)
				dst := b.Alloc(sz.n, sz.out)
				if err := b.MatMul(dst, mustT(t, xv, sz.n, sz.in), m); err != nil {
					t.Fatal(err)
				}
				compare(t, "matmul "+dt.String(), dst.F32(), refMatMul(xv, wd, sz.n, sz.in, sz.out), 1e-4, 1e-4)
			}
		}
	}
}

// TestMatMulQuantized runs every kernel level on every bit width, group
// size and scale dtype, for decode (1-3 rows) and prefill (5, 9 rows)
// shapes, with activations that have outliers, against float64
// arithmetic on independently dequantized weights: the same float32
// bound (decodeTolerance) holds on every path.
func TestMatMulQuantized(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	sizes := []struct{ n, in, out int }{{1, 384, 13}, {2, 256, 6}, {3, 1024, 5}, {5, 128, 9}, {9, 256, 3}}
	eachQuantCase(t, rng, []int{2, 4, 8}, sizes, func(c quantCase) {
		dst := c.b.Alloc(c.n, c.out)
		if err := c.b.MatMul(dst, mustT(t, c.x, c.n, c.in), c.m); err != nil {
			t.Fatal(err)
		}
		checkProduct(t, c.String(), dst.F32(), c.want, c.mag)
	})
}

func TestGather(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	b := New(2)
	defer b.Close()
	q, err := tensor.QuantizeAffine(randF32(rng, 10*64, 1), 10, 64, 4, 32, tensor.BF16)
	if err != nil {
		t.Fatal(err)
	}
	q8, err := tensor.QuantizeAffine(randF32(rng, 10*128, 1), 10, 128, 8, 128, tensor.F16)
	if err != nil {
		t.Fatal(err)
	}
	dw := tensor.New(tensor.BF16, 10, 6)
	if err := tensor.EncodeF32(dw.Data, tensor.BF16, randF32(rng, 60, 1)); err != nil {
		t.Fatal(err)
	}
	dense := &tensor.Matrix{Out: 10, In: 6, W: dw}
	q2, err := tensor.QuantizeAffine(randF32(rng, 10*96, 1), 10, 96, 2, 32, tensor.F32)
	if err != nil {
		t.Fatal(err)
	}
	ids := []int32{9, 0, 3, 3, 7, 1, 2, 4, 5, 6, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8} // enough to split over cores
	for _, m := range []*tensor.Matrix{q, q8, q2, dense} {
		all, err := tensor.Dequantize(m)
		if err != nil {
			t.Fatal(err)
		}
		dst := b.Alloc(len(ids), m.In)
		if err := b.Gather(dst, m, ids); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, 0, len(ids)*m.In)
		for _, id := range ids {
			for _, v := range all[int(id)*m.In : int(id+1)*m.In] {
				want = append(want, float64(v))
			}
		}
		compare(t, "gather", dst.F32(), want, 0, 0)
	}
}

func TestRMSNorm(t *testing.T) {
	for _, b := range backends(t) {
		testRMSNorm(t, b)
	}
}

// refRMSNorm is RMSNorm's definition in float64 for the rows of n values
// of x, weighted by w.
func refRMSNorm(x, w []float32, n int, eps float64) []float64 {
	want := make([]float64, len(x))
	for r := 0; r < len(x)/n; r++ {
		var ss float64
		for _, v := range x[r*n : (r+1)*n] {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(n)+eps)
		for i := 0; i < n; i++ {
			want[r*n+i] = float64(x[r*n+i]) * inv * float64(w[i])
		}
	}
	return want
}

func testRMSNorm(t *testing.T, b *Backend) {
	rng := rand.New(rand.NewPCG(4, 4))
	const rows, n, eps = 5, 67, 1e-6
	xv := randF32(rng, rows*n, 2)
	wv := randF32(rng, n, 1)
	for _, dt := range []tensor.DType{tensor.Invalid, tensor.F32, tensor.F16, tensor.BF16} {
		var wt *tensor.Tensor
		wd := make([]float32, n)
		for i := range wd {
			wd[i] = 1
		}
		if dt != tensor.Invalid {
			wt = tensor.New(dt, n)
			if err := tensor.EncodeF32(wt.Data, dt, wv); err != nil {
				t.Fatal(err)
			}
			wd, _ = wt.ToF32()
		}
		want := refRMSNorm(xv, wd, n, eps)
		dst := b.Alloc(rows, n)
		if err := b.RMSNorm(dst, mustT(t, xv, rows, n), wt, eps); err != nil {
			t.Fatal(err)
		}
		compare(t, "rmsnorm "+dt.String(), dst.F32(), want, 1e-5, 1e-5)
	}
}

func TestRoPE(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	b := New(2)
	defer b.Close()
	for _, tc := range []struct {
		n, heads, hd, dims, pos0 int
		base                     float64
		scale                    float64 // divides every inverse frequency (linear scaling)
		interleaved              bool
	}{
		{3, 2, 8, 8, 0, 10000, 1, false},
		{4, 3, 16, 8, 1000, 10000, 1, false}, // partial rotation
		{2, 1, 32, 32, 5000, 1e6, 1, false},  // large base and position
		{3, 2, 8, 8, 7, 10000, 1, true},      // neighbouring pairs
		{4, 2, 16, 12, 300, 50000, 1, true},  // interleaved, partial
		{2, 2, 16, 16, 900, 1e6, 8, false},   // a scaled table
	} {
		xv := randF32(rng, tc.n*tc.heads*tc.hd, 1)
		want := make([]float64, len(xv))
		half := tc.dims / 2
		inv := make([]float32, half)
		for i := range inv {
			inv[i] = float32(math.Pow(tc.base, -2*float64(i)/float64(tc.dims)) / tc.scale)
		}
		for tk := 0; tk < tc.n; tk++ {
			for h := 0; h < tc.heads; h++ {
				base := (tk*tc.heads + h) * tc.hd
				for i := 0; i < tc.hd; i++ {
					want[base+i] = float64(xv[base+i])
				}
				for i := 0; i < half; i++ {
					theta := float64(tc.pos0+tk) * math.Pow(tc.base, -2*float64(i)/float64(tc.dims)) / tc.scale
					a, c := base+i, base+i+half
					if tc.interleaved {
						a, c = base+2*i, base+2*i+1
					}
					x1, x2 := float64(xv[a]), float64(xv[c])
					want[a] = x1*math.Cos(theta) - x2*math.Sin(theta)
					want[c] = x2*math.Cos(theta) + x1*math.Sin(theta)
				}
			}
		}
		r, err := tensor.NewRotary(tc.dims, inv, tc.interleaved)
		if err != nil {
			t.Fatal(err)
		}
		x := mustT(t, xv, tc.n, tc.heads, tc.hd)
		if err := b.RoPE(x, tc.pos0, r); err != nil {
			t.Fatal(err)
		}
		// float32 angles at position ~5000 carry ~1e-3 relative phase error.
		compare(t, "rope", x.F32(), want, 2e-3, 0)
	}
}

func TestLayerNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	b := New(2)
	defer b.Close()
	for _, tc := range []struct {
		rows, n      int
		weight, bias bool
		dt           tensor.DType
		offset       float32
		spread       float64
	}{
		{3, 64, true, false, tensor.F32, 0, 1},
		{5, 96, true, true, tensor.BF16, 0, 1},
		{2, 40, false, false, tensor.F32, 0, 1},
		{4, 128, true, true, tensor.F16, 300, 0.01}, // a large mean over a tiny spread
	} {
		xv := randF32(rng, tc.rows*tc.n, tc.spread)
		for i := range xv {
			xv[i] += tc.offset
		}
		var w, bias *tensor.Tensor
		wv, bv := make([]float64, tc.n), make([]float64, tc.n)
		param := func(vals []float64) *tensor.Tensor {
			f := randF32(rng, tc.n, 1)
			p := tensor.New(tc.dt, tc.n)
			if err := tensor.EncodeF32(p.Data, tc.dt, f); err != nil {
				t.Fatal(err)
			}
			back, err := p.ToF32()
			if err != nil {
				t.Fatal(err)
			}
			for i := range vals {
				vals[i] = float64(back[i])
			}
			return p
		}
		if tc.weight {
			w = param(wv)
		}
		if tc.bias {
			bias = param(bv)
		}
		want := make([]float64, len(xv))
		for r := 0; r < tc.rows; r++ {
			row := xv[r*tc.n : (r+1)*tc.n]
			var mean, vr float64
			for _, v := range row {
				mean += float64(v)
			}
			mean /= float64(tc.n)
			for _, v := range row {
				vr += (float64(v) - mean) * (float64(v) - mean)
			}
			vr /= float64(tc.n)
			for i, v := range row {
				y := (float64(v) - mean) / math.Sqrt(vr+1e-5)
				if tc.weight {
					y *= wv[i]
				}
				if tc.bias {
					y += bv[i]
				}
				want[r*tc.n+i] = y
			}
		}
		x := mustT(t, xv, tc.rows, tc.n)
		if err := b.LayerNorm(x, x, w, bias, 1e-5); err != nil { // in place
			t.Fatal(err)
		}
		compare(t, "layernorm "+tc.dt.String(), x.F32(), want, 1e-4, 1e-5)
	}
}

func TestSiLU(t *testing.T) {
	b := New(2)
	defer b.Close()
	xv := []float32{0, 1, -1, 3.5, -3.5, 20, -20, 90, -90, 1e-7, -1e-7}
	for i := 0; i < 300; i++ {
		xv = append(xv, float32(i-150)*0.1)
	}
	want := make([]float64, len(xv))
	for i, v := range xv {
		want[i] = float64(v) / (1 + math.Exp(-float64(v)))
	}
	x := mustT(t, xv, len(xv))
	dst := b.Alloc(len(xv))
	if err := b.SiLU(dst, x); err != nil {
		t.Fatal(err)
	}
	compare(t, "silu", dst.F32(), want, 1e-6, 1e-7)
}

// refAttention is a float64 brute force over the dense mask.
func refAttention(q, k, v []float32, nq, hq, nk, hkv, d int, m tensor.Mask, scale float64) []float64 {
	allowed := m.Dense()
	out := make([]float64, nq*hq*d)
	for r := 0; r < nq; r++ {
		for h := 0; h < hq; h++ {
			kh := h / (hq / hkv)
			s := make([]float64, nk)
			mx := math.Inf(-1)
			for j := 0; j < nk; j++ {
				s[j] = math.Inf(-1)
				if !allowed[r*nk+j] {
					continue
				}
				var dot float64
				for i := 0; i < d; i++ {
					dot += float64(q[(r*hq+h)*d+i]) * float64(k[(j*hkv+kh)*d+i])
				}
				s[j] = dot * scale
				mx = math.Max(mx, s[j])
			}
			var sum float64
			for j := range s {
				s[j] = math.Exp(s[j] - mx)
				sum += s[j]
			}
			for j := range s {
				for i := 0; i < d; i++ {
					out[(r*hq+h)*d+i] += s[j] / sum * float64(v[(j*hkv+kh)*d+i])
				}
			}
		}
	}
	return out
}

func TestAttention(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	tests := []struct {
		name       string
		qStart, nq int
		keys       []tensor.Span
		window     int
		hq, hkv, d int
	}{
		{"causal prefill", 0, 5, []tensor.Span{{Start: 0, Len: 5}}, 0, 4, 2, 8},
		{"decode mha", 9, 1, []tensor.Span{{Start: 0, Len: 10}}, 0, 3, 3, 16},
		{"decode gqa trimmed", 40, 1, []tensor.Span{{Start: 0, Len: 4}, {Start: 30, Len: 11}}, 0, 8, 2, 32},
		{"chunk after trim", 40, 6, []tensor.Span{{Start: 0, Len: 4}, {Start: 20, Len: 26}}, 0, 4, 1, 8},
		{"sliding window chunk", 28, 4, []tensor.Span{{Start: 0, Len: 4}, {Start: 21, Len: 11}}, 8, 2, 1, 8},
		{"sliding window decode", 100, 1, []tensor.Span{{Start: 93, Len: 8}}, 8, 4, 2, 16},
		{"window wider than keys", 3, 2, []tensor.Span{{Start: 0, Len: 5}}, 512, 2, 2, 4},
	}
	for _, bk := range backends(t) {
		for _, tc := range tests {
			m, err := tensor.NewMask(tc.qStart, tc.nq, tc.keys, tc.window)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			nk := m.KeyLen()
			qv := randF32(rng, tc.nq*tc.hq*tc.d, 1)
			kv := randF32(rng, nk*tc.hkv*tc.d, 1)
			vv := randF32(rng, nk*tc.hkv*tc.d, 1)
			dst := bk.Alloc(tc.nq, tc.hq, tc.d)
			scale := 1 / math.Sqrt(float64(tc.d))
			err = bk.Attention(dst, mustT(t, qv, tc.nq, tc.hq, tc.d), mustT(t, kv, nk, tc.hkv, tc.d),
				mustT(t, vv, nk, tc.hkv, tc.d), m, float32(scale))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			compare(t, tc.name, dst.F32(), refAttention(qv, kv, vv, tc.nq, tc.hq, nk, tc.hkv, tc.d, m, scale), 1e-5, 1e-4)
		}
	}
}

func TestElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	b := New(2)
	defer b.Close()
	const rows, n = 4, 9
	av := randF32(rng, rows*n, 3)
	bv := randF32(rng, rows*n, 3)
	rowv := randF32(rng, n, 3)
	ref := func(f func(i int) float64) []float64 {
		out := make([]float64, rows*n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	tests := []struct {
		name string
		run  func(dst *tensor.Tensor) error
		want []float64
	}{
		{"add", func(d *tensor.Tensor) error { return b.Add(d, mustT(t, av, rows, n), mustT(t, bv, rows, n)) },
			ref(func(i int) float64 { return float64(av[i]) + float64(bv[i]) })},
		{"add broadcast", func(d *tensor.Tensor) error { return b.Add(d, mustT(t, av, rows, n), mustT(t, rowv, n)) },
			ref(func(i int) float64 { return float64(av[i]) + float64(rowv[i%n]) })},
		{"mul", func(d *tensor.Tensor) error { return b.Mul(d, mustT(t, av, rows, n), mustT(t, bv, rows, n)) },
			ref(func(i int) float64 { return float64(av[i]) * float64(bv[i]) })},
		{"mul broadcast", func(d *tensor.Tensor) error { return b.Mul(d, mustT(t, av, rows, n), mustT(t, rowv, 1, n)) },
			ref(func(i int) float64 { return float64(av[i]) * float64(rowv[i%n]) })},
		{"scale", func(d *tensor.Tensor) error { return b.Scale(d, mustT(t, av, rows, n), 0.25) },
			ref(func(i int) float64 { return float64(av[i]) * 0.25 })},
		{"softcap", func(d *tensor.Tensor) error { return b.Softcap(d, mustT(t, av, rows, n), 2.5) },
			ref(func(i int) float64 { return math.Tanh(float64(av[i])/2.5) * 2.5 })},
		{"gelu", func(d *tensor.Tensor) error { return b.GeluTanh(d, mustT(t, av, rows, n)) },
			ref(func(i int) float64 {
				x := float64(av[i])
				return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
			})},
		{"softmax", func(d *tensor.Tensor) error { return b.Softmax(d, mustT(t, av, rows, n)) },
			ref(func(i int) float64 {
				r := i / n
				var s float64
				for _, v := range av[r*n : (r+1)*n] {
					s += math.Exp(float64(v))
				}
				return math.Exp(float64(av[i])) / s
			})},
		{"copy", func(d *tensor.Tensor) error { return b.Copy(d, mustT(t, av, rows*n)) },
			ref(func(i int) float64 { return float64(av[i]) })},
	}
	for _, tc := range tests {
		dst := b.Alloc(rows, n)
		if err := tc.run(dst); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		compare(t, tc.name, dst.F32(), tc.want, 1e-6, 1e-5)
	}
	// In place: dst aliases a.
	a := mustT(t, av, rows, n)
	if err := b.Add(a, a, mustT(t, rowv, n)); err != nil {
		t.Fatal(err)
	}
	compare(t, "add in place", a.F32(), ref(func(i int) float64 { return float64(av[i]) + float64(rowv[i%n]) }), 1e-6, 1e-6)
	// Copy converts between float dtypes.
	h := tensor.New(tensor.BF16, rows, n)
	if err := b.Copy(h, mustT(t, av, rows, n)); err != nil {
		t.Fatal(err)
	}
	back := b.Alloc(rows, n)
	if err := b.Copy(back, h); err != nil {
		t.Fatal(err)
	}
	compare(t, "copy via bf16", back.F32(), ref(func(i int) float64 { return float64(av[i]) }), 0, 1.0/128)
}

func TestErrors(t *testing.T) {
	b := New(2)
	defer b.Close()
	f := func(shape ...int) *tensor.Tensor { return tensor.New(tensor.F32, shape...) }
	q4, err := tensor.QuantizeAffine(make([]float32, 4*64), 4, 64, 4, 64, tensor.BF16)
	if err != nil {
		t.Fatal(err)
	}
	causal3, _ := tensor.NewMask(0, 3, []tensor.Span{{Start: 0, Len: 3}}, 0)
	rot8, _ := tensor.DefaultRotary(8, 10000)
	causal2, _ := tensor.NewMask(0, 2, []tensor.Span{{Start: 0, Len: 2}}, 0)
	// Rows 0 and 2 see a key, so the mask validates, but row 1 sees none.
	gap, err := tensor.NewMask(10, 3, []tensor.Span{{Start: 10, Len: 1}, {Start: 12, Len: 1}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"matmul in", func() error { return b.MatMul(f(2, 4), f(2, 63), q4) }, "wants 64"},
		{"matmul out", func() error { return b.MatMul(f(2, 5), f(2, 64), q4) }, "want 2 rows of 4"},
		{"matmul rows", func() error { return b.MatMul(f(3, 4), f(2, 64), q4) }, "want 2 rows"},
		{"matmul nil", func() error { return b.MatMul(f(2, 4), f(2, 64), nil) }, "nil matrix"},
		{"matmul bad matrix", func() error {
			return b.MatMul(f(1, 4), f(1, 64), &tensor.Matrix{Out: 4, In: 64, W: tensor.New(tensor.U32, 4, 7), Scales: q4.Scales, Biases: q4.Biases, Bits: 4, GroupSize: 64})
		}, "weight"},
		{"matmul x dtype", func() error { return b.MatMul(f(1, 4), tensor.New(tensor.BF16, 1, 64), q4) }, "want F32"},
		{"gather id", func() error { return b.Gather(f(1, 64), q4, []int32{4}) }, "out of range"},
		{"gather negative", func() error { return b.Gather(f(1, 64), q4, []int32{-1}) }, "out of range"},
		{"gather dst", func() error { return b.Gather(f(2, 64), q4, []int32{1}) }, "want [1, 64]"},
		{"keylen", func() error { return b.Attention(f(3, 2, 4), f(3, 2, 4), f(4, 1, 4), f(4, 1, 4), causal3, 1) }, "mask covers 3 keys, k has 4"},
		{"mask rows", func() error { return b.Attention(f(3, 2, 4), f(3, 2, 4), f(2, 1, 4), f(2, 1, 4), causal2, 1) }, "mask has 2 rows"},
		{"gqa", func() error { return b.Attention(f(3, 3, 4), f(3, 3, 4), f(3, 2, 4), f(3, 2, 4), causal3, 1) }, "multiple"},
		{"kv mismatch", func() error { return b.Attention(f(3, 2, 4), f(3, 2, 4), f(3, 1, 4), f(3, 1, 8), causal3, 1) }, "disagree"},
		{"attention dst", func() error { return b.Attention(f(3, 2, 8), f(3, 2, 4), f(3, 1, 4), f(3, 1, 4), causal3, 1) }, "dst"},
		{"attention 2d", func() error { return b.Attention(f(3, 8), f(3, 8), f(3, 8), f(3, 8), causal3, 1) }, "3 axes"},
		{"blind row", func() error { return b.Attention(f(3, 1, 4), f(3, 1, 4), f(2, 1, 4), f(2, 1, 4), gap, 1) }, "row 1 (position 11) sees no key"},
		{"rope dims", func() error { return b.RoPE(f(2, 1, 8), 0, &tensor.Rotary{Dims: 7, InvFreq: f(3)}) }, "even"},
		{"rope wide", func() error { return b.RoPE(f(2, 1, 8), 0, &tensor.Rotary{Dims: 10, InvFreq: f(5)}) }, "even"},
		{"rope table", func() error { return b.RoPE(f(2, 1, 8), 0, &tensor.Rotary{Dims: 8, InvFreq: f(3)}) }, "inverse frequencies"},
		{"rope none", func() error { return b.RoPE(f(2, 1, 8), 0, nil) }, "no table"},
		{"rope shape", func() error { return b.RoPE(f(2, 8), 0, rot8) }, "want [n, heads, headDim]"},
		{"layernorm bias", func() error { return b.LayerNorm(f(2, 8), f(2, 8), nil, f(7), 1e-5) }, "bias"},
		{"silu size", func() error { return b.SiLU(f(2, 8), f(2, 9)) }, "differ in size"},
		{"rmsnorm weight", func() error { return b.RMSNorm(f(2, 8), f(2, 8), f(7), 1e-6) }, "weight"},
		{"rmsnorm dst", func() error { return b.RMSNorm(f(2, 7), f(2, 8), nil, 1e-6) }, "differ in size"},
		{"add b", func() error { return b.Add(f(2, 8), f(2, 8), f(2, 4)) }, "neither"},
		{"mul b rows", func() error { return b.Mul(f(2, 8), f(2, 8), f(3, 8)) }, "neither"},
		{"softmax size", func() error { return b.Softmax(f(2, 8), f(2, 9)) }, "differ in size"},
		{"softcap zero", func() error { return b.Softcap(f(2, 8), f(2, 8), 0) }, "non-zero"},
		{"copy size", func() error { return b.Copy(f(2, 8), f(2, 9)) }, "differ in size"},
		{"copy dtypes", func() error { return b.Copy(tensor.New(tensor.I32, 2), tensor.New(tensor.U32, 2)) }, "convert"},
		{"matmul alias", func() error { x := f(1, 64); return b.MatMul(x, x, q4) }, "overlaps"},
		{"attention alias", func() error { q := f(3, 2, 4); return b.Attention(q, q, f(3, 1, 4), f(3, 1, 4), causal3, 1) }, "overlaps"},
		{"nil x", func() error { return b.Scale(f(2), nil, 1) }, "nil"},
		{"short data", func() error {
			return b.GeluTanh(f(2), &tensor.Tensor{DType: tensor.F32, Shape: []int{2}, Data: make([]byte, 4)})
		}, "bytes"},
	}
	for _, tc := range tests {
		err := tc.call()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestPoolRunsEveryTaskOnce(t *testing.T) {
	p := newPool(4)
	defer p.close()
	for _, n := range []int{1, 2, 7, 100} {
		hits := make([]int32, n)
		p.run(n, func(i int) { hits[i]++ })
		for i, h := range hits {
			if h != 1 {
				t.Fatalf("n=%d: task %d ran %d times", n, i, h)
			}
		}
		covered := make([]int32, n)
		p.split(n, 3, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				covered[i]++
			}
		})
		for i, h := range covered {
			if h != 1 {
				t.Fatalf("split n=%d: index %d covered %d times", n, i, h)
			}
		}
	}
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the helper's panic", r)
		}
	}()
	p.run(8, func(i int) {
		if i == 5 {
			panic("boom")
		}
	})
}

// TestPoolStreamCoversOnce checks stream's contract for several thread
// counts, sizes and piece bounds, with callers running at once (so some
// runs go without helpers): every index in exactly one piece, pieces
// non-empty, inside [0, n) and starting at a multiple of align, and no two
// pieces of one worker at the same time.
func TestPoolStreamCoversOnce(t *testing.T) {
	type tc struct{ n, minRows, minPiece, maxPiece, align int }
	cases := []tc{{0, 16, 4, 8, 4}, {1, 16, 4, 8, 4}, {5, 1, 1, 1, 1}, {16, 16, 4, 8, 4}, {17, 4, 4, 8, 4},
		{100, 8, 4, 32, 4}, {1000, 16, 16, 64, 4}, {4099, 16, 8, 1024, 4}, {4099, 1, 1, 1, 1}, {65536, 16, 32, 4096, 16}}
	for _, threads := range []int{1, 2, 3, 8} {
		p := newPool(threads)
		var wg sync.WaitGroup
		for caller := 0; caller < 3; caller++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, c := range cases {
					for rep := 0; rep < 4; rep++ {
						covered := make([]int32, c.n)
						busy := make([]atomic.Int32, threads)
						var bad atomic.Value
						p.stream(c.n, c.minRows, c.minPiece, c.maxPiece, c.align, func(worker, lo, hi int) {
							if busy[worker].Add(1) != 1 {
								bad.Store(fmt.Sprintf("worker %d ran two pieces at once", worker))
							}
							if lo >= hi || lo < 0 || hi > c.n || lo%c.align != 0 {
								bad.Store(fmt.Sprintf("piece [%d, %d)", lo, hi))
							}
							for i := lo; i < hi; i++ {
								atomic.AddInt32(&covered[i], 1)
							}
							busy[worker].Add(-1)
						})
						if v := bad.Load(); v != nil {
							t.Errorf("threads %d %+v: %v", threads, c, v)
							return
						}
						for i, h := range covered {
							if h != 1 {
								t.Errorf("threads %d %+v: index %d covered %d times", threads, c, i, h)
								return
							}
						}
					}
				}
			}()
		}
		wg.Wait()
		p.close()
	}
}

// TestPoolStreamStealsFromSlowWorker: when one worker is slow, the other
// takes over the rest of its region, so the fast worker ends up with most
// of the rows instead of its half.
func TestPoolStreamStealsFromSlowWorker(t *testing.T) {
	p := newPool(2)
	defer p.close()
	const n = 4096
	var fast, slow atomic.Int64
	p.stream(n, 16, 16, 64, 4, func(worker, lo, hi int) {
		if worker == 1 {
			time.Sleep(time.Millisecond)
			slow.Add(int64(hi - lo))
			return
		}
		fast.Add(int64(hi - lo))
	})
	if fast.Load()+slow.Load() != n {
		t.Fatalf("covered %d rows, want %d", fast.Load()+slow.Load(), n)
	}
	if fast.Load() <= n/2 {
		t.Errorf("the fast worker did %d of %d rows; a slow worker's rows were not taken over", fast.Load(), n)
	}
}

// TestSIMDMatchesPortable runs the assembly and portable paths on odd sizes:
// x row counts that are not multiples of 4 (the leftover rows take the
// int16 decode kernels), group counts that need padding, odd output counts
// and tile boundaries.
//
// It runs once per kernel level above the portable one (AVX2, AVX-512), so
// every path this machine has is checked. For the AVX-512 decode kernels
// the shapes cover rows that are not whole 128-element blocks (masked tail
// loads), group counts below, at and above 16 with and without a partial
// last 16-group chunk, and output counts with 1-3 rows after the 4-row
// passes.
func TestSIMDMatchesPortable(t *testing.T) {
	levels := availableLevels()[1:]
	if len(levels) == 0 {
		t.Skip("no AVX2/FMA/F16C on this machine")
	}
	for _, l := range levels {
		t.Run(l.String(), func(t *testing.T) { testSIMDMatchesPortable(t, l) })
	}
}

func testSIMDMatchesPortable(t *testing.T, level kernelLevel) {
	rng := rand.New(rand.NewPCG(8, 8))
	fast, slow := newBackendLevel(3, level), newBackend(1, false)
	defer fast.Close()
	defer slow.Close()
	type shape struct{ n, in, out, gs int }
	shapes := []shape{{1, 96, 37, 32}, {3, 320, 5, 64}, {4, 1024, 9, 128}, {5, 256, 130, 64}, {9, 640, 3, 128}, {7, 64, 1, 32},
		{1, 32, 6, 32}, {1, 608, 13, 32}, {2, 2048, 67, 64}, {1, 2560, 9, 128}, {1, 1152, 4, 64}, {1, 384, 7, 128},
		{12, 256, 33, 32}, {6, 384, 10, 128}, {13, 96, 2, 32}, {16, 256, 7, 64}, {21, 384, 13, 128}, {35, 96, 31, 32},
		{1, 1024, 1501, 64}} // the last: pieces of several sizes, split between workers
	if !testing.Short() {
		shapes = append(shapes, shape{6, 4096, 300, 64}, shape{1, 8192, 70, 32}) // several L2 tiles per worker
	}
	for _, bits := range []int{4, 8} {
		for _, sd := range []tensor.DType{tensor.BF16, tensor.F16, tensor.F32} {
			for _, sh := range shapes {
				if sh.in%sh.gs != 0 {
					t.Fatalf("bad test shape %+v", sh)
				}
				m, err := tensor.QuantizeAffine(randF32(rng, sh.out*sh.in, 0.05), sh.out, sh.in, bits, sh.gs, sd)
				if err != nil {
					t.Fatal(err)
				}
				wd, terms := refDequant(t, m)
				xv := testX(rng, sh.n, sh.in)
				x := mustT(t, xv, sh.n, sh.in)
				a, b := fast.Alloc(sh.n, sh.out), slow.Alloc(sh.n, sh.out)
				if err := fast.MatMul(a, x, m); err != nil {
					t.Fatal(err)
				}
				if err := slow.MatMul(b, x, m); err != nil {
					t.Fatal(err)
				}
				want, mag := refProduct(xv, wd, terms, sh.n, sh.in, sh.out)
				what := fmt.Sprintf("q%d g%d %s %+v", bits, sh.gs, sd, sh)
				checkProduct(t, "simd "+what, a.F32(), want, mag)
				checkProduct(t, "portable "+what, b.F32(), want, mag)
			}
		}
	}
	for _, dt := range []tensor.DType{tensor.F32, tensor.BF16, tensor.F16} {
		for _, sh := range []shape{{1, 45, 7, 0}, {5, 100, 33, 0}, {4, 16, 3, 0}, {9, 257, 65, 0}, {2, 3, 2, 0}} {
			wt := tensor.New(dt, sh.out, sh.in)
			_ = tensor.EncodeF32(wt.Data, dt, randF32(rng, sh.out*sh.in, 0.3))
			m := &tensor.Matrix{Out: sh.out, In: sh.in, W: wt}
			wd, _ := tensor.Dequantize(m)
			xv := randF32(rng, sh.n*sh.in, 1)
			a := fast.Alloc(sh.n, sh.out)
			if err := fast.MatMul(a, mustT(t, xv, sh.n, sh.in), m); err != nil {
				t.Fatal(err)
			}
			compare(t, "simd dense "+dt.String(), a.F32(), refMatMul(xv, wd, sh.n, sh.in, sh.out), 1e-4, 1e-4)
		}
	}
	// Conversions and vector helpers on lengths around the vector widths.
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 100} {
		a, b := randF32(rng, n, 1), randF32(rng, n, 1)
		var want float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
		}
		compare(t, "dot", []float32{dotSIMD(a, b)}, []float64{want}, 1e-5, 1e-5)
		d := append([]float32(nil), a...)
		axpySIMD(d, b, 0.5)
		exp := make([]float64, n)
		for i := range exp {
			exp[i] = float64(a[i]) + 0.5*float64(b[i])
		}
		compare(t, "axpy", d, exp, 1e-6, 1e-6)
		for _, f16 := range []bool{false, true} {
			src := make([]uint16, n)
			for i, v := range a {
				if f16 {
					src[i] = tensor.F32ToF16(v)
				} else {
					src[i] = tensor.F32ToBF16(v)
				}
			}
			got := make([]float32, n)
			cvtSIMD(got, src, f16)
			for i := range got {
				if got[i] != cvt16(src[i], f16) {
					t.Fatalf("cvt f16=%v elem %d: %g want %g", f16, i, got[i], cvt16(src[i], f16))
				}
			}
		}
	}
}

func TestMeasureReadBandwidth(t *testing.T) {
	gbs := MeasureReadBandwidth(8<<20, 2)
	if !(gbs > 0.1 && gbs < 10000) {
		t.Fatalf("bandwidth %g GB/s is not plausible", gbs)
	}
	if MeasureReadBandwidth(0, 1) != 0 {
		t.Fatal("zero-byte buffer should give 0")
	}
	probe := NewReadProbe(8 << 20)
	for _, th := range []int{1, 2} {
		if gbs := probe.Measure(th); !(gbs > 0.1 && gbs < 10000) {
			t.Fatalf("bandwidth %g GB/s over a kept buffer, %d threads, is not plausible", gbs, th)
		}
	}
	if NewReadProbe(100).Measure(2) != 0 {
		t.Fatal("a buffer shorter than one slice per thread should give 0")
	}
	// One pass reads the buffer cut to a multiple of 128 bytes a thread.
	odd := NewReadProbe(8<<20 + 300)
	for _, th := range []int{1, 3} {
		n, secs := odd.Pass(th)
		if want := (8<<20 + 300) / (128 * th) * (128 * th); n != want || !(secs > 0) {
			t.Fatalf("Pass(%d) read %d bytes in %g s, want %d in a positive time", th, n, secs, want)
		}
	}
	if n, secs := NewReadProbe(100).Pass(2); n != 0 || secs != 0 {
		t.Fatalf("Pass over a buffer shorter than a slice per thread: %d bytes, %g s, want 0, 0", n, secs)
	}
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i * 7)
	}
	if readBytes(b) != readPortable(b) {
		t.Fatal("readBytes disagrees with the portable fold")
	}
}

func TestFastMath(t *testing.T) {
	for x := -100.0; x <= 100; x += 0.0137 {
		got, want := float64(expf(float32(x))), float64(float32(math.Exp(float64(float32(x)))))
		if got != want && math.Abs(got-want) > 3e-7*want+1e-38 {
			t.Fatalf("expf(%g) = %g, want %g", x, got, want)
		}
		gt, wt := float64(tanhf(float32(x/10))), math.Tanh(float64(float32(x/10)))
		if math.Abs(gt-wt) > 2e-7*math.Abs(wt)+1e-7 {
			t.Fatalf("tanhf(%g) = %g, want %g", x/10, gt, wt)
		}
	}
	for _, x := range []float32{0, -0, 1e-8, -1e-8, 0.0624, 0.0626, 8.99, 9.01, -20} {
		gt, wt := float64(tanhf(x)), math.Tanh(float64(x))
		if math.Abs(gt-wt) > 2e-7*math.Abs(wt)+1e-9 {
			t.Fatalf("tanhf(%g) = %g, want %g", x, gt, wt)
		}
	}
	if e := expf(float32(math.Inf(-1))); e != 0 {
		t.Fatalf("expf(-Inf) = %g", e)
	}
	if e := expf(float32(math.Inf(1))); !math.IsInf(float64(e), 1) {
		t.Fatalf("expf(+Inf) = %g", e)
	}
	if e := expf(float32(math.NaN())); e == e {
		t.Fatal("expf(NaN) is not NaN")
	}
	if th := tanhf(float32(math.NaN())); th == th {
		t.Fatal("tanhf(NaN) is not NaN")
	}
}

func TestUnclosedBackendReleasesHelpers(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		New(4)
	}
	for i := 0; i < 50 && runtime.NumGoroutine() > before+3; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+3 {
		t.Fatalf("%d goroutines left from 20 dropped backends (had %d before)", n-before, before)
	}
}

func TestCloseDuringOps(t *testing.T) {
	b := New(3)
	done := make(chan error)
	for g := 0; g < 3; g++ {
		go func() {
			x := tensor.New(tensor.F32, 64, 1024)
			var err error
			for i := 0; i < 50 && err == nil; i++ {
				err = b.Softmax(x, x)
			}
			done <- err
		}()
	}
	time.Sleep(time.Millisecond)
	b.Close()
	b.Close()
	for g := 0; g < 3; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestXSplit checks the two-level x split of the AVX2 decode kernels: the
// assembly writes exactly what xsplitGo writes, every element comes back
// as hi·sx + lo·sx/32768 within sx/65536, and splitScale refuses what the
// limbs cannot hold.
func TestXSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{32, 64, 96, 2048} {
		for _, spread := range []float64{1, 1e-3, 1e4} {
			x := randF32(rng, n, spread)
			x[3] = 0
			x[n-1] *= 300 // an outlier sets the scale
			x[7] = float32(spread) * 0x1p-20
			xs := make([]float32, n/32)
			var mx float32
			for _, v := range x {
				mx = max(mx, abs32(v))
			}
			scale, sx, ok := splitScale(mx, xs)
			if !ok || scale*sx != 1 || mx*scale >= 0x1p14 || mx*scale < 0x1p13 {
				t.Fatalf("n %d: scale %g sx %g ok %v for max %g", n, scale, sx, ok, mx)
			}
			for _, bits := range []int{4, 8} {
				want := make([]int16, 2*n)
				xsplitGo(want, x, bits, scale)
				for i, v := range x {
					blk, k := i&^31, i&31
					j := k
					if bits == 4 {
						j = (k&1)*16 + k>>1
					}
					back := float64(sx) * (float64(want[2*blk+j]) + float64(want[2*blk+32+j])/32768)
					if math.Abs(back-float64(v)) > float64(sx)/65536 {
						t.Fatalf("bits %d: x[%d] = %g comes back as %g", bits, i, v, back)
					}
				}
				if !haveSIMD() {
					continue
				}
				got := make([]int16, 2*n)
				xsplitSIMD(got, x, bits, scale)
				for i := range x {
					blk, k := i&^31, i&31
					j := k
					if bits == 4 {
						j = (k&1)*16 + k>>1
					}
					hi, lo := splitLimbIndex(i, n, bits)
					if got[hi] != want[2*blk+j] || got[lo] != want[2*blk+32+j] {
						t.Fatalf("bits %d n %d: x[%d]: SIMD split wrote limbs %d %d, Go %d %d", bits, n, i, got[hi], got[lo], want[2*blk+j], want[2*blk+32+j])
					}
				}
			}
		}
	}
	for _, c := range []struct {
		mx   float32
		sums []float32
		ok   bool
	}{
		{0, nil, true}, {1, []float32{float32(math.Inf(1))}, false}, {float32(math.NaN()), nil, false},
		{float32(math.Inf(1)), nil, false}, {0x1p-110, nil, false}, {3e38, nil, true}, {0x1p-99, nil, true},
	} {
		if _, _, ok := splitScale(c.mx, c.sums); ok != c.ok {
			t.Errorf("splitScale(%g, %v) ok = %v, want %v", c.mx, c.sums, ok, c.ok)
		}
	}
}

// TestXZLayout checks that the AVX-512 block layouts put every element of
// a row in its own slot, that the limbs stay in their ranges and bring
// each element back within the layout's bound plus float32 rounding
// (4 bits: sx/2 with sx = max|x_g|/(2^23-4); 8 bits: sx/65536 with sx =
// max|x_g|/32767), that the padding is zero and that sxs holds each
// group's scale and sum.
func TestXZLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	for _, bits := range []int{4, 8} {
		full, limbs, limbSize := float64(xzFull8), 2, 256
		if bits == 4 {
			full, limbs, limbSize = xzFull4, 3, 384
		}
		for _, c := range []struct{ in, gs int }{{96, 32}, {128, 64}, {608, 32}, {2560, 128}, {320, 64}} {
			x := testX(rng, 1, c.in)
			for i := 0; i < c.gs; i++ {
				x[i] = 0 // an all-zero group
			}
			padded := (c.in + 127) &^ 127
			groups := c.in / c.gs
			xq := make([]byte, xzLen(c.in, bits))
			for i := range xq {
				xq[i] = 99 // must be overwritten or cleared
			}
			sxs := make([]float32, sxsLen(groups))
			for i := range sxs {
				sxs[i] = -1
			}
			xzQuantize(xq, sxs, x, c.gs, bits)
			words := xzWords(xq)
			slots := len(words)
			if bits == 4 {
				slots = len(xq)
			}
			seen := make([]bool, slots)
			for e := 0; e < padded; e++ {
				p := xzIndex(e, bits)
				if p < 0 || p+128*(limbs-1) >= slots || seen[p] || p/limbSize != e/128 || p%limbSize >= 128 {
					t.Fatalf("bits %d in %d: element %d maps to %d (taken or outside its block's first limb)", bits, c.in, e, p)
				}
				seen[p] = true
				// D: the integer the limbs hold, in units of sx.
				var d float64
				if bits == 4 {
					h, m, l := int8(xq[p]), xq[p+128], xq[p+256]
					d = 65536*float64(h) + 256*float64(m) + float64(l)
				} else {
					hi, lo := words[p], words[p+128]
					if lo < -16384 || lo > 16384 {
						t.Fatalf("bits %d in %d: lo limb of x[%d] is %d", bits, c.in, e, lo)
					}
					d = float64(hi) + float64(lo)/32768
				}
				if e >= c.in {
					if d != 0 {
						t.Fatalf("bits %d in %d: padding element %d holds %g", bits, c.in, e, d)
					}
					continue
				}
				if math.Abs(d) > full+1.5 {
					t.Fatalf("bits %d in %d: x[%d] maps to %g, past %g", bits, c.in, e, d, full)
				}
				g := e / c.gs
				sx := float64(sxs[g/16*32+g%16])
				bound := sx / 65536
				if bits == 4 {
					bound = sx / 2
				}
				if back := sx * d; math.Abs(back-float64(x[e])) > bound+2.5e-7*math.Abs(float64(x[e])) {
					t.Fatalf("bits %d in %d: x[%d] = %g comes back as %g", bits, c.in, e, x[e], back)
				}
			}
			for g := 0; g < (groups+15)/16*16; g++ {
				sx, sum := sxs[g/16*32+g%16], sxs[g/16*32+16+g%16]
				if g >= groups {
					if sx != 0 || sum != 0 {
						t.Fatalf("bits %d in %d: padding group %d has scale %g sum %g", bits, c.in, g, sx, sum)
					}
					continue
				}
				var m, s, a float64
				for _, v := range x[g*c.gs : (g+1)*c.gs] {
					m = math.Max(m, math.Abs(float64(v)))
					s += float64(v)
					a += math.Abs(float64(v))
				}
				if want := m / full; math.Abs(float64(sx)-want) > 1e-6*want || math.Abs(float64(sum)-s) > 1e-6*a {
					t.Fatalf("bits %d in %d: group %d scale %g sum %g, want %g %g", bits, c.in, g, sx, sum, want, s)
				}
			}
		}
	}
}

// TestBinaryBroadcastSplit broadcasts one row over rows long enough that
// the parallel ranges start and end in the middle of rows.
func TestBinaryBroadcastSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	const rows, n = 7, 10007
	av, rv := randF32(rng, rows*n, 1), randF32(rng, n, 1)
	for _, b := range backends(t) {
		for _, op := range []struct {
			name string
			fn   func(d, a, r *tensor.Tensor) error
			f    func(x, y float64) float64
		}{
			{"add", b.Add, func(x, y float64) float64 { return x + y }},
			{"mul", b.Mul, func(x, y float64) float64 { return x * y }},
		} {
			d := b.Alloc(rows, n)
			if err := op.fn(d, mustT(t, av, rows, n), mustT(t, rv, n)); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, rows*n)
			for i := range want {
				want[i] = op.f(float64(av[i]), float64(rv[i%n]))
			}
			compare(t, op.name, d.F32(), want, 1e-6, 1e-6)
		}
	}
}

// TestTanhGeluSIMD checks the vector tanh and GELU against float64 with
// the scalar tanhf's error bound (TestFastMath) on a sweep and on the
// branch edges, infinities, zeros and NaN.
func TestTanhGeluSIMD(t *testing.T) {
	var xs []float32
	for x := -30.0; x <= 30; x += 0.00731 {
		xs = append(xs, float32(x))
	}
	inf := float32(math.Inf(1))
	xs = append(xs, 0, float32(math.Copysign(0, -1)), 0.0625, -0.0625, 0.06249999, 9, -9, 8.999999, 1e-30, -1e-30,
		inf, -inf, float32(math.NaN()), 3e38, -3e38)
	got := make([]float32, len(xs))
	for _, sc := range []struct{ in, out float32 }{{1, 1}, {1.0 / 30, 30}} {
		tanhScaledSIMD(got, xs, sc.in, sc.out)
		for i, x := range xs {
			want := math.Tanh(float64(x*sc.in)) * float64(sc.out)
			g := float64(got[i])
			if math.IsNaN(want) != math.IsNaN(g) || math.Abs(g-want) > (2e-7*math.Abs(want)+1e-7)*float64(sc.out) {
				t.Fatalf("tanh(%g·%g)·%g = %g, want %g", x, sc.in, sc.out, g, want)
			}
		}
	}
	geluSIMD(got, xs)
	for i, x := range xs {
		xf := float64(x)
		if math.Abs(xf) > 1e19 {
			continue // x³ overflows float32, as in the scalar version
		}
		want := 0.5 * xf * (1 + math.Tanh(0.7978845608028654*(xf+0.044715*xf*xf*xf)))
		g := float64(got[i])
		if math.IsNaN(want) != math.IsNaN(g) || math.Abs(g-want) > 4e-7*math.Abs(want)+2e-7*math.Abs(xf)+1e-30 {
			t.Fatalf("gelu(%g) = %g, want %g", x, g, want)
		}
	}
}
