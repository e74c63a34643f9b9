// Package familytest holds the golden-fixture checks the model families'
// tests share: reading the files models/blocks/testdata/goldenlib.py
// writes, and running a loaded model against them (one-shot, chunked,
// decode, the trimmed max-kv scenario, RoPE tables and layer types).
//
// RunGolden runs a family's whole fixture table through those checks.
//
// It is imported by tests only. It may import tensor, kvcache,
// models/checkpoint, models/blocks and models/synth; never a family
// package or models.
package familytest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models/blocks"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// Tolerance is the allowed |Δlogit| relative to the largest golden logit,
// for dense and quantized fixtures alike and for every path (one-shot,
// chunked, decode). Both sides compute in float32 from the same weights
// (a quantized fixture's reference runs on exactly the dequantized ones)
// and differ only in the order of float32 sums: the CPU backend's
// quantized products are float32-precise at any row count (decode rounds
// x per group to 24 bits or finer, tensor/cpu/doc.go), and these fixtures measure
// ~1e-6. Any real divergence (a wrong constant, mask, position, norm,
// table, scale, bias, group or nibble order) moves logits by 1e-2 or more.
const Tolerance = 1e-4

// LM is what the checks need of a model.
type LM interface {
	Config() blocks.Info
	NewCache(opts kvcache.Options) (*kvcache.Cache, error)
	Forward(cache *kvcache.Cache, ids []int32, lastOnly bool) (*tensor.Tensor, error)
}

// Golden is one golden file.
type Golden struct {
	Path      string
	Tokens    []int32
	PromptLen int
	Logits    []float32 // [len(Tokens), vocab]
	Vocab     int
	RopeCos   []float32 // [layers, headDim] at position 1 (golden.safetensors)
	RopeSin   []float32
	HeadDim   int
	Chunk     int // golden_trim.safetensors: prefill chunk
	MaxKV     int // and cache cap
	Sink      int // and sink
	// Reference is what transformers resolved from the config.
	Reference struct {
		LayerTypes    []string  `json:"layer_types"`
		SlidingWindow *int      `json:"sliding_window"`
		HeadDim       int       `json:"head_dim"`
		Scaling       []float64 `json:"scaling"`
		EmbedScale    *float64  `json:"embed_scale"`
		LogitScale    *float64  `json:"logit_scale"`
	}
	Versions string // transformers and torch versions
}

// Need fails the test when a fixture file is missing: the fixtures are the
// independent reference, so a run without them must not pass quietly.
func Need(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("golden fixture %s is missing (make it with models/blocks/testdata/make_goldens.py on a machine with transformers): %v", path, err)
	}
}

// Tensors returns every tensor of an open safetensors file as float32
// values, and their shapes, by name.
func Tensors(t testing.TB, f *checkpoint.SafetensorsFile) (map[string][]float32, map[string][]int) {
	t.Helper()
	vals := map[string][]float32{}
	shapes := map[string][]int{}
	for _, info := range f.Tensors {
		data, err := f.Data(info)
		if err != nil {
			t.Fatal(err)
		}
		x, err := tensor.FromBytes(info.DType, info.Shape, data)
		if err != nil {
			t.Fatal(err)
		}
		if vals[info.Name], err = x.ToF32(); err != nil {
			t.Fatal(err)
		}
		shapes[info.Name] = info.Shape
	}
	return vals, shapes
}

// Read loads a golden file, failing the test when it is missing.
func Read(t testing.TB, path string) *Golden {
	t.Helper()
	Need(t, path)
	f, err := checkpoint.OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := &Golden{Path: path}
	vals, shapes := Tensors(t, f)
	for _, v := range vals["tokens"] {
		g.Tokens = append(g.Tokens, int32(v))
	}
	one := func(name string) int {
		if v := vals[name]; len(v) == 1 {
			return int(v[0])
		}
		return 0
	}
	g.PromptLen, g.Chunk, g.MaxKV, g.Sink = one("prompt_len"), one("chunk"), one("max_kv"), one("sink")
	g.Logits = vals["logits"]
	if s := shapes["logits"]; len(s) == 2 {
		g.Vocab = s[1]
	}
	g.RopeCos, g.RopeSin = vals["rope_cos"], vals["rope_sin"]
	if s := shapes["rope_cos"]; len(s) == 2 {
		g.HeadDim = s[1]
	}
	if g.Vocab == 0 || len(g.Tokens) == 0 || g.PromptLen <= 0 || len(g.Logits) != len(g.Tokens)*g.Vocab {
		t.Fatalf("%s: malformed golden file (tokens %d, prompt %d, logits %d, vocab %d)", path, len(g.Tokens), g.PromptLen, len(g.Logits), g.Vocab)
	}
	if ref := f.Metadata["reference"]; ref != "" {
		if err := json.Unmarshal([]byte(ref), &g.Reference); err != nil {
			t.Fatalf("%s: reference metadata: %v", path, err)
		}
	}
	g.Versions = fmt.Sprintf("transformers %s, torch %s", f.Metadata["transformers"], f.Metadata["torch"])
	return g
}

