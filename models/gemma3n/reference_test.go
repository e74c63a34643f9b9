package gemma3n

import (
	"fmt"
	"math"
	"mlxchat/models/familytest"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models/checkpoint"
	"mlxchat/models/synth"
	"mlxchat/tensor"
)

// A plain float64 transcription of transformers' Gemma3nTextModel forward
// over a whole sequence (no cache, masks from positions), written from the
// reference's tensor algebra (its permutes and matmuls) rather than from
// this package's backend ops, to check their composition independently of
// the Python fixtures.

type refModel struct {
	trace func(layer int, streams [][]float64)
	c     *Config
	get   func(name string) []float64 // dequantized tensor by name (under the text prefix)
}

func newRefModel(t *testing.T, dir string) *refModel {
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	cfg, err := ParseConfig(ck.Config)
	if err != nil {
		t.Fatal(err)
	}
	prefix := ""
	for _, p := range prefixes {
		if ck.Has(p + "embed_tokens.weight") {
			prefix = p
			break
		}
	}
	return &refModel{c: cfg, get: func(name string) []float64 {
		name = prefix + name
		var vals []float32
		if ck.Has(name + ".scales") {
			m, err := ck.Matrix(name)
			if err != nil {
				t.Fatal(err)
			}
			if vals, err = tensor.Dequantize(m); err != nil {
				t.Fatal(err)
			}
		} else {
			x, err := ck.Tensor(name + ".weight")
			if err != nil {
				x, err = ck.Tensor(name)
			}
			if err != nil {
				t.Fatal(err)
			}
			if vals, err = x.ToF32(); err != nil {
				t.Fatal(err)
			}
		}
		out := make([]float64, len(vals))
		for i, v := range vals {
			out[i] = float64(v)
		}
		return out
	}}
}

// linear: x [n, in] · W[out, in]ᵀ.
func refLinear(x []float64, w []float64, n, in, out int) []float64 {
	y := make([]float64, n*out)
	for r := 0; r < n; r++ {
		for o := 0; o < out; o++ {
			s := 0.0
			for i := 0; i < in; i++ {
				s += x[r*in+i] * w[o*in+i]
			}
			y[r*out+o] = s
		}
	}
	return y
}

func refRMS(x []float64, w []float64, d int, eps float64) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < len(x)/d; r++ {
		ms := 0.0
		for _, v := range x[r*d : (r+1)*d] {
			ms += v * v
		}
		inv := 1 / math.Sqrt(ms/float64(d)+eps)
		for i := 0; i < d; i++ {
			y[r*d+i] = x[r*d+i] * inv
			if w != nil {
				y[r*d+i] *= w[i]
			}
		}
	}
	return y
}

func refGelu(v float64) float64 {
	return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
}

func refRope(x []float64, n, heads, d int, base float64) {
	half := d / 2
	for p := 0; p < n; p++ {
		for h := 0; h < heads; h++ {
			row := x[(p*heads+h)*d : (p*heads+h+1)*d]
			for i := 0; i < half; i++ {
				f := float64(p) * math.Pow(base, -2*float64(i)/float64(d))
				c, s := math.Cos(f), math.Sin(f)
				a, b := row[i], row[i+half]
				row[i], row[i+half] = a*c-b*s, b*c+a*s
			}
		}
	}
}

func refRMSValue(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return s / float64(len(x))
}

