package familytest

import (
	"path/filepath"
	"slices"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models/blocks"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// Case is one fixture folder under the calling package's testdata and what
// its config must resolve to.
type Case struct {
	Name  string  // folder under testdata
	Stops []int32 // stop ids (generation_config.json, else config.json)
	BOS   int32
	Trim  bool // the folder also holds golden_trim.safetensors
}

// Model is a family's loaded model as the golden checks use it.
type Model interface {
	LM
	Close() error
}

// RunGolden runs every case as a subtest on be: the model loaded with load
// from the case's folder, then Check, CheckLayout on the decoder that
// decoder returns, the stop ids and BOS, and CheckTrim where the case has a
// trimmed scenario.
func RunGolden[M Model](t *testing.T, be tensor.Backend, load func(string, tensor.Backend) (M, error), decoder func(M) *blocks.Decoder, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			dir := Dir(tc.Name)
			Need(t, filepath.Join(dir, "golden.safetensors"))
			m, err := load(dir, be)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			g := Check(t, m, filepath.Join(dir, "golden.safetensors"))
			CheckLayout(t, g, decoder(m))
			if info := m.Config(); !slices.Equal(info.StopIDs, tc.Stops) || info.BOSID != tc.BOS {
				t.Errorf("stop ids %v, bos %d; want %v, %d", info.StopIDs, info.BOSID, tc.Stops, tc.BOS)
			}
			if tc.Trim {
				CheckTrim(t, m, filepath.Join(dir, "golden_trim.safetensors"))
			}
		})
	}
}

// Loads turns a family's Load on be into the loader CheckBad takes: it
// returns Load's error and closes what loads.
func Loads[M Model](load func(string, tensor.Backend) (M, error), be tensor.Backend) func(string) error {
	return func(dir string) error {
		m, err := load(dir, be)
		if err == nil {
			m.Close()
		}
		return err
	}
}

