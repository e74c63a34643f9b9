package cpu

import (
	"math"
	"unsafe"
)

// The AVX-512 decode kernels take x quantized per group and laid out per
// block of 128 elements so that one 64-byte load of packed weights lines
// up with whole vectors of x without shuffles. A partial last block is
// padded with zeros. Per-group factors travel in sxs: for every 16 groups,
// 16 x scales sx then the 16 sums of x (the Σx that multiplies the bias),
// zero past the last group.
//
// 4 bits: x ≈ sx·D with sx = max|x_g|/(2^23-4) and D = round(x/sx), a
// 24-bit integer (the margin keeps float rounding of x/sx below 2^23) (an element is off by at most sx/2, 2^-24 of the group's
// largest), split into bytes D = 2^16·h + 2^8·m + l with h signed and m, l
// unsigned, so that VPDPBUSD multiplies h with the codes as unsigned bytes
// and m and l with the codes as signed ones. A block holds h, then m, then
// l (128 bytes each, 384 a block). Byte b of 64 packed bytes holds element
// 2b in its low nibble and 2b+1 in its high one, so a limb holds the
// block's 64 even elements, then its 64 odd ones: each int32 lane of a dot
// sums elements 8j..8j+7, one group's.
//
// 8 bits: two int16 limbs, x ≈ sx·(hi + lo/32768) with sx = max|x_g|/32767,
// hi = round(x/sx) and lo = round((x/sx - hi)·32768) (|lo| <= 16384; off
// by at most sx/65536), hi then lo (256 int16s, 512 bytes a block). Each
// 64-byte half h of the weights holds 32 words of elements 64h+2j (low
// byte) and 64h+2j+1 (high byte): position (2h+k)·32+j holds element
// 64h+2j+k. (Byte limbs would not do here: VPDPBUSD takes the codes as
// unsigned bytes only, and a lane's four products of 255·2^23 overflow
// int32.)

// xzFull4 and xzFull8 are |x/sx| for the largest |x| of a group in the
// two layouts.
const (
	xzFull4 = 1<<23 - 4
	xzFull8 = 32767
)

// xzBlockBytes is the size of one 128-element block of x for bits.
func xzBlockBytes(bits int) int {
	if bits == 4 {
		return 384
	}
	return 512
}

// xzLen is the byte length of x in the block layout for rows of in.
func xzLen(in, bits int) int { return (in + 127) / 128 * xzBlockBytes(bits) }

// sxsLen is the float length of the per-group x factors for groups.
func sxsLen(groups int) int { return (groups + 15) / 16 * 32 }

// xzPos is the position of element e of a row within its block's limb
// (counted in limb elements: bytes for 4 bits, int16s for 8).
func xzPos(e, bits int) int {
	k := e & 127
	if bits == 4 {
		return (k&1)*64 + k>>1
	}
	h, k2 := k>>6, k&63
	return (2*h+(k2&1))*32 + k2>>1
}

// xzIndex is the index of element e's first limb: in xq itself for 4 bits
// (m at +128, l at +256), in xq viewed as int16s for 8 bits (lo at +128).
func xzIndex(e, bits int) int {
	if bits == 4 {
		return 3*(e&^127) + xzPos(e, 4)
	}
	return 2*(e&^127) + xzPos(e, 8)
}

// xzWords views xq (8-bit layout) as its int16 limbs.
func xzWords(xq []byte) []int16 {
	return unsafe.Slice((*int16)(unsafe.Pointer(unsafe.SliceData(xq))), len(xq)/2)
}

// xzBytes splits D (-2^23 <= D < 2^23) into h = D>>16 (signed) and the bytes m
// and l below it.
func xzBytes(d int32) (h int8, m, l uint8) { return int8(d >> 16), uint8(d >> 8), uint8(d) }

// xzQuantize writes x (one row, a multiple of gs long) into xq
// (xzLen(len(x), bits) bytes) in the block layout for bits, and the x
// scales and group sums into sxs (sxsLen(groups) floats).
func xzQuantize(xq []byte, sxs []float32, x []float32, gs, bits int) {
	xzQuantizeFrom(xq, sxs, x, gs, bits, 0)
}

// xzQuantizeFrom is xzQuantize for groups g0 and up; the groups before
// are left as they are. Integers round halfway cases to even, as the
// assembly's conversions do, so both write the same limbs.
func xzQuantizeFrom(xq []byte, sxs []float32, x []float32, gs, bits, g0 int) {
	groups := len(x) / gs
	clear(xq[len(x)/128*xzBlockBytes(bits):])
	for g := groups; g < (groups+15)&^15; g++ {
		sxs[g/16*32+g%16] = 0
		sxs[g/16*32+16+g%16] = 0
	}
	full := float32(xzFull8)
	if bits == 4 {
		full = xzFull4
	}
	words := xzWords(xq)
	for g := g0; g < groups; g++ {
		blk := x[g*gs : (g+1)*gs]
		var m, sum float32
		for _, v := range blk {
			m = max(m, abs32(v))
			sum += v
		}
		// inv is +Inf for an all-zero group: clamped so its zeros stay
		// zero.
		var sx, inv float32
		if m > 0 {
			sx = m / full
			inv = min(full/m, math.MaxFloat32)
		}
		sxs[g/16*32+g%16] = sx
		sxs[g/16*32+16+g%16] = sum
		e0 := g * gs
		for i, v := range blk {
			t := float32(v * inv) // rounded here: no fused multiply-add below
			j := xzIndex(e0+i, bits)
			if bits == 4 {
				h, mm, l := xzBytes(int32(math.RoundToEven(float64(t))))
				xq[j], xq[j+128], xq[j+256] = byte(h), mm, l
				continue
			}
			hi := float32(math.RoundToEven(float64(t)))
			words[j] = int16(hi)
			words[j+128] = int16(math.RoundToEven(float64((t - hi) * 32768)))
		}
	}
}