// forward returns logits [n, vocab].
func (r *refModel) forward(ids []int32) []float64 {
	c := r.c
	n, H, S, L, P, D := len(ids), c.Hidden, c.AltUpInputs, c.Layers, c.PerLayerHidden, c.HeadDim
	eps := c.Eps
	embed := r.get("embed_tokens")
	h0 := make([]float64, n*H)
	for t, id := range ids {
		for i := 0; i < H; i++ {
			h0[t*H+i] = embed[int(id)*H+i] * math.Sqrt(float64(H))
		}
	}
	// per-layer inputs [n, L, P]
	pleTab := r.get("embed_tokens_per_layer")
	proj := refLinear(h0, r.get("per_layer_model_projection"), n, H, L*P)
	for i := range proj {
		proj[i] /= math.Sqrt(float64(H))
	}
	proj = refRMS(proj, r.get("per_layer_projection_norm"), P, eps)
	ple := make([]float64, n*L*P)
	for t, id := range ids {
		row := 0
		if int(id) < c.VocabPerLayer {
			row = int(id)
		}
		for i := 0; i < L*P; i++ {
			ple[t*L*P+i] = (proj[t*L*P+i] + pleTab[row*L*P+i]*math.Sqrt(float64(P))) / math.Sqrt2
		}
	}
	// streams [S][n*H]
	x := make([][]float64, S)
	x[0] = h0
	for j := 1; j < S; j++ {
		x[j] = refLinear(h0, r.get(fmt.Sprintf("altup_projections.%d", j-1)), n, H, H)
		for t := 0; t < n; t++ {
			f := math.Sqrt(refRMSValue(h0[t*H:(t+1)*H])) / math.Sqrt(math.Max(refRMSValue(x[j][t*H:(t+1)*H]), 1e-5))
			for i := 0; i < H; i++ {
				x[j][t*H+i] *= f
			}
		}
	}
	shared := c.SharedFrom()
	kvs := make([][2][]float64, L)
	for l := 0; l < L; l++ {
		pre := fmt.Sprintf("layers.%d.", l)
		w := func(s string) []float64 { return r.get(pre + s) }
		clip := func(v []float64) []float64 {
			for i := range v {
				v[i] = math.Max(-c.AltUpCoefClip, math.Min(c.AltUpCoefClip, v[i]))
			}
			return v
		}
		modal := func(a []float64) []float64 {
			m := refRMS(a, w("altup.router_norm"), H, eps)
			for i := range m {
				m[i] /= float64(H)
			}
			m = refLinear(m, w("altup.modality_router"), n, H, S)
			for i := range m {
				m[i] = math.Tanh(m[i])
			}
			return m
		}
		// predict: all_coefs = prediction_coefs(mod).reshape(S,S).permute -> pred[.., h, j] = Σ_k x[.., h, k]·coefs[k, j]
		mod := modal(x[c.AltUpActive])
		pc := refLinear(mod, clip(w("altup.prediction_coefs")), n, S, S*S) // [n, S*S] as [S(rows), S(cols)]
		pred := make([][]float64, S)
		for j := 0; j < S; j++ {
			pred[j] = make([]float64, n*H)
			for t := 0; t < n; t++ {
				for i := 0; i < H; i++ {
					s := x[j][t*H+i]
					for k := 0; k < S; k++ {
						// after permute(0,1,3,2): coefs[k][j] = raw[j][k]
						s += x[k][t*H+i] * pc[t*S*S+j*S+k]
					}
					pred[j][t*H+i] = s
				}
			}
		}
		active := pred[c.AltUpActive]
		normed := refRMS(active, w("input_layernorm"), H, eps)
		lau := refLinear(refLinear(normed, w("laurel.linear_left"), n, H, c.LaurelRank), w("laurel.linear_right"), n, c.LaurelRank, H)
		lau = refRMS(lau, w("laurel.post_laurel_norm"), H, eps)
		for i := range lau {
			lau[i] += normed[i]
		}
		// attention
		q := refRMS(refLinear(normed, w("self_attn.q_proj"), n, H, c.Heads*D), w("self_attn.q_norm"), D, eps)
		base := c.RopeGlobal
		if c.Sliding[l] {
			base = c.RopeLocal
		}
		refRope(q, n, c.Heads, D, base)
		if shared[l] < 0 {
			k := refRMS(refLinear(normed, w("self_attn.k_proj"), n, H, c.KVHeads*D), w("self_attn.k_norm"), D, eps)
			refRope(k, n, c.KVHeads, D, base)
			v := refRMS(refLinear(normed, w("self_attn.v_proj"), n, H, c.KVHeads*D), nil, D, eps)
			kvs[l] = [2][]float64{k, v}
		} else {
			kvs[l] = kvs[shared[l]]
		}
		k, v := kvs[l][0], kvs[l][1]
		o := make([]float64, n*c.Heads*D)
		group := c.Heads / c.KVHeads
		for t := 0; t < n; t++ {
			for h := 0; h < c.Heads; h++ {
				kh := h / group
				sc := make([]float64, n)
				mx := math.Inf(-1)
				for s := 0; s < n; s++ {
					if s > t || (c.Sliding[l] && t-s >= c.SlidingWindow) {
						sc[s] = math.Inf(-1)
						continue
					}
					dot := 0.0
					for i := 0; i < D; i++ {
						dot += q[(t*c.Heads+h)*D+i] * k[(s*c.KVHeads+kh)*D+i]
					}
					sc[s] = dot
					mx = math.Max(mx, dot)
				}
				sum := 0.0
				for s := range sc {
					sc[s] = math.Exp(sc[s] - mx)
					sum += sc[s]
				}
				for s := range sc {
					for i := 0; i < D; i++ {
						o[(t*c.Heads+h)*D+i] += sc[s] / sum * v[(s*c.KVHeads+kh)*D+i]
					}
				}
			}
		}
		attn := refRMS(refLinear(o, w("self_attn.o_proj"), n, c.Heads*D, H), w("post_attention_layernorm"), H, eps)
		for i := range attn {
			attn[i] = (attn[i] + active[i] + lau[i]) / math.Sqrt2
		}
		// MLP
		I := c.Intermediate[l]
		ffIn := refRMS(attn, w("pre_feedforward_layernorm"), H, eps)
		g := refLinear(ffIn, w("mlp.gate_proj"), n, H, I)
		if sp := c.Sparsity[l]; sp > 0 {
			mult := math.Sqrt2 * math.Erfinv(2*sp-1)
			for t := 0; t < n; t++ {
				row := g[t*I : (t+1)*I]
				mean, vr := 0.0, 0.0
				for _, v := range row {
					mean += v
				}
				mean /= float64(I)
				for _, v := range row {
					vr += (v - mean) * (v - mean)
				}
				cut := mean + math.Sqrt(vr/float64(I))*mult
				for i := range row {
					row[i] = math.Max(0, row[i]-cut)
				}
			}
		}
		u := refLinear(ffIn, w("mlp.up_proj"), n, H, I)
		for i := range g {
			g[i] = refGelu(g[i]) * u[i]
		}
		ff := refRMS(refLinear(g, w("mlp.down_proj"), n, I, H), w("post_feedforward_layernorm"), H, eps)
		for i := range ff {
			ff[i] += attn[i]
		}
		// correct
		cc := refLinear(modal(ff), clip(w("altup.correction_coefs")), n, S, S)
		innovation := make([]float64, n*H)
		for i := range innovation {
			innovation[i] = ff[i] - active[i]
		}
		for j := 0; j < S; j++ {
			for t := 0; t < n; t++ {
				for i := 0; i < H; i++ {
					pred[j][t*H+i] += (cc[t*S+j] + 1) * innovation[t*H+i]
				}
			}
		}
		first := append([]float64(nil), pred[c.AltUpActive]...)
		if c.AltUpCorrectScale {
			sc := w("altup.correct_output_scale")
			for i := range first {
				first[i] *= sc[i%H]
			}
		}
		gt := refLinear(first, w("per_layer_input_gate"), n, H, P)
		for t := 0; t < n; t++ {
			for i := 0; i < P; i++ {
				gt[t*P+i] = refGelu(gt[t*P+i]) * ple[(t*L+l)*P+i]
			}
		}
		pp := refRMS(refLinear(gt, w("per_layer_projection"), n, P, H), w("post_per_layer_input_norm"), H, eps)
		for j := 1; j < S; j++ {
			for i := range pp {
				pred[j][i] += pp[i]
			}
		}
		x = pred
		if r.trace != nil {
			r.trace(l, x)
		}
	}
	mean := append([]float64(nil), x[0]...)
	for j := 1; j < S; j++ {
		u := refLinear(x[j], r.get(fmt.Sprintf("altup_unembed_projections.%d", j-1)), n, H, H)
		for t := 0; t < n; t++ {
			f := math.Sqrt(refRMSValue(x[0][t*H:(t+1)*H])) / math.Sqrt(math.Max(refRMSValue(u[t*H:(t+1)*H]), 1e-5))
			for i := 0; i < H; i++ {
				mean[t*H+i] += u[t*H+i] * f
			}
		}
	}
	for i := range mean {
		mean[i] /= float64(S)
	}
	hfin := refRMS(mean, r.get("norm"), H, eps)
	logits := refLinear(hfin, embed, n, H, c.Vocab)
	for i := range logits {
		logits[i] = math.Tanh(logits[i]/c.FinalSoftcap) * c.FinalSoftcap
	}
	return logits
}