// CheckChunkedDecode compares m with a golden file in the layout of Gemma
// 3n's make_golden.py (tokens, prompt_len, logits one row per token,
// decode_logits: the cached prefill's last row, then one cached step
// each): prefill in chunks of chunk tokens gives every row, and a cached
// decode fed the golden tokens gives the decode rows, each held to tol
// relative to the largest golden logit. It is how the GPU backends run
// those fixtures.
func CheckChunkedDecode(t *testing.T, m LM, path string, chunk int, tol float64) {
	t.Helper()
	Need(t, path)
	f, err := checkpoint.OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	vals, _ := Tensors(t, f)
	f.Close()
	ids := make([]int32, len(vals["tokens"]))
	for i, v := range vals["tokens"] {
		ids[i] = int32(v)
	}
	if len(vals["prompt_len"]) != 1 || len(ids) == 0 {
		t.Fatalf("%s: no tokens or prompt_len", path)
	}
	P, vocab := int(vals["prompt_len"][0]), m.Config().VocabSize
	want, dec := vals["logits"], vals["decode_logits"]
	steps := len(dec) / max(vocab, 1)
	if len(want) != len(ids)*vocab || steps == 0 || len(dec) != steps*vocab {
		t.Fatalf("%s: %d logits and %d decode logits for %d tokens of vocabulary %d", path, len(want), len(dec), len(ids), vocab)
	}
	abs := tol * MaxAbs(want)
	got, _ := Prefill(t, m, kvcache.DefaultOptions(), ids, chunk)
	if d := MaxDiff(got, want); d > abs {
		t.Errorf("prefill in chunks of %d: max |Δ| %.3g > %.3g", chunk, d, abs)
	} else {
		t.Logf("prefill in chunks of %d: max |Δ| %.3g (tolerance %.3g)", chunk, d, abs)
	}
	c, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	lg, err := m.Forward(c, ids[:P], true)
	for step := 0; err == nil && step < steps; step++ {
		d := MaxDiff(lg.F32(), dec[step*vocab:(step+1)*vocab])
		worst = max(worst, d)
		if d > abs {
			t.Errorf("decode step %d: max |Δ| %.3g > %.3g", step, d, abs)
		}
		if P+step+1 > len(ids) {
			break
		}
		lg, err = m.Forward(c, ids[P+step:P+step+1], true)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d decode steps: max |Δ| %.3g (tolerance %.3g)", steps, worst, abs)
	CheckGreedy(t, m, ids, P)
}

// greedy is models.Greedy (not imported here: the models package's own
// tests use this one).
type greedy interface {
	ForwardArgmax(cache *kvcache.Cache, ids []int32) (int32, error)
}

// CheckGreedy prefills ids[:P] and decodes the rest one token at a time
// twice, each on a fresh cache: through Forward, taking tensor.ArgmaxF32 of
// each step's logits on the host, and through the model's ForwardArgmax
// (models.Greedy; GPU backends take it on the GPU and read back only the
// index). Every step must give the same index and both caches the same
// offset; a model without ForwardArgmax fails.
func CheckGreedy(t *testing.T, m LM, ids []int32, P int) {
	t.Helper()
	g, ok := m.(greedy)
	if !ok {
		t.Fatalf("%T has no ForwardArgmax", m)
	}
	if P < 1 || P > len(ids) {
		t.Fatalf("prompt length %d of %d tokens", P, len(ids))
	}
	vocab := m.Config().VocabSize
	cf, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	cg, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for lo, hi := 0, P; hi <= len(ids); lo, hi = hi, hi+1 {
		lg, err := m.Forward(cf, ids[lo:hi], true)
		if err != nil {
			t.Fatal(err)
		}
		if lg.Len() != vocab {
			t.Fatalf("logits %v, want one row of %d", lg, vocab)
		}
		want := tensor.ArgmaxF32(lg.F32())
		got, err := g.ForwardArgmax(cg, ids[lo:hi])
		if err != nil {
			t.Fatal(err)
		}
		if int(got) != want {
			t.Errorf("greedy token after %d tokens: ForwardArgmax %d, argmax of Forward's logits %d (logits %.6g and %.6g)",
				hi, got, want, lg.F32()[want], lg.F32()[min(max(got, 0), int32(vocab-1))])
		}
	}
	if cf.Offset() != cg.Offset() || cg.Offset() != len(ids) {
		t.Errorf("offsets %d (Forward) and %d (ForwardArgmax), want %d", cf.Offset(), cg.Offset(), len(ids))
	}
}

// CheckFixture runs a family fixture folder's golden.safetensors through
// CheckRows in prefill chunks of chunk tokens and, when trim is set, its
// golden_trim.safetensors with the cap, sink and chunk that file names:
// how the GPU backends run every family's fixtures.
func CheckFixture(t *testing.T, m LM, dir string, chunk int, trim bool) {
	t.Helper()
	g := Read(t, filepath.Join(dir, "golden.safetensors"))
	CheckRows(t, m, g, kvcache.DefaultOptions(), chunk)
	CheckGreedy(t, m, g.Tokens, g.PromptLen)
	if trim {
		gt := Read(t, filepath.Join(dir, "golden_trim.safetensors"))
		opts := kvcache.DefaultOptions()
		opts.MaxKV, opts.Sink = gt.MaxKV, gt.Sink
		CheckRows(t, m, gt, opts, gt.Chunk)
	}
}

// CheckRows prefills g's prompt in chunks of chunk tokens into a cache with
// opts and decodes the rest one golden token at a time, holding every
// row's logits to Tolerance of g's; a capped cache must have trimmed.
func CheckRows(t *testing.T, m LM, g *Golden, opts kvcache.Options, chunk int) {
	t.Helper()
	tol := Tolerance * g.Scale()
	c, err := m.NewCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	check := func(pos int, row []float32) {
		d := MaxDiff(row, g.Row(pos))
		worst = max(worst, d)
		if d > tol {
			t.Errorf("position %d: max |Δ| %.3g > %.3g", pos, d, tol)
		}
	}
	P, V := g.PromptLen, g.Vocab
	for lo := 0; lo < P; lo += chunk {
		hi := min(lo+chunk, P)
		lg, err := m.Forward(c, g.Tokens[lo:hi], false)
		if err != nil {
			t.Fatal(err)
		}
		for r := lo; r < hi; r++ {
			check(r, lg.F32()[(r-lo)*V:(r-lo+1)*V])
		}
	}
	for pos := P; pos < len(g.Tokens); pos++ {
		lg, err := m.Forward(c, g.Tokens[pos:pos+1], true)
		if err != nil {
			t.Fatal(err)
		}
		check(pos, lg.F32())
	}
	st := c.Stats()
	if opts.MaxKV > 0 && st.Trimmed == 0 {
		t.Errorf("max-kv %d trimmed nothing", opts.MaxKV)
	}
	t.Logf("%d rows (max-kv %d, chunk %d, %d trimmed): max |Δ| %.3g = %.2g of max |logit|", len(g.Tokens), opts.MaxKV, chunk, st.Trimmed, worst, worst/g.Scale())
}
