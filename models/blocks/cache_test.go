package blocks

import (
	"math"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// decodeCounter is a CPU backend that counts its DecodeF16 and
// DecodeInt8Rows calls.
type decodeCounter struct {
	*cpu.Backend
	calls int
}

func (h *decodeCounter) DecodeF16(dst []float32, src []uint16) {
	h.calls++
	h.Backend.DecodeF16(dst, src)
}

func (h *decodeCounter) DecodeInt8Rows(dst []float32, src []byte, rows, heads, dim int) {
	h.calls++
	h.Backend.DecodeInt8Rows(dst, src, rows, heads, dim)
}

// TestNewCacheDecodesViewsOnTheBackend checks that a Float16 or Quantized8
// cache made by NewCache on a backend with the decoders of package tensor
// decodes its views there, and that the values come back as stored.
func TestNewCacheDecodesViewsOnTheBackend(t *testing.T) {
	for _, opts := range []kvcache.Options{{Float16: true}, {Quantized8: true}} {
		be := &decodeCounter{Backend: cpu.New(1)}
		defer be.Close()
		c, err := NewCache(be, []kvcache.LayerSpec{{KVHeads: 1, HeadDim: 8, SharedFrom: -1}}, opts, "test")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Begin(2); err != nil {
			t.Fatal(err)
		}
		// Whole numbers up to 8 in magnitude: exact in half precision,
		// and in int8 with the absmax scale 8/127 to within a rounding.
		k := tensor.New(tensor.F32, 2, 1, 8)
		for i := range k.F32() {
			k.F32()[i] = float32(i%9) - 4
		}
		k.F32()[3] = 8
		v, err := c.Append(0, k, k)
		if err != nil {
			t.Fatal(err)
		}
		if be.calls == 0 {
			t.Fatalf("%d-bit cache: the view was not decoded by the backend", opts.Bits())
		}
		for i, want := range k.F32() {
			if got := v.K.F32()[i]; math.Abs(float64(got-want)) > 8.0/127/2+1e-6 {
				t.Fatalf("%d-bit cache, key value %d: got %v, want %v", opts.Bits(), i, got, want)
			}
		}
		if err := c.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}
