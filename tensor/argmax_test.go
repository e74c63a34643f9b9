package tensor

import (
	"math"
	"testing"
)

// TestArgmaxF32 checks the rules ArgmaxF32 states, which the GPU
// backends' Argmax must follow (metal/vulkan TestArgmaxRows).
func TestArgmaxF32(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	sub := math.Float32frombits(1)
	for _, c := range []struct {
		x    []float32
		want int
	}{
		{[]float32{1, 3, 3, 2}, 1},                       // ties: the first
		{[]float32{nan, -inf, -inf}, 0},                  // nothing above -Inf: 0
		{[]float32{nan, 2, nan, 3}, 3},                   // NaN never wins
		{[]float32{-inf, nan, -5}, 2},                    // -Inf does not count
		{[]float32{inf, 1, inf}, 0},                      // +Inf ties: the first
		{[]float32{float32(math.Copysign(0, -1)), 0}, 0}, // -0 equals +0
		{[]float32{0, sub}, 1},                           // a subnormal is above 0
		{nil, 0},
	} {
		if got := ArgmaxF32(c.x); got != c.want {
			t.Errorf("ArgmaxF32(%v) = %d, want %d", c.x, got, c.want)
		}
	}
}
