// These checks run the cache's views through package tensor/cpu's
// Attention, the kernel the models use, besides the package's own float64
// reference.

package kvcache

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
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

// BenchmarkDecodeStepFormats is BenchmarkDecodeStepCPU on every thread
// for each storage format, with a Float16 cache's views decoded by the
// lookup table and by the backend's DecodeF16 (Options.DecodeF16), and a
// Quantized8 cache's by the package's Go loop and by the backend's
// DecodeInt8Rows (Options.DecodeInt8Rows).
func BenchmarkDecodeStepFormats(b *testing.B) {
	be := cpu.New(runtime.NumCPU())
	defer be.Close()
	attend := func(out, q *tensor.Tensor, v View) error {
		return be.Attention(out, q, v.K, v.V, v.Mask, 0.088)
	}
	for _, live := range []int{2 << 10, 8 << 10} {
		for _, f := range []struct {
			name string
			opts Options
		}{
			{"f32", Options{}},
			{"f16-table", Options{Float16: true}},
			{"f16-backend", Options{Float16: true, DecodeF16: be.DecodeF16}},
			{"q8-go", Options{Quantized8: true}},
			{"q8-backend", Options{Quantized8: true, DecodeInt8Rows: be.DecodeInt8Rows}},
		} {
			b.Run(fmt.Sprintf("live=%dk/%s", live>>10, f.name), func(b *testing.B) {
				benchDecodeStep(b, live, f.opts, attend)
			})
		}
	}
}

// TestViewsDecodedByBackend feeds the same keys and values to two caches of
// each narrow format, one decoding its views in the package (lookup table,
// Go loop) and one with the CPU backend's decoders (Options.DecodeF16,
// Options.DecodeInt8Rows), through prompt chunks, decode steps, trims and a
// shared layer: every view must match bit for bit, and the backend's
// decoder must have done the decoding.
func TestViewsDecodedByBackend(t *testing.T) {
	be := cpu.New(2)
	defer be.Close()
	calls := 0
	f16 := func(dst []float32, src []uint16) {
		calls++
		be.DecodeF16(dst, src)
	}
	i8 := func(dst []float32, src []byte, rows, heads, dim int) {
		calls++
		be.DecodeInt8Rows(dst, src, rows, heads, dim)
	}
	for _, f := range []struct {
		name          string
		plain, byBack Options
	}{
		{"f16", Options{Float16: true}, Options{Float16: true, DecodeF16: f16}},
		{"q8", Options{Quantized8: true}, Options{Quantized8: true, DecodeInt8Rows: i8}},
	} {
		t.Run(f.name, func(t *testing.T) {
			calls = 0
			specs := []LayerSpec{global(2, 64), sliding(2, 64, 48), sharedOf(sliding(2, 64, 48), 1)}
			f.plain.MaxKV, f.byBack.MaxKV = 300, 300
			plain, err := New(specs, f.plain)
			if err != nil {
				t.Fatal(err)
			}
			byBack, err := New(specs, f.byBack)
			if err != nil {
				t.Fatal(err)
			}
			caches := []*Cache{plain, byBack}
			rng := rand.New(rand.NewSource(5))
			chunks := []int{100, 257, 1, 1, 37}
			for i := 0; i < 40; i++ {
				chunks = append(chunks, 1)
			}
			for step, n := range chunks {
				for _, c := range caches {
					if _, err := c.Begin(n); err != nil {
						t.Fatal(err)
					}
				}
				for l, sp := range specs {
					var k, v *tensor.Tensor
					if sp.SharedFrom < 0 {
						k = tensor.New(tensor.F32, n, sp.KVHeads, sp.HeadDim)
						v = tensor.New(tensor.F32, n, sp.KVHeads, sp.HeadDim)
						for j := range k.F32() {
							k.F32()[j] = float32(rng.NormFloat64() * 4)
							v.F32()[j] = float32(rng.NormFloat64() / 8)
						}
					}
					var views [2]View
					for ci, c := range caches {
						if sp.SharedFrom >= 0 {
							views[ci], err = c.Shared(l)
						} else {
							views[ci], err = c.Append(l, k, v)
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					if !bytes.Equal(views[0].K.Data, views[1].K.Data) || !bytes.Equal(views[0].V.Data, views[1].V.Data) {
						t.Fatalf("step %d (chunk of %d), layer %d: the backend-decoded view differs from the package's", step, n, l)
					}
				}
				for _, c := range caches {
					if err := c.Commit(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if calls == 0 {
				t.Fatal("the backend's decoder was never called")
			}
		})
	}
}