// Row returns golden logits row r.
func (g *Golden) Row(r int) []float32 { return g.Logits[r*g.Vocab : (r+1)*g.Vocab] }

// Scale is the largest |logit|.
func (g *Golden) Scale() float64 { return MaxAbs(g.Logits) }

// Prefill runs ids through a fresh cache in chunks and returns all rows.
func Prefill(t testing.TB, m LM, opts kvcache.Options, ids []int32, chunk int) ([]float32, *kvcache.Cache) {
	t.Helper()
	c, err := m.NewCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	for lo := 0; lo < len(ids); lo += chunk {
		hi := min(lo+chunk, len(ids))
		lg, err := m.Forward(c, ids[lo:hi], false)
		if err != nil {
			t.Fatalf("chunk [%d, %d): %v", lo, hi, err)
		}
		out = append(out, lg.F32()...)
	}
	return out, c
}

// Check runs m against the golden file at path: one forward over every
// token, chunked prefills, and a prefill of the prompt followed by one
// decode step per remaining token (each fed the golden token, so a near
// tie cannot derail the comparison); greedy ids must agree wherever the
// golden top two logits are clearly apart. Every row is held to
// Tolerance.
func Check(t *testing.T, m LM, path string) *Golden {
	t.Helper()
	g := Read(t, path)
	if v := m.Config().VocabSize; v != g.Vocab {
		t.Fatalf("model vocabulary %d, golden %d", v, g.Vocab)
	}
	T, P := len(g.Tokens), g.PromptLen
	scale := g.Scale()
	tol := Tolerance * scale
	oneShot, _ := Prefill(t, m, kvcache.DefaultOptions(), g.Tokens, T)
	d := MaxDiff(oneShot, g.Logits)
	if d > tol {
		t.Errorf("one-shot logits: max |Δ| %.3g > %.3g (%s)", d, tol, g.Versions)
	} else {
		t.Logf("one-shot: max |Δ| %.3g = %.2g of max |logit| %.3g", d, d/scale, scale)
	}
	// Chunks of 5 leave quantized products of fewer than four rows (the
	// decode kernels); chunks of 16 keep them in blocks of four.
	for _, chunk := range []int{5, 16} {
		got, _ := Prefill(t, m, kvcache.DefaultOptions(), g.Tokens, chunk)
		if d := MaxDiff(got, g.Logits); d > tol {
			t.Errorf("chunk %d: max |Δ| %.3g > %.3g", chunk, d, tol)
		} else {
			t.Logf("chunk %d: max |Δ| %.3g = %.2g of max |logit|", chunk, d, d/scale)
		}
	}
	c, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	lg, err := m.Forward(c, g.Tokens[:P], true)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for pos := P - 1; pos < T; pos++ {
		row, want := lg.F32(), g.Row(pos)
		d := MaxDiff(row, want)
		worst = max(worst, d)
		if d > tol {
			t.Errorf("decode at position %d: max |Δ| %.3g > %.3g", pos, d, tol)
		}
		if a, b := Argmax(row), Argmax(want); a != b && TopGap(want) > 2*tol {
			t.Errorf("decode at position %d: argmax %d, golden %d (gap %.3g)", pos, a, b, TopGap(want))
		}
		if pos+1 < T {
			if lg, err = m.Forward(c, g.Tokens[pos+1:pos+2], true); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("decode of %d steps past a %d-token prompt: max |Δ| %.3g = %.2g of max |logit|", T-P, P, worst, worst/scale)
	if c.Offset() != T {
		t.Errorf("offset %d after decode, want %d", c.Offset(), T)
	}
	CheckGreedy(t, m, g.Tokens, P)
	return g
}

// CheckTrim runs the trimmed scenario of golden_trim.safetensors: a cache
// capped at MaxKV with the golden sink, the prompt prefilled in Chunk-token
// chunks (trimming between them), then one decode step per remaining
// token, every row compared with transformers' run under explicit masks
// over absolute positions.
func CheckTrim(t *testing.T, m LM, path string) {
	t.Helper()
	g := Read(t, path)
	if g.MaxKV <= 0 || g.Chunk <= 0 {
		t.Fatalf("%s: no max_kv/chunk", path)
	}
	opts := kvcache.DefaultOptions()
	opts.MaxKV, opts.Sink = g.MaxKV, g.Sink
	T, P := len(g.Tokens), g.PromptLen
	scale := g.Scale()
	tol := Tolerance * scale
	got, c := Prefill(t, m, opts, g.Tokens[:P], g.Chunk)
	if d := MaxDiff(got, g.Logits[:P*g.Vocab]); d > tol {
		for r := 0; r < P; r++ {
			if d := MaxDiff(got[r*g.Vocab:(r+1)*g.Vocab], g.Row(r)); d > tol {
				t.Errorf("trimmed prefill: first bad row %d (chunk %d), max |Δ| %.3g > %.3g", r, r/g.Chunk, d, tol)
				break
			}
		}
	}
	st := c.Stats()
	if st.Trimmed == 0 {
		t.Errorf("the scenario trimmed nothing (stats %+v)", st)
	}
	worst := 0.0
	for pos := P; pos < T; pos++ {
		lg, err := m.Forward(c, g.Tokens[pos:pos+1], true)
		if err != nil {
			t.Fatal(err)
		}
		d := MaxDiff(lg.F32(), g.Row(pos))
		worst = max(worst, d)
		if d > tol {
			t.Errorf("trimmed decode at position %d: max |Δ| %.3g > %.3g", pos, d, tol)
		}
	}
	st = c.Stats()
	t.Logf("trimmed: %d prompt rows in chunks of %d, %d decode steps, max-kv %d, %d trimmed, decode max |Δ| %.3g (tolerance %.3g)",
		P, g.Chunk, T-P, g.MaxKV, st.Trimmed, worst, tol)
}

// CheckLayout compares the model's layers with what transformers resolved
// and used: per layer the window (sliding iff layer_types says so), the
// RoPE table (its inverse frequencies are the angles at position 1, the
// YaRN attention factor their norm, folded into our attention scale), or
// no rotation where the golden rows are zero (NoPE), and the attention
// scale.
func CheckLayout(t *testing.T, g *Golden, d *blocks.Decoder) {
	t.Helper()
	ref := g.Reference
	if len(ref.LayerTypes) != len(d.Layers) {
		t.Fatalf("transformers has %d layer types, model %d layers", len(ref.LayerTypes), len(d.Layers))
	}
	for i, lt := range ref.LayerTypes {
		w := d.Info.Layers[i].Window
		if (lt == "sliding_attention") != (w > 0) || (w > 0 && ref.SlidingWindow != nil && w != *ref.SlidingWindow) {
			t.Errorf("layer %d: window %d, transformers %s (window %v)", i, w, lt, ref.SlidingWindow)
		}
	}
	D := g.HeadDim
	if D == 0 || len(g.RopeCos) != len(d.Layers)*D {
		t.Fatalf("%s: rope rows for %d layers of %d", g.Path, len(d.Layers), D)
	}
	for i := range d.Layers {
		a := &d.Layers[i].Attn
		cos, sin := g.RopeCos[i*D:(i+1)*D], g.RopeSin[i*D:(i+1)*D]
		if MaxAbs(cos) == 0 && MaxAbs(sin) == 0 {
			if a.Rope != nil {
				t.Errorf("layer %d: transformers applies no RoPE, model does", i)
			}
			continue
		}
		if a.Rope == nil {
			t.Errorf("layer %d: model applies no RoPE, transformers does", i)
			continue
		}
		inv := a.Rope.InvFreq.F32()
		af := 0.0
		for j := range inv {
			k := j
			if a.Rope.Interleaved {
				k = 2 * j
			}
			ang := math.Atan2(float64(sin[k]), float64(cos[k]))
			af = math.Hypot(float64(cos[k]), float64(sin[k]))
			if math.Abs(ang-float64(inv[j])) > 1e-6+1e-5*float64(inv[j]) {
				t.Errorf("layer %d: inverse frequency %d is %.7g, transformers %.7g", i, j, inv[j], ang)
			}
		}
		if len(ref.Scaling) == len(d.Layers) {
			want := ref.Scaling[i] * af * af
			if math.Abs(float64(a.Scale)-want) > 1e-6*want {
				t.Errorf("layer %d: attention scale %.7g, transformers %.7g (scaling %.7g x attention factor %.6g squared)", i, a.Scale, want, ref.Scaling[i], af)
			}
		}
	}
	if ref.EmbedScale != nil && math.Abs(float64(d.EmbedScale)-*ref.EmbedScale) > 1e-6 {
		t.Errorf("embedding scale %g, transformers %g", d.EmbedScale, *ref.EmbedScale)
	}
	if ref.LogitScale != nil && math.Abs(float64(d.LogitScale)-*ref.LogitScale) > 1e-7 {
		t.Errorf("logit scale %g, transformers %g", d.LogitScale, *ref.LogitScale)
	}
}

// Dir is the path of fixture folder name under the calling package's
// testdata.
func Dir(name string) string { return filepath.Join("testdata", name) }

// MaxAbs is the largest |x|.
func MaxAbs(x []float32) float64 {
	m := 0.0
	for _, v := range x {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

// MaxDiff is the largest |a-b| (+Inf when lengths differ or a value is not
// finite).
func MaxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	m := 0.0
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		m = math.Max(m, d)
	}
	return m
}

// Argmax is the index of the largest value, as greedy decoding chooses it
// (tensor.ArgmaxF32).
func Argmax(x []float32) int32 { return int32(tensor.ArgmaxF32(x)) }

// TopGap is the largest value minus the second largest.
func TopGap(x []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, v := range x {
		f := float64(v)
		if f > a {
			a, b = f, a
		} else if f > b {
			b = f
		}
	}
	return a - b
}
