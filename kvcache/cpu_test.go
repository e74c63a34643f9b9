// These checks run the cache's views through package tensor/cpu's
// Attention, the kernel the models use, besides the package's own float64
// reference.

package kvcache

import (
	"math/rand"
	"testing"

	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// TestCPUBackendOnCacheViews runs the seed scenario and random schedules
// through the CPU backend's Attention (the kernel models will use) and
// compares it with the brute-force reference, so the span-based masks are
// checked end to end with a real kernel.
func TestCPUBackendOnCacheViews(t *testing.T) {
	be := cpu.New(2)
	defer be.Close()
	t.Run("seed scenario", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short: TestSeedScenario covers it with the float64 reference")
		}
		specs := []LayerSpec{global(1, 8), sliding(1, 8, 512), sharedOf(sliding(1, 8, 512), 1)}
		h := newHarness(t, specs, []int{2, 2, 2}, Options{MaxKV: 1024}, 11)
		h.backend, h.backendTol = be, 2e-5
		for done := 0; done < 2631; done += 512 {
			h.chunk(min(512, 2631-done), -1)
		}
		for i := 0; i < 64; i++ {
			h.chunk(1, -1)
		}
	})
	seeds := int64(20)
	if testing.Short() {
		seeds = 4
	}
	for seed := int64(1); seed <= seeds; seed++ {
		h := runScheduleWith(t, rand.New(rand.NewSource(seed)), 30, false, seed, nil, func(h *harness) { h.backend, h.backendTol = be, 2e-5 })
		if h.checks == 0 {
			t.Fatalf("seed %d checked no view", seed)
		}
	}
}

// BenchmarkDecodeStepCPU is BenchmarkDecodeStep with the CPU backend's
// attention kernel on one thread.
func BenchmarkDecodeStepCPU(b *testing.B) {
	be := cpu.New(1)
	defer be.Close()
	benchDecode(b, func(out, q *tensor.Tensor, v View) error {
		return be.Attention(out, q, v.K, v.V, v.Mask, 0.088)
	})
}
