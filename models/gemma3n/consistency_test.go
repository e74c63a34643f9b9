package gemma3n

import (
	"math/rand/v2"
	"mlxchat/models/familytest"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models/synth"
)

// tinyDir writes the synthetic tiny Gemma 3n (10 layers, window 8, 4
// KV-shared layers, sparsity on layers 0-2, BF16) once per test.
func tinyDir(t testing.TB, opt synth.Options) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := synth.WriteTiny(dir, opt); err != nil {
		t.Fatal(err)
	}
	return dir
}

func randomIDs(seed uint64, n, vocab int) []int32 {
	rng := rand.New(rand.NewPCG(seed, 99))
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(3 + rng.IntN(vocab-3))
	}
	ids[0] = 2
	return ids
}

// chunkTolerance bounds the difference between two chunkings of the same
// prompt, relative to the largest logit. Both runs do the same float32
// arithmetic per row except for the attention's key order and the matmul
// blocking, which move values by a few ulps per op (measured ~1e-6
// relative); 1e-4 leaves room for accumulation over 10 layers while still
// catching any masking or position error, which changes logits by O(1).
const chunkTolerance = 1e-4

// TestChunkedPrefillMatchesOneShot checks that prefilling in chunks of 1,
// 7, 64 and 512 tokens gives the one-shot logits for prompts much longer
// than the sliding window (8), so every chunk boundary crosses windows.
func TestChunkedPrefillMatchesOneShot(t *testing.T) {
	m := load(t, tinyDir(t, synth.Options{Seed: 3}), newBackend(t))
	vocab := m.Config().VocabSize
	for _, tc := range []struct {
		prompt int
		chunks []int
	}{
		{150, []int{1, 7, 64}},
		{520, []int{512, 64}},
	} {
		ids := randomIDs(uint64(tc.prompt), tc.prompt, vocab)
		want, _ := familytest.Prefill(t, m, kvcache.DefaultOptions(), ids, tc.prompt)
		scale := familytest.MaxAbs(want)
		for _, chunk := range tc.chunks {
			got, c := familytest.Prefill(t, m, kvcache.DefaultOptions(), ids, chunk)
			if d := familytest.MaxDiff(got, want); d > chunkTolerance*scale {
				t.Errorf("prompt %d, chunk %d: max |Δlogit| %.3g > %.3g (max |logit| %.3g)", tc.prompt, chunk, d, chunkTolerance*scale, scale)
			}
			if c.Offset() != tc.prompt {
				t.Errorf("prompt %d, chunk %d: offset %d", tc.prompt, chunk, c.Offset())
			}
		}
	}
}

// TestLastOnly checks that lastOnly returns exactly the last row, though
// the trailing KV-shared layers then run on that row alone, and that it
// leaves the same cache behind: decoding on from either prefill gives the
// same logits.
func TestLastOnly(t *testing.T) {
	m := load(t, tinyDir(t, synth.Options{Seed: 4}), newBackend(t))
	if tail := m.sharedTail(); tail == len(m.layers) {
		t.Fatalf("the tiny model has no trailing KV-shared layers (%d layers): the test would not reach the tail path", len(m.layers))
	}
	vocab := m.Config().VocabSize
	ids := randomIDs(5, 30, vocab)
	full, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	allT, err := m.Forward(full, ids, false)
	if err != nil {
		t.Fatal(err)
	}
	all := allT.F32()
	c, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	last, err := m.Forward(c, ids, true)
	if err != nil {
		t.Fatal(err)
	}
	if last.Shape[0] != 1 || last.Shape[1] != vocab {
		t.Fatalf("lastOnly logits %v, want [1 %d]", last.Shape, vocab)
	}
	if d := familytest.MaxDiff(last.F32(), all[29*vocab:]); d > 1e-6*familytest.MaxAbs(all) {
		t.Errorf("lastOnly row differs from the full row by %g", d)
	}
	for step, id := range []int32{7, 19, 3} {
		a, err := m.Forward(full, []int32{id}, true)
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.Forward(c, []int32{id}, true)
		if err != nil {
			t.Fatal(err)
		}
		if d := familytest.MaxDiff(a.F32(), b.F32()); d != 0 {
			t.Errorf("decode step %d after a lastOnly prefill differs from one after a full prefill by %g", step, d)
		}
	}
}

// TestMaxKVBelowPrompt prefills a prompt three times longer than
// max-kv-size in chunks, so the global layers trim between chunks, then
// decodes well past the window: every step must succeed with finite
// logits, the live keys stay under the cap, and the chunks before the first
// trim equal an untrimmed run.
func TestMaxKVBelowPrompt(t *testing.T) {
	m := load(t, tinyDir(t, synth.Options{Seed: 6, Bits: 4}), newBackend(t))
	vocab := m.Config().VocabSize
	const maxKV, chunk, prompt = 48, 16, 150
	ids := randomIDs(7, prompt, vocab)
	free, _ := familytest.Prefill(t, m, kvcache.DefaultOptions(), ids, chunk)
	opts := kvcache.DefaultOptions()
	opts.MaxKV = maxKV
	got, c := familytest.Prefill(t, m, opts, ids, chunk)
	st := c.Stats()
	if st.Trimmed == 0 || st.Live > maxKV || st.Offset != prompt {
		t.Fatalf("after prefill: trimmed %d, live %d (cap %d), offset %d", st.Trimmed, st.Live, maxKV, st.Offset)
	}
	untrimmed := 3 * chunk // live+chunk <= 48 holds for the first three chunks
	if d := familytest.MaxDiff(got[:untrimmed*vocab], free[:untrimmed*vocab]); d > chunkTolerance*familytest.MaxAbs(free) {
		t.Errorf("chunks before the first trim differ from the unbounded run by %g", d)
	}
	if !allFinite(got) {
		t.Fatal("non-finite logits during trimmed prefill")
	}
	next := familytest.Argmax(got[len(got)-vocab:])
	for step := 0; step < 40; step++ {
		lg, err := m.Forward(c, []int32{next}, true)
		if err != nil {
			t.Fatalf("decode step %d: %v", step, err)
		}
		if !allFinite(lg.F32()) {
			t.Fatalf("decode step %d: non-finite logits", step)
		}
		next = familytest.Argmax(lg.F32())
	}
	if st := c.Stats(); st.Live > maxKV || st.Offset != prompt+40 {
		t.Fatalf("after decode: live %d (cap %d), offset %d", st.Live, maxKV, st.Offset)
	}
}
