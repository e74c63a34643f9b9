package blocks

import (
	"testing"

	"mlxchat/kvcache"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// halfCounter is a CPU backend that counts its DecodeF16 calls.
type halfCounter struct {
	*cpu.Backend
	calls int
}

func (h *halfCounter) DecodeF16(dst []float32, src []uint16) {
	h.calls++
	h.Backend.DecodeF16(dst, src)
}

// TestNewCacheDecodesHalfViewsOnTheBackend checks that a Float16 cache made
// by NewCache on a tensor.HalfDecoder backend decodes its views there, and
// that the values come back as stored.
func TestNewCacheDecodesHalfViewsOnTheBackend(t *testing.T) {
	be := &halfCounter{Backend: cpu.New(1)}
	defer be.Close()
	c, err := NewCache(be, []kvcache.LayerSpec{{KVHeads: 1, HeadDim: 8, SharedFrom: -1}}, kvcache.Options{Float16: true}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Begin(2); err != nil {
		t.Fatal(err)
	}
	k := tensor.New(tensor.F32, 2, 1, 8)
	for i := range k.F32() {
		k.F32()[i] = float32(i) - 7.5 // exact in half precision
	}
	v, err := c.Append(0, k, k)
	if err != nil {
		t.Fatal(err)
	}
	if be.calls == 0 {
		t.Fatal("the view was not decoded by the backend's DecodeF16")
	}
	for i, want := range k.F32() {
		if got := v.K.F32()[i]; got != want {
			t.Fatalf("key value %d: got %v, want %v", i, got, want)
		}
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
}
