package cpu

import "math"

// The AVX-512 decode kernels take x split per group into two int16 limbs,
// x ≈ sx·(hi + lo/32768) with sx = max|x_g|/32767, hi = round(x/sx) and
// lo = round((x/sx - hi)·32768) (|lo| <= 16384; an element is off by at
// most sx/65536, about 2^-31 of the group's largest), laid out per block
// of 128 elements, hi then lo (256 int16s a block), so that one 64-byte
// load of packed weights lines up with whole vectors of x without
// shuffles:
//
//   - 4 bits: 64 bytes hold 32 little-endian 16-bit words, word j holding
//     the codes of elements 4j, 4j+1, 4j+2, 4j+3 in its four nibbles. The
//     kernel masks or shifts the words to get one nibble per word, so x
//     is stored as four vectors of 32: position k·32+j holds element 4j+k.
//   - 8 bits: each 64-byte half h holds 32 words of elements 64h+2j (low
//     byte) and 64h+2j+1 (high byte): position (2h+k)·32+j holds element
//     64h+2j+k.
//
// A partial last block is padded with zeros. Per-group factors travel in
// sxs: for every 16 groups, 16 x scales then the 16 sums of x (the Σx that
// multiplies the bias), zero past the last group.

// xzPos is the position of element e of a row within its block's limb
// (hi at block·256 + xzPos(e)&127, lo 128 further).
func xzPos(e, bits int) int {
	base, k := e&^127, e&127
	if bits == 4 {
		return base + (k&3)*32 + k>>2
	}
	h, k2 := k>>6, k&63
	return base + (2*h+(k2&1))*32 + k2>>1
}

// xzIndex is the index in xq of element e's hi limb; its lo limb is at
// xzIndex + 128.
func xzIndex(e, bits int) int { return 2*(e&^127) + xzPos(e, bits)&127 }

// xzQuantize writes x (one row, a multiple of gs long) into xq (xzLen(len(x))
// int16s) in the block layout for bits, and the x scales and group sums
// into sxs (sxsLen(groups) floats).
func xzQuantize(xq []int16, sxs []float32, x []float32, gs, bits int) {
	xzQuantizeFrom(xq, sxs, x, gs, bits, 0)
}

// xzQuantizeFrom is xzQuantize for groups g0 and up; the groups before
// are left as they are. Halfway cases round to even, as the assembly
// does, so both write the same limbs.
func xzQuantizeFrom(xq []int16, sxs []float32, x []float32, gs, bits, g0 int) {
	groups := len(x) / gs
	clear(xq[2*(len(x)&^127):])
	for g := groups; g < (groups+15)&^15; g++ {
		sxs[g/16*32+g%16] = 0
		sxs[g/16*32+16+g%16] = 0
	}
	for g := g0; g < groups; g++ {
		blk := x[g*gs : (g+1)*gs]
		var m, sum float32
		for _, v := range blk {
			m = max(m, abs32(v))
			sum += v
		}
		var sx, inv float32
		if m > 0 {
			sx = m / 32767
			inv = 32767 / m
		}
		sxs[g/16*32+g%16] = sx
		sxs[g/16*32+16+g%16] = sum
		e0 := g * gs
		for i, v := range blk {
			t := float32(v * inv) // rounded here: no fused multiply-add with the lo limb below
			h := float32(math.RoundToEven(float64(t)))
			j := xzIndex(e0+i, bits)
			xq[j] = int16(h)
			xq[j+128] = int16(math.RoundToEven(float64((t - h) * 32768)))
		}
	}
}

// xzLen is the int16 length of x in the block layout for rows of in: two
// limbs of each 128-element block.
func xzLen(in int) int { return 2 * ((in + 127) &^ 127) }

// sxsLen is the float length of the per-group x factors for groups.
func sxsLen(groups int) int { return (groups + 15) / 16 * 32 }
