package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
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
			for _, n := range []int{0, 1, 7, 9, 1000, decodeChunk + 5, len(all)} {
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

// TestDecodeInt8Rows decodes random rows of scaled int8 values, every int8
// value among them, at head widths that leave the AVX2 loop partial tails
// and row counts that split over the threads, and compares each value
// with the one float32 product scale·value, bit for bit.
func TestDecodeInt8Rows(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	scales := []float32{1, 0.0173, 3.5e-39, 6.1e4, -0.25}
	for _, l := range availableLevels() {
		for _, threads := range []int{1, 3} {
			be := newBackendLevel(threads, l)
			for _, sh := range []struct{ rows, heads, dim int }{{1, 1, 1}, {3, 2, 7}, {5, 1, 9}, {300, 2, 64}, {70, 3, 256}} {
				t.Run(fmt.Sprintf("%s/threads=%d/%dx%dx%d", l, threads, sh.rows, sh.heads, sh.dim), func(t *testing.T) {
					rb := sh.heads*4 + sh.heads*sh.dim
					src := make([]byte, sh.rows*rb)
					for r := 0; r < sh.rows; r++ {
						row := src[r*rb : (r+1)*rb]
						for h := 0; h < sh.heads; h++ {
							binary.LittleEndian.PutUint32(row[h*4:], math.Float32bits(scales[(r+h)%len(scales)]))
						}
						for j := sh.heads * 4; j < rb; j++ {
							row[j] = byte(rng.Intn(256))
						}
					}
					n := sh.rows * sh.heads * sh.dim
					dst := make([]float32, n+1)
					dst[n] = 42
					be.DecodeInt8Rows(dst[:n], src, sh.rows, sh.heads, sh.dim)
					for r := 0; r < sh.rows; r++ {
						row := src[r*rb : (r+1)*rb]
						for h := 0; h < sh.heads; h++ {
							scale := math.Float32frombits(binary.LittleEndian.Uint32(row[h*4:]))
							for j := 0; j < sh.dim; j++ {
								v := int8(row[sh.heads*4+h*sh.dim+j])
								want := scale * float32(v)
								if got := dst[(r*sh.heads+h)*sh.dim+j]; math.Float32bits(got) != math.Float32bits(want) {
									t.Fatalf("row %d head %d value %d (%d x %g): got %g, want %g", r, h, j, v, scale, got, want)
								}
							}
						}
					}
					if dst[n] != 42 {
						t.Fatalf("wrote past the rows: %v", dst[n])
					}
				})
			}
			be.Close()
		}
	}
}
