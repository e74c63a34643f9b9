package blocks

import (
	"testing"

	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

func TestComputeDTypeAndRound(t *testing.T) {
	for _, tc := range []struct {
		json string
		want tensor.DType
	}{
		{`{"model_type":"x"}`, tensor.F32},
		{`{"torch_dtype":"bfloat16"}`, tensor.BF16},
		{`{"text_config":{"torch_dtype":"float16"},"torch_dtype":"bfloat16"}`, tensor.F16},
		{`{"text_config":{"hidden_size":4},"dtype":"bfloat16"}`, tensor.BF16},
		{`{"torch_dtype":"float32"}`, tensor.F32},
	} {
		cfg, err := checkpoint.ParseConfig("config.json", []byte(tc.json))
		if err != nil {
			t.Fatal(err)
		}
		if got := ComputeDType(cfg); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.json, got, tc.want)
		}
	}
	// The BF16 constants GEMMA3N.md lists for E2B.
	for _, tc := range []struct {
		x    float64
		want float32
	}{{45.254833995939045, 45.25}, {1 / 45.254833995939045, 0.0220947265625}, {0.7071067811865476, 0.70703125}, {1.6448536269514722, 1.6484375}} {
		if got := Round(tensor.BF16, tc.x); got != tc.want {
			t.Errorf("Round(BF16, %g) = %g, want %g", tc.x, got, tc.want)
		}
	}
	if got := Round(tensor.F32, 0.1); got != float32(0.1) {
		t.Errorf("Round(F32, 0.1) = %g", got)
	}
}

func TestArenaReusesBuffers(t *testing.T) {
	be := cpu.New(1)
	defer be.Close()
	a := NewArena(be)
	x := a.Get(4, 8)
	y := a.Get(2, 16)
	if &x.Data[0] == &y.Data[0] {
		t.Fatal("two live tensors share memory")
	}
	a.Reset()
	z := a.Get(8, 4) // same element count: reuses one of them
	if &z.Data[0] != &x.Data[0] && &z.Data[0] != &y.Data[0] {
		t.Error("arena did not reuse a free buffer")
	}
	if z.Shape[0] != 8 || z.Shape[1] != 4 {
		t.Errorf("shape %v", z.Shape)
	}
}

// TestArenaSameOrder checks that a pass asking for the same shapes after
// Reset gets the same tensors in the same order, pass after pass (a GPU
// backend keeps its per-step work, chain.go's rewrite, by the memory a
// step touches).
func TestArenaSameOrder(t *testing.T) {
	be := cpu.New(1)
	defer be.Close()
	a := NewArena(be)
	pass := func() []*float32 {
		var p []*float32
		for _, n := range []int{8, 16, 8, 8, 16, 4} {
			p = append(p, &a.Get(n).F32()[0])
		}
		a.Reset()
		return p
	}
	first := pass()
	for i := range 3 {
		got := pass()
		for j := range first {
			if got[j] != first[j] {
				t.Fatalf("pass %d: tensor %d is another buffer than in the first pass", i+2, j)
			}
		}
	}
}

func TestViews(t *testing.T) {
	x, err := tensor.FromF32([]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	s := Stream(x, 1)
	if got := s.F32(); len(got) != 4 || got[0] != 4 || got[3] != 7 {
		t.Errorf("stream 1 = %v", got)
	}
	r := Rows(s, 1, 1)
	if got := r.F32(); len(got) != 2 || got[0] != 6 {
		t.Errorf("row 1 of stream 1 = %v", got)
	}
	r.F32()[0] = 60
	if x.F32()[6] != 60 {
		t.Error("view does not share memory")
	}
}

// TestGatedWeightBytes checks what a sparse MLP reads per token on a
// backend that skips the gate's zeros: gate_proj whole, the kept share of
// up_proj, the kept share of down_proj's codes and all its factors; a
// dense MLP reads everything either way.
func TestGatedWeightBytes(t *testing.T) {
	quant := func(out, in int) *tensor.Matrix {
		m, err := tensor.QuantizeAffine(make([]float32, out*in), out, in, 4, 64, tensor.BF16)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	const hidden, inter = 128, 512
	gate, up, down := quant(inter, hidden), quant(inter, hidden), quant(hidden, inter)
	codes := func(m *tensor.Matrix) float64 { return float64(len(m.W.Data)) }
	factors := func(m *tensor.Matrix) float64 { return float64(len(m.Scales.Data) + len(m.Biases.Data)) }
	whole := int64(gate.Bytes() + up.Bytes() + down.Bytes())
	for _, c := range []struct {
		name   string
		sparse bool
		keep   float64
		want   int64
	}{
		{"dense", false, 0.05, whole},
		{"sparse keeps 5%", true, 0.05, int64(gate.Bytes()) + int64(float64(up.Bytes())*0.05) + int64(codes(down)*0.05+factors(down))},
		{"sparse keeps all", true, 1, whole},
	} {
		m := MLP{Gate: gate, Up: up, Down: down, Sparse: c.sparse}
		if got := m.GatedWeightBytes(c.keep); got != c.want {
			t.Errorf("%s: GatedWeightBytes %d, want %d", c.name, got, c.want)
		}
		if got := m.WeightBytes(); got != whole {
			t.Errorf("%s: WeightBytes %d, want every matrix whole (%d)", c.name, got, whole)
		}
	}
}
