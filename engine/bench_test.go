package engine

import (
	"context"
	"testing"

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
