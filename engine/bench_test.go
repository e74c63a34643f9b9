package engine

import (
	"context"
	"testing"
	"time"

	"mlxchat/kvcache"
)

// TestBenchDecodeKVBytes checks what Bench reports a decode step reads of
// the cache: the mean of the live key and value bytes at the decode
// phase's start and end, as a cache fed the same tokens holds them. The
// tiny model's one global layer that owns a cache grows by a row of K and
// V per decoded token (2 heads x 32 dims of float32 each); its sliding
// layers are full at their window of 8 after a 24-token prompt.
func TestBenchDecodeKVBytes(t *testing.T) {
	b := tinyBundle(t, tinyModelDir(t))
	const prompt, decode = 24, 4
	r, err := Bench(context.Background(), b, DefaultSettings(), prompt, decode)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Model.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	live := func(n int) int64 {
		if _, err := b.Model.Forward(c, make([]int32, n), true); err != nil {
			t.Fatal(err)
		}
		return c.Stats().LiveBytes
	}
	start := live(prompt)
	end := live(decode)
	if perToken := int64(2 * 2 * 32 * 4); end-start != decode*perToken {
		t.Fatalf("live bytes %d after the prompt, %d after %d more tokens: want %d more", start, end, decode, decode*perToken)
	}
	if want := (start + end) / 2; r.DecodeKVBytes != want {
		t.Fatalf("DecodeKVBytes %d, want %d (the mean of %d and %d)", r.DecodeKVBytes, want, start, end)
	}
}

// TestBenchWithHooks checks where BenchWith calls its hooks: BeforeDecode
// once before the first decode step, AfterStep once after each step, and
// neither inside DecodeTime. The hooks sleep, so a DecodeTime that counted
// them would not fit beside them in the call's wall time.
func TestBenchWithHooks(t *testing.T) {
	b := tinyBundle(t, tinyModelDir(t))
	const decode, nap = 3, 30 * time.Millisecond
	var before, after int
	var hooks time.Duration
	h := BenchHooks{
		BeforeDecode: func() {
			if after != 0 {
				t.Errorf("BeforeDecode after %d AfterStep calls, want before the first", after)
			}
			before++
		},
		AfterStep: func() {
			st := time.Now()
			time.Sleep(nap)
			hooks += time.Since(st)
			after++
		},
	}
	start := time.Now()
	r, err := BenchWith(context.Background(), b, DefaultSettings(), 8, decode, h)
	wall := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if before != 1 || after != decode || r.DecodeTokens != decode {
		t.Fatalf("BeforeDecode %d times, AfterStep %d, %d tokens decoded: want 1, %d, %d", before, after, r.DecodeTokens, decode, decode)
	}
	if r.DecodeTime+r.PrefillTime+hooks > wall {
		t.Fatalf("decode %v + prefill %v + hooks %v > the call's %v: DecodeTime counts the hooks", r.DecodeTime, r.PrefillTime, hooks, wall)
	}
}
