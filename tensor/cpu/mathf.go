package cpu

import "math"

// expf is a float32 e^x accurate to about 1 ulp: range reduction to
// r = x - k·ln2 with |r| <= ln2/2, a degree-6 Taylor polynomial, and the
// 2^k scale built in the exponent bits. Outside [-87, 88] (where 2^k would
// leave the normal range) it defers to math.Exp.
func expf(x float32) float32 {
	if !(x >= -87 && x <= 88) { // also catches NaN
		return float32(math.Exp(float64(x)))
	}
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375 // ln2 split so k·ln2hi is exact
		ln2lo = -2.12194440e-4
		round = 12582912 // 1.5·2^23: adding it rounds to an integer
	)
	t := x*log2e + round
	k := t - round
	r := x - k*ln2hi - k*ln2lo
	p := 1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720))))))
	return p * math.Float32frombits(uint32(int32(k)+127)<<23)
}

// tanhf is a float32 tanh: an odd polynomial near zero, 1-2/(e^{2|x|}+1)
// elsewhere, ±1 beyond |x| = 9 where float32 tanh rounds to ±1.
func tanhf(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	var y float32
	switch {
	case a < 0.0625:
		a2 := a * a
		y = a * (1 + a2*(-1.0/3+a2*(2.0/15+a2*(-17.0/315))))
	case a < 9:
		y = 1 - 2/(expf(2*a)+1)
	case a >= 9:
		y = 1
	default: // NaN
		return x
	}
	if x < 0 {
		return -y
	}
	return y
}

// maxF32 returns the largest value of s (-Inf when s is empty), or NaN
// when s holds one, as a fold of the built-in max would (up to the sign
// of a zero maximum). The built-in
// float max orders signed zeros and checks for NaN at every step, one
// long dependency chain; four independent comparisons run several times
// faster, which matters where attention takes the maximum of every block
// of scores.
func maxF32(s []float32) float32 {
	negInf := float32(math.Inf(-1))
	m0, m1, m2, m3 := negInf, negInf, negInf, negInf
	nan := false
	i := 0
	for ; i+4 <= len(s); i += 4 {
		x0, x1, x2, x3 := s[i], s[i+1], s[i+2], s[i+3]
		if x0 > m0 {
			m0 = x0
		}
		if x1 > m1 {
			m1 = x1
		}
		if x2 > m2 {
			m2 = x2
		}
		if x3 > m3 {
			m3 = x3
		}
		nan = nan || x0 != x0 || x1 != x1 || x2 != x2 || x3 != x3
	}
	for ; i < len(s); i++ {
		if x := s[i]; x > m0 {
			m0 = x
		} else if x != x {
			nan = true
		}
	}
	if nan {
		return float32(math.NaN())
	}
	return max(m0, m1, m2, m3)
}
