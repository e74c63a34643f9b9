//go:build linux

package vulkan

import (
	"math"
	"math/rand/v2"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/metal/gpu"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// streamBackend is a backend with Gemma 3n's stream ops.
type streamBackend interface {
	tensor.Backend
	tensor.StreamOps
}

// chainCase is a decode-shaped run of ops and the launches it should take
// once chain.go has folded what it can.
type chainCase struct {
	name    string
	chained int // launches with chains on
	run     func(be streamBackend, in func(i int, shape ...int) *tensor.Tensor) []*tensor.Tensor
}

// TestChains records decode-shaped sequences of every pattern chain.go
// folds (elementwise epilogues after a quantized and a small dense
// product, a norm and an elementwise op, in place and into other
// tensors; a second norm of a norm's output with its scale) and of
// patterns it must leave alone, in one step each, and compares the
// outputs with chains on against chains off and against tensor/cpu; every
// case must take exactly the launches listed.
func TestChains(t *testing.T) {
	g, _ := open(t)
	c := cpu.New(2)
	defer c.Close()
	r := rand.New(rand.NewPCG(12, 12))
	const H, I, P, L = 256, 512, 64, 64
	router := newQuant(r, 4, H, 4, 64, tensor.BF16).m
	lq := newQuant(r, L, H, 4, 64, tensor.BF16).m
	rq := newQuant(r, H, L, 4, 32, tensor.BF16).m
	qq := newQuant(r, H, H, 8, 64, tensor.F16).m
	kq := newQuant(r, 128, H, 4, 64, tensor.BF16).m
	gate := newQuant(r, I, H, 4, 64, tensor.BF16).m
	up := newQuant(r, I, H, 4, 64, tensor.BF16).m
	down := newQuant(r, H, I, 4, 64, tensor.BF16).m
	pg := newQuant(r, P, H, 4, 64, tensor.BF16).m
	pp := newQuant(r, H, P, 4, 32, tensor.BF16).m
	wb := encode(tensor.BF16, randVals(r, H, 1), H)
	wf := encode(tensor.F32, randVals(r, H, 1), H)
	wf2 := encode(tensor.F32, randVals(r, H, 1), H)
	wp := encode(tensor.F16, randVals(r, H, 1), H)
	outScale := encode(tensor.F32, randVals(r, H, 1), 1, H)
	// Large enough for the wide matrix-vector kernels (4 rows a workgroup).
	wgate := newQuant(r, 8200, 4*H, 4, 64, tensor.BF16).m
	wup := newQuant(r, 8200, 4*H, 4, 64, tensor.BF16).m
	coefs := newDense(r, 16, 4, tensor.BF16).m
	ident := encode(tensor.F32, randVals(r, 16, 1), 1, 16)
	// A row longer than normx's 4 values per invocation cover in one
	// step (2048), not a multiple of its 512 invocations.
	const NL = 2600
	wl := encode(tensor.BF16, randVals(r, NL, 1), NL)
	wl2 := encode(tensor.F32, randVals(r, NL, 1), NL)
	vals := make([][]float32, 27)
	for i := range vals {
		vals[i] = randVals(r, max(4*H, NL), 1)
	}
	mm := func(be streamBackend, x *tensor.Tensor, w *tensor.Matrix) *tensor.Tensor {
		o := alloc(be, x.Rows(), w.Out)
		must(t, be.MatMul(o, x, w))
		return o
	}
	norm := func(be streamBackend, x, w *tensor.Tensor) *tensor.Tensor {
		o := alloc(be, x.Shape...)
		must(t, be.RMSNorm(o, x, w, 1e-6))
		return o
	}
	cases := []chainCase{
		{"router: norm and scale, product and softcap", 2, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			x := in(0, 1, H)
			nt := norm(be, x, wf)
			must(t, be.Scale(nt, nt, 0.0625))
			m := mm(be, nt, router)
			must(t, be.Softcap(m, m, 1))
			return []*tensor.Tensor{nt, m}
		}},
		{"input norm read by four products, laurel", 6, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			x := in(1, 1, H)
			nd := norm(be, x, wb)
			lr := mm(be, nd, lq)
			o := mm(be, lr, rq)
			must(t, be.RMSNorm(o, o, wf2, 1e-6))
			must(t, be.Add(o, o, nd))
			q := mm(be, nd, qq)
			k := mm(be, nd, kq)
			return []*tensor.Tensor{nd, o, q, k}
		}},
		{"mlp: gate with gelu, up times gate, down, norm and residual", 5, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			h := in(2, 1, H)
			ff := norm(be, h, wf)
			gt := mm(be, ff, gate)
			must(t, be.GeluTanh(gt, gt))
			u := mm(be, ff, up)
			must(t, be.Mul(gt, gt, u))
			d := mm(be, gt, down)
			must(t, be.RMSNorm(d, d, wp, 1e-6))
			must(t, be.Add(d, d, h))
			return []*tensor.Tensor{ff, gt, u, d}
		}},
		{"per-layer input: scaled row, gated product, norm added to three streams", 4, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			s := in(3, 4, 1, H)
			ple := in(4, 1, P)
			s0 := &tensor.Tensor{DType: tensor.F32, Shape: []int{1, H}, Data: s.Data[:4*H], Handle: s.Handle}
			sc := alloc(be, 1, H)
			must(t, be.Mul(sc, s0, outScale))
			gp := mm(be, sc, pg)
			must(t, be.GeluTanh(gp, gp))
			must(t, be.Mul(gp, gp, ple))
			p := mm(be, gp, pp)
			must(t, be.RMSNorm(p, p, wf2, 1e-6))
			for j := 1; j < 4; j++ {
				sj := &tensor.Tensor{DType: tensor.F32, Shape: []int{1, H}, Data: s.Data[4*H*j : 4*H*(j+1)], Handle: s.Handle}
				must(t, be.Add(sj, sj, p))
			}
			return []*tensor.Tensor{sc, gp, p, s}
		}},
		{"elementwise chain", 1, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			pred, act := in(5, 1, H), in(6, 1, H)
			nv := alloc(be, 1, H)
			must(t, be.Scale(nv, pred, -1))
			must(t, be.Add(nv, nv, act))
			return []*tensor.Tensor{nv}
		}},
		{"attention tail: norm, two residuals, scale", 1, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			h, pred, lau := in(7, 1, H), in(8, 1, H), in(9, 1, H)
			must(t, be.RMSNorm(h, h, wf, 1e-6))
			must(t, be.Add(h, h, pred))
			must(t, be.Add(h, lau, h))
			must(t, be.Scale(h, h, 0.7071))
			return []*tensor.Tensor{h}
		}},
		{"norm in place, then a product: kept", 2, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			y := in(10, 1, H)
			must(t, be.RMSNorm(y, y, wf, 1e-6))
			return []*tensor.Tensor{y, mm(be, y, kq)}
		}},
		{"norm input overwritten before the product: kept", 3, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			a := in(11, 1, H)
			n1 := norm(be, a, wf)
			must(t, be.Scale(a, a, 2))
			return []*tensor.Tensor{a, n1, mm(be, n1, kq)}
		}},
		{"norm read by another op and a product: kept", 3, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			x := in(12, 1, H)
			n2 := norm(be, x, wb)
			sm := alloc(be, 1, H)
			must(t, be.Softmax(sm, n2))
			return []*tensor.Tensor{n2, sm, mm(be, n2, qq)}
		}},
		{"two rows: kept", 2, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			x := in(13, 2, H)
			n3 := norm(be, x, wf)
			return []*tensor.Tensor{n3, mm(be, n3, kq)}
		}},
		{"attention tail and the pre-feed-forward norm", 2, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			h, pred := in(16, 1, H), in(17, 1, H)
			must(t, be.RMSNorm(h, h, wp, 1e-6))
			must(t, be.Add(h, h, pred))
			must(t, be.Scale(h, h, 0.7071))
			ff := norm(be, h, wb)
			return []*tensor.Tensor{h, ff, mm(be, ff, gate)}
		}},
		{"feed-forward norm and residual, router norm and scale, router and softcap", 2, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			ff, h := in(18, 1, H), in(19, 1, H)
			must(t, be.RMSNorm(ff, ff, wp, 1e-6))
			must(t, be.Add(ff, ff, h))
			nt := norm(be, ff, wf)
			must(t, be.Scale(nt, nt, 0.0625))
			m := mm(be, nt, router)
			must(t, be.Softcap(m, m, 1))
			return []*tensor.Tensor{ff, nt, m}
		}},
		{"wide products: gate with gelu, up times gate", 2, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			x := in(21, 1, 4*H)
			gt := mm(be, x, wgate)
			must(t, be.GeluTanh(gt, gt))
			u := mm(be, x, wup)
			must(t, be.Mul(gt, gt, u))
			return []*tensor.Tensor{gt, u}
		}},
		{"long row: norm, residual, scale, second norm", 1, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			h, pred := in(22, 1, NL), in(23, 1, NL)
			must(t, be.RMSNorm(h, h, wl, 1e-6))
			must(t, be.Add(h, h, pred))
			must(t, be.Scale(h, h, 0.7071))
			return []*tensor.Tensor{h, norm(be, h, wl2)}
		}},
		{"long row: norm added into two other rows", 1, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			p, s1, s2 := in(24, 1, NL), in(25, 1, NL), in(26, 1, NL)
			must(t, be.RMSNorm(p, p, wl2, 1e-6))
			must(t, be.Add(s1, s1, p))
			must(t, be.Add(s2, s2, p))
			return []*tensor.Tensor{p, s1, s2}
		}},
		{"small dense product and a constant added", 1, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			mod := in(20, 1, 4)
			coef := mm(be, mod, coefs)
			must(t, be.Add(coef, coef, ident))
			return []*tensor.Tensor{coef}
		}},
		{"operand written in between: folds into its writer instead", 2, func(be streamBackend, in func(int, ...int) *tensor.Tensor) []*tensor.Tensor {
			x, b2 := in(14, 1, H), in(15, 1, 128)
			k := mm(be, x, kq)
			must(t, be.Scale(b2, b2, 3))
			must(t, be.Add(k, k, b2))
			return []*tensor.Tensor{k, b2}
		}},
	}
	run := func(be streamBackend, cc chainCase) ([][]float32, int64) {
		in := func(i int, shape ...int) *tensor.Tensor {
			x := alloc(be, shape...)
			copy(x.F32(), vals[i][:x.Len()])
			return x
		}
		var st0 gpu.Stats
		if gb, ok := be.(*gpu.Backend); ok {
			must(t, gb.Sync())
			st0 = gb.Stats()
		}
		outs := cc.run(be, in)
		must(t, be.Sync())
		var got [][]float32
		for _, o := range outs {
			got = append(got, append([]float32(nil), o.F32()...))
		}
		if gb, ok := be.(*gpu.Backend); ok {
			return got, gb.Stats().Dispatches - st0.Dispatches
		}
		return got, 0
	}
	defer g.SetChains(true)
	for _, cc := range cases {
		t.Run(cc.name, func(t *testing.T) {
			want, _ := run(c, cc)
			g.SetChains(false)
			off, loff := run(g, cc)
			g.SetChains(true)
			on, lon := run(g, cc)
			t.Logf("%d launches unchained, %d chained", loff, lon)
			if lon != int64(cc.chained) {
				t.Errorf("%d launches chained, want %d (%d unchained)", lon, cc.chained, loff)
			}
			for k := range want {
				scale := 1.0
				for _, v := range want[k] {
					scale = math.Max(scale, math.Abs(float64(v)))
				}
				for i := range want[k] {
					g, u, w := float64(on[k][i]), float64(off[k][i]), float64(want[k][i])
					// tensor/cpu rounds x to int16 per group in its
					// quantized products (TestAgainstCPU's rtolQ); chained
					// and unchained GPU runs differ in rounding order only.
					if math.IsNaN(g) || math.Abs(g-u) > 2e-5*scale || math.Abs(g-w) > 5e-3*scale {
						t.Fatalf("output %d [%d]: chained %v, unchained %v, cpu %v", k, i, g, u, w)
					}
				}
			}
		})
	}
}

