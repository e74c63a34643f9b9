package gemma3n

import (
	"math"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// newBackend returns a 2-thread CPU backend closed at the end of the test.
func newBackend(t testing.TB) *cpu.Backend {
	be := cpu.New(2)
	t.Cleanup(be.Close)
	return be
}

// load opens a model directory, failing the test on error.
func load(t testing.TB, dir string, be tensor.Backend) *Model {
	t.Helper()
	m, err := Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// prefill runs ids through a fresh cache in chunks of the given size and
// returns the concatenated logits [len(ids)*vocab] and the cache.
func prefill(t testing.TB, m *Model, opts kvcache.Options, ids []int32, chunk int) ([]float32, *kvcache.Cache) {
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

// maxAbs is the largest |x|.
func maxAbs(x []float32) float64 {
	m := 0.0
	for _, v := range x {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

// maxDiff is the largest |a-b| (+Inf when a value is not finite or the
// lengths differ).
func maxDiff(a, b []float32) float64 {
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

func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

func allFinite(x []float32) bool {
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}
