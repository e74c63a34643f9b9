package models

import (
	"io"
	"math"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models/synth"
	"mlxchat/tensor/cpu"
)

// TestLoadFamilies loads a tiny random checkpoint of every family through
// Load (dense and 4-bit) and checks that one-shot and chunked prefill
// agree and that decode past the sliding window stays finite.
func TestLoadFamilies(t *testing.T) {
	be := cpu.New(2)
	defer be.Close()
	for _, fam := range synth.Families {
		for _, bits := range []int{0, 4} {
			d, err := synth.TinyFamily(fam)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if _, err := synth.WriteFamily(dir, d, synth.Options{Seed: 3, Bits: bits}); err != nil {
				t.Fatal(err)
			}
			m, err := Load(dir, be)
			if err != nil {
				t.Fatalf("%s %d-bit: %v", fam, bits, err)
			}
			info := m.Config()
			if info.VocabSize != d.Vocab || info.NumLayers != d.Layers || len(info.StopIDs) != 2 || m.WeightBytes() <= 0 {
				t.Errorf("%s: info %+v", fam, info)
			}
			ids := make([]int32, 30)
			for i := range ids {
				ids[i] = int32((i*37 + 11) % d.Vocab)
			}
			run := func(chunk int) []float32 {
				c, err := m.NewCache(kvcache.DefaultOptions())
				if err != nil {
					t.Fatal(err)
				}
				var out []float32
				for lo := 0; lo < len(ids); lo += chunk {
					lg, err := m.Forward(c, ids[lo:min(lo+chunk, len(ids))], false)
					if err != nil {
						t.Fatalf("%s: %v", fam, err)
					}
					out = append(out, lg.F32()...)
				}
				return out
			}
			a, b := run(len(ids)), run(7)
			scale, diff := 0.0, 0.0
			for i := range a {
				scale = math.Max(scale, math.Abs(float64(a[i])))
				diff = math.Max(diff, math.Abs(float64(a[i]-b[i])))
			}
			// Both runs compute in float32 and differ only in the order of
			// sums (a chunk's leftover rows take the CPU's decode kernels,
			// float32-precise since they round x per group to 24 bits or
			// finer, tensor/cpu/doc.go), dense and 4-bit alike.
			const tol = 1e-4
			if !(diff <= tol*scale) || scale == 0 {
				t.Errorf("%s %d-bit: one-shot vs chunked differ by %g (max |logit| %g)", fam, bits, diff, scale)
			}
			t.Logf("%s %d-bit: max |logit| %.3f, chunked diff %.2g", fam, bits, scale, diff)
			m.(io.Closer).Close()
		}
	}
}
