package gemma3n

import (
	"strings"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models/synth"
	"mlxchat/tensor"
)

// plainBackend hides the CPU backend's StreamOps.
type plainBackend struct{ tensor.Backend }

func TestForwardErrorsLeaveCacheUsable(t *testing.T) {
	m := load(t, tinyDir(t, synth.Options{Seed: 12}), newBackend(t))
	c, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(c, []int32{2, 5, 9}, false); err != nil {
		t.Fatal(err)
	}
	other, err := kvcache.New([]kvcache.LayerSpec{{KVHeads: 2, HeadDim: 32, SharedFrom: -1}}, kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		cache *kvcache.Cache
		ids   []int32
		want  string
	}{
		{"id too large", c, []int32{4, 512}, "outside the vocabulary"},
		{"negative id", c, []int32{-1}, "outside the vocabulary"},
		{"empty chunk", c, nil, "empty chunk"},
		{"nil cache", nil, []int32{3}, "without a cache"},
		{"foreign cache", other, []int32{3}, "cache has 1 layers"},
	} {
		_, err := m.Forward(tc.cache, tc.ids, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if c.Offset() != 3 {
		t.Fatalf("offset %d after failed calls, want 3", c.Offset())
	}
	if _, err := m.Forward(c, []int32{7}, true); err != nil {
		t.Fatalf("forward after errors: %v", err)
	}
	// A chunk larger than max-kv-size allows is refused by the cache, and
	// the cache stays usable.
	if err := c.SetMaxKV(16); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(c, make([]int32, 20), false); err == nil {
		t.Fatal("a 20-token chunk under max-kv 16 succeeded")
	}
	if _, err := m.Forward(c, []int32{8}, true); err != nil {
		t.Fatalf("forward after a refused chunk: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := tinyDir(t, synth.Options{Seed: 13})
	be := newBackend(t)
	if _, err := Load(dir, plainBackend{be}); err == nil || !strings.Contains(err.Error(), "StreamOps") {
		t.Errorf("backend without StreamOps: %v", err)
	}
	if _, err := Load(t.TempDir(), be); err == nil {
		t.Error("empty directory loaded")
	}
}
