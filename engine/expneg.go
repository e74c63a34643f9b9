package engine

import "math"

// exp2Sixtyfourths holds 2^(i/64) for i in [0, 64): the table expNeg
// reduces its argument with.
var exp2Sixtyfourths = func() (t [64]float64) {
	for i := range t {
		t[i] = math.Exp2(float64(i) / 64)
	}
	return t
}()

// expNeg is e^t for t <= 0, within 1e-15 relative of math.Exp (0 below
// -745, NaN for NaN), about three times faster: the sampler's softmax
// takes one per vocabulary entry per token (262k for Gemma 3), where
// math.Exp cost ~3 ms a token. t = (k/64)·ln 2 + r with |r| <= ln2/128,
// e^r by a degree-5 polynomial (error below 2e-17), 2^(k/64) from a table
// and the exponent bits.
func expNeg(t float64) float64 {
	if !(t >= -745) {
		if t != t {
			return t
		}
		return 0
	}
	const (
		log2e64 = 64 * math.Log2E
		ln2hi   = 6.93147180369123816490e-01 / 64 // ln 2 in two parts, as
		ln2lo   = 1.90821492927058770002e-10 / 64 // in math.Exp
		round   = 0x1.8p52                        // adding and taking it away rounds to an integer
	)
	k := (t*log2e64 + round) - round
	r := (t - k*ln2hi) - k*ln2lo
	r2 := r * r
	p := (1 + r) + r2*((1.0/2+r*(1.0/6))+r2*(1.0/24+r*(1.0/120)))
	ki := int64(k)
	p *= exp2Sixtyfourths[ki&63]
	e := ki >> 6 // floor(k/64)
	if e < -1022 {
		// Subnormal result: scale in two steps.
		return p * math.Float64frombits(uint64(e+1022+1023)<<52) * 0x1p-1022
	}
	return p * math.Float64frombits(uint64(e+1023)<<52)
}