// alloc returns a zeroed F32 tensor of be.
func alloc(be tensor.Backend, shape ...int) *tensor.Tensor { return be.Alloc(shape...) }

// TestTinyGemma3nChains runs the tiny Gemma 3n (chunked prefill, then
// decode) with chains off, on without the schedule and on with it: the
// logits must agree (the folded ops round in other orders only; the
// schedule only reorders independent launches, so it changes no bit), the
// decode steps must mostly replay the rewrite kept from an earlier step,
// and a decode step must take at least a third fewer launches.
func TestTinyGemma3nChains(t *testing.T) {
	g, _ := open(t)
	defer g.SetChains(true)
	defer g.SetSchedule(true)
	_, mg := tinyModelPair(t, g, 13)
	prompt := make([]int32, 24)
	for i := range prompt {
		prompt[i] = int32((i*31 + 5) % mg.Config().VocabSize)
	}
	var logits [3][][]float32
	var perStep, barriers [3]int64
	var replays [3]int64
	for i, on := range []struct{ chains, schedule bool }{{false, false}, {true, false}, {true, true}} {
		g.SetChains(on.chains)
		g.SetSchedule(on.schedule)
		r0 := g.Stats().ChainReplays
		logits[i] = forward(t, mg, prompt, 12)
		replays[i] = g.Stats().ChainReplays - r0
		c, err := mg.NewCache(kvcache.DefaultOptions())
		must(t, err)
		_, err = mg.Forward(c, prompt, true)
		must(t, err)
		st0 := g.Stats()
		_, err = mg.Forward(c, prompt[:1], true)
		must(t, err)
		perStep[i] = g.Stats().Dispatches - st0.Dispatches
		barriers[i] = g.Stats().Barriers - st0.Barriers
	}
	for s := range logits[0] {
		w := make([]float64, len(logits[0][s]))
		for i, v := range logits[0][s] {
			w[i] = float64(v)
		}
		if e := relL2(logits[1][s], w); e > 1e-5 || math.IsNaN(e) {
			t.Errorf("step %d: chained logits differ from unchained by %.3g (relative L2), want <= 1e-5", s, e)
		}
		for i, v := range logits[2][s] {
			if math.Float32bits(v) != math.Float32bits(logits[1][s][i]) {
				t.Fatalf("step %d: scheduled logit %d is %v, unscheduled %v: want the same bits", s, i, v, logits[1][s][i])
			}
		}
	}
	// Decode steps of one shape replay the rewrite of the first.
	for i := 1; i < 3; i++ {
		if replays[i] < 8 {
			t.Errorf("run %d: %d of 12 chained decode steps replayed a kept rewrite, want at least 8", i, replays[i])
		}
		if perStep[i]*3 > perStep[0]*2 {
			t.Errorf("run %d: %d launches per one-token step chained vs %d unchained: want at least a third fewer", i, perStep[i], perStep[0])
		}
	}
	if perStep[2] != perStep[1] || barriers[2] >= barriers[1] {
		t.Errorf("one-token step chained: %d launches and %d barriers, scheduled %d and %d: want the same launches and fewer barriers", perStep[1], barriers[1], perStep[2], barriers[2])
	}
	t.Logf("one-token step: launches (barriers) unchained %d (%d), chained %d (%d), scheduled %d (%d); %v chained segments replayed a kept rewrite",
		perStep[0], barriers[0], perStep[1], barriers[1], perStep[2], barriers[2], replays[1:])
}
