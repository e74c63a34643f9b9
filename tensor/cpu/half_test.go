package cpu

import (
	"fmt"
	"math"
	"testing"

	"mlxchat/tensor"
)

// TestDecodeF16 converts every half-float bit pattern, at lengths that
// leave the SIMD loops partial tails and that split over the threads, and
// compares each value with tensor.F16ToF32: bit for bit, except that a
// NaN only has to stay a NaN (F16C quiets signalling NaNs).
func TestDecodeF16(t *testing.T) {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	for _, l := range availableLevels() {
		for _, threads := range []int{1, 3} {
			be := newBackendLevel(threads, l)
			for _, n := range []int{0, 1, 7, 9, 1000, halfChunk + 5, len(all)} {
				t.Run(fmt.Sprintf("%s/threads=%d/n=%d", l, threads, n), func(t *testing.T) {
					// Start inside the table so short runs see more than
					// zeros and subnormals.
					off := (len(all) - n) / 2
					src := all[off : off+n]
					dst := make([]float32, n+1)
					dst[n] = 42
					be.DecodeF16(dst[:n], src)
					for i, h := range src {
						want := tensor.F16ToF32(h)
						got := dst[i]
						if math.IsNaN(float64(want)) {
							if !math.IsNaN(float64(got)) {
								t.Fatalf("%#04x: got %v, want NaN", h, got)
							}
							continue
						}
						if math.Float32bits(got) != math.Float32bits(want) {
							t.Fatalf("%#04x: got %v (%#08x), want %v (%#08x)", h, got, math.Float32bits(got), want, math.Float32bits(want))
						}
					}
					if dst[n] != 42 {
						t.Fatalf("wrote past len(dst): %v", dst[n])
					}
				})
			}
			be.Close()
		}
	}
}