// TestMatchesFloat64Reference compares chunked prefill of the backend
// model with the float64 transcription on the synthetic tiny checkpoint
// (dense and 4-bit) for a prompt three windows long. Tolerance as for the
// golden test (1e-4 of the largest logit): our side is float32.
func TestMatchesFloat64Reference(t *testing.T) {
	be := newBackend(t)
	for _, opt := range []synth.Options{{Seed: 21}, {Seed: 22, Bits: 4, Naming: synth.NamingMLXLM}} {
		dir := tinyDir(t, opt)
		ref := newRefModel(t, dir)
		m := load(t, dir, be)
		ids := randomIDs(23, 28, m.Config().VocabSize)
		ids[9] = 500 // beyond the per-layer vocabulary (384)
		var refLayers [][][]float64
		ref.trace = func(l int, x [][]float64) { refLayers = append(refLayers, x) }
		want := ref.forward(ids)
		var diffs []float64
		m.trace = func(l int, x *tensor.Tensor) {
			xs := x.F32()
			d := 0.0
			for j := range refLayers[l] {
				for i, v := range refLayers[l][j] {
					d = math.Max(d, math.Abs(float64(xs[j*len(refLayers[l][j])+i])-v))
				}
			}
			diffs = append(diffs, d)
		}
		familytest.Prefill(t, m, kvcache.DefaultOptions(), ids, len(ids))
		m.trace = nil
		t.Logf("per-layer stream max |Δ|: %v", fmtDiffs(diffs))
		got, _ := familytest.Prefill(t, m, kvcache.DefaultOptions(), ids, 8)
		scale, d := 0.0, 0.0
		for i := range want {
			scale = math.Max(scale, math.Abs(want[i]))
			d = math.Max(d, math.Abs(float64(got[i])-want[i]))
		}
		if d > goldenTolerance*scale || math.IsNaN(d) {
			t.Errorf("bits %d: max |Δlogit| %.3g > %.3g (max |logit| %.3g)", opt.Bits, d, goldenTolerance*scale, scale)
		} else {
			t.Logf("bits %d: max |Δlogit| %.3g, max |logit| %.3g", opt.Bits, d, scale)
		}
	}
}
