//go:build linux

package vulkan

import (
	"math"
	"strings"
	"testing"

	"mlxchat/kvcache"
)

// TestUnchangedUploadsReused checks the upload cache of small host
// tensors: one read unchanged over steps is served from its earlier
// upload, and one whose bytes change (between steps or within a step) is
// uploaded again, so results always follow the host bytes.
func TestUnchangedUploadsReused(t *testing.T) {
	b := openFresh(t)
	c := put(b, false, []float32{1, 2, 3, 4}, 1, 4) // host constant, broadcast row
	x := put(b, true, []float32{10, 20, 30, 40, 50, 60, 70, 80}, 2, 4)
	dst := b.Alloc(2, 4)
	steps := []struct {
		name   string
		before func()
		want   []float64
		reused bool
	}{
		{"first sight", nil, []float64{11, 22, 33, 44, 51, 62, 73, 84}, false},
		{"same bytes again", nil, []float64{11, 22, 33, 44, 51, 62, 73, 84}, false},
		{"cached", nil, []float64{11, 22, 33, 44, 51, 62, 73, 84}, true},
		{"cached again", nil, []float64{11, 22, 33, 44, 51, 62, 73, 84}, true},
		{"host changed", func() { c.F32()[2] = -3 }, []float64{11, 22, 27, 44, 51, 62, 67, 84}, false},
		{"changed bytes seen twice", nil, []float64{11, 22, 27, 44, 51, 62, 67, 84}, false},
		{"cached after change", nil, []float64{11, 22, 27, 44, 51, 62, 67, 84}, true},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		st0 := b.Stats()
		if err := b.Add(dst, x, c); err != nil {
			t.Fatal(err)
		}
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		st := b.Stats()
		reused := st.ReusedBytes - st0.ReusedBytes
		if (reused == 16) != s.reused || (reused != 0 && reused != 16) {
			t.Errorf("%s: %d bytes reused, want reuse %v", s.name, reused, s.reused)
		}
		if up := st.StagedBytes - st0.StagedBytes; s.reused && up != 0 {
			t.Errorf("%s: %d bytes uploaded for a cached tensor", s.name, up)
		}
		near(t, s.name, dst.F32(), s.want, 0, 0)
	}
	// Within one step: the second op must see the bytes changed after the
	// first was recorded, not the cached upload.
	if err := b.Add(dst, x, c); err != nil {
		t.Fatal(err)
	}
	d2 := b.Alloc(2, 4)
	c.F32()[0] = 100
	if err := b.Add(d2, x, c); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	near(t, "before the change", dst.F32(), []float64{11, 22, 27, 44, 51, 62, 67, 84}, 0, 0)
	near(t, "after the change", d2.F32(), []float64{110, 22, 27, 44, 150, 62, 67, 84}, 0, 0)
}

// TestTinyGemma3nDecodeUploads counts the host bytes uploaded per decode
// step of the tiny Gemma 3n, by tensor, and checks that only what changes
// every step is uploaded: the token id of the two embedding gathers (4
// bytes each) and the key spans of each attention (8 bytes per span: one
// for a global layer, one or two for a sliding layer's ring), 88 to 152
// bytes per step here, down from 6312 (the AltUp identity and ones, every
// layer's output scale vector and the RoPE frequencies were uploaded every
// step). The logits still match tensor/cpu.
func TestTinyGemma3nDecodeUploads(t *testing.T) {
	g, _ := open(t)
	mc, mg := tinyModelPair(t, g, 7)
	info := mg.Config()
	cc, err := mc.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	gc, err := mg.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int32{3, 14, 15, 92, 65, 35}
	next := []int32{0}
	const decode = 10
	// Every layer attends (KV-shared ones too) over at most two spans:
	// 8 bytes each, plus two token ids.
	most := int64(2*4 + 2*8*info.NumLayers)
	for s := range decode + 1 {
		ids := next
		if s == 0 {
			ids = prompt
		}
		want, err := mc.Forward(cc, ids, true)
		if err != nil {
			t.Fatal(err)
		}
		g.ProfileStaging(true)
		st0 := g.Stats()
		got, err := mg.Forward(gc, ids, true)
		if err != nil {
			t.Fatal(err)
		}
		st := g.Stats()
		prof := g.ProfileStaging(false)
		w := make([]float64, want.Len())
		scale := 0.0
		for i, v := range want.F32() {
			w[i] = float64(v)
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		near(t, "logits", got.F32(), w, 1e-2*scale, 0)
		best := 0
		for i, v := range want.F32() {
			if v > want.F32()[best] {
				best = i
			}
		}
		next = []int32{int32(best)}
		// The first two decode steps see each constant for the first
		// and second time; from then on only per-step data is uploaded.
		if s < 3 {
			continue
		}
		up := st.StagedBytes - st0.StagedBytes
		for k, n := range prof {
			if !strings.HasPrefix(k, "U32") {
				t.Errorf("decode step %d uploaded %d bytes of %s: only token ids and mask spans change per step", s, n, k)
			}
		}
		if up > most || up < int64(2*4+8*info.NumLayers) {
			t.Errorf("decode step %d uploaded %d host bytes (%v), want 2 token ids and one or two spans per attention, %d..%d", s, up, prof, 2*4+8*info.NumLayers, most)
		}
		if st.ReusedBytes == st0.ReusedBytes {
			t.Errorf("decode step %d reused no cached upload", s)
		}
		if s == decode {
			t.Logf("decode step: %d bytes uploaded %v, %d served from cached uploads", up, prof, st.ReusedBytes-st0.ReusedBytes)
		}
	}
}
