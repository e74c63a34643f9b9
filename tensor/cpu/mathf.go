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
