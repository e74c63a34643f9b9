//go:build linux

package vulkan

import (
	"runtime"
	"strings"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/tensor"
)

// TestAllocFailure forces Alloc past a memory cap and checks that the
// failure surfaces as an error (from the op that binds the tensor and from
// the next Sync), never as stale data or a panic, and that the backend
// works again afterwards.
func TestAllocFailure(t *testing.T) {
	b := openFresh(t)
	b.SetMemoryLimit(64 << 10)
	cases := []struct {
		name string
		use  func(dst *tensor.Tensor) error
	}{
		{"op writes it", func(dst *tensor.Tensor) error {
			src := put(b, false, make([]float32, dst.Len()), dst.Len())
			return b.Copy(dst, src)
		}},
		{"op reads it", func(x *tensor.Tensor) error {
			return b.Scale(tensor.New(tensor.F32, x.Len()), x, 2)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			big := b.Alloc(64 << 10) // 256 KiB > cap
			if big.Handle == nil {
				t.Fatal("failed Alloc returned a tensor without a Handle: ops would stage its host bytes")
			}
			err := c.use(big)
			if err == nil || !strings.Contains(err.Error(), "allocating F32 tensor [65536]") {
				t.Fatalf("op on the unallocated tensor: err %v, want one naming the allocation", err)
			}
			if err := b.Sync(); err == nil || !strings.Contains(err.Error(), "allocating F32 tensor [65536]") {
				t.Fatalf("Sync after the failed Alloc: err %v, want one naming the allocation", err)
			}
			// Within the cap everything works again.
			x := put(b, true, []float32{1, 2, 3, 4}, 4)
			if x.Handle == nil {
				t.Fatal("small Alloc under the cap has no Handle")
			}
			if err := b.Scale(x, x, 3); err != nil {
				t.Fatal(err)
			}
			if err := b.Sync(); err != nil {
				t.Fatalf("Sync after recovering: %v", err)
			}
			near(t, "scaled", x.F32(), []float64{3, 6, 9, 12}, 0, 0)
		})
	}
}

// TestAllocReleasesPool checks that Alloc frees idle pooled buffers before
// giving up, so a cap full of reusable buffers still yields GPU memory.
func TestAllocReleasesPool(t *testing.T) {
	b := openFresh(t)
	b.SetMemoryLimit(96 << 10)
	for range 4 {
		b.Alloc(4096) // 16 KiB each, dropped at once
	}
	for range 3 {
		runtime.GC()
		if err := b.Sync(); err != nil { // recycles into the pool
			t.Fatal(err)
		}
	}
	x := b.Alloc(20 << 10) // 80 KiB: fits only once the pool is released
	if x.Handle == nil {
		t.Fatal("Alloc with a pool to release returned a tensor without a Handle")
	}
	copy(x.F32(), []float32{5, 6})
	if err := b.Scale(x, x, 2); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	near(t, "scaled", x.F32()[:2], []float64{10, 12}, 0, 0)
}

// TestKVCacheAllocFailure gives the cache backend storage that cannot be
// allocated: Append (the recorded row copy) or Sync must fail, never leave
// attention reading rows that were not written.
func TestKVCacheAllocFailure(t *testing.T) {
	b := openFresh(t)
	b.SetMemoryLimit(16 << 10)
	opts := kvcache.DefaultOptions()
	opts.Alloc, opts.Copy = b.Alloc, b.Copy
	opts.Step = 512
	c, err := kvcache.New([]kvcache.LayerSpec{{KVHeads: 2, HeadDim: 32, SharedFrom: -1}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Begin(1); err != nil {
		t.Fatal(err)
	}
	k := put(b, false, make([]float32, 64), 1, 2, 32)
	v := put(b, false, make([]float32, 64), 1, 2, 32)
	_, aerr := c.Append(0, k, v)
	serr := b.Sync()
	if aerr == nil && serr == nil {
		t.Fatal("cache storage beyond the memory cap: Append and Sync both succeeded")
	}
	for _, err := range []error{aerr, serr} {
		if err != nil && !strings.Contains(err.Error(), "allocating F32 tensor") {
			t.Errorf("error %q does not name the failed allocation", err)
		}
	}
}
