#include "textflag.h"

// AVX2/FMA kernels for the CPU backend. Quantized kernels work on packed
// MLX affine weights and accumulate Σ_g s_g·(Σ q·x) + Σ_g b_g·(Σ x) with
// float32 scales and biases converted beforehand (rows padded to gpad, a
// multiple of 8, with zeros). For 4 bits, x is pre-permuted per block of 16
// elements as [8 even][8 odd] so low and high nibbles of 8 bytes line up
// with two vectors of x. A "step" consumes 16 elements of a row and 64
// bytes of x; a group has steps = groupSize/16 of them (2, 4 or 8).

DATA wmask<>+0(SB)/2, $0x000f
GLOBL wmask<>(SB), RODATA|NOPTR, $2
DATA nibd2<>+0(SB)/4, $0x0000000f
GLOBL nibd2<>(SB), RODATA|NOPTR, $4

#define HSUM(y, x, xt) VEXTRACTF128 $1, y, xt; VADDPS xt, x, x; VHADDPS x, x, x; VHADDPS x, x, x

// 4-bit decode of 8 bytes at wo(AX): low nibbles -> wa, high nibbles ->
// wb (Y15 holds the dword mask 15). Masking costs one instruction per 8
// bytes; multiplying whole bytes by the even x and subtracting 16·even
// from the odd x instead cancelled a 16 times larger term and lost four
// bits of every product.
#define DEC4(wo, wa, wb) VPMOVZXBD wo(AX), wa; VPSRLD $4, wa, wb; VPAND Y15, wa, wa; VCVTDQ2PS wa, wa; VCVTDQ2PS wb, wb

// 8-bit decode of 16 bytes at wo(AX): bytes 0-7 -> wa, bytes 8-15 -> wb.
#define DEC8(wo, wa, wb) VPMOVZXBD wo(AX), wa; VPMOVZXBD wo+8(AX), wb; VCVTDQ2PS wa, wa; VCVTDQ2PS wb, wb

// Four x rows at (BX), (BX)(R14*1), (DX), (DX)(R14*1); Y0..Y7 accumulate.
#define FMA4(wa, wb) \
	VFMADD231PS (BX), wa, Y0; \
	VFMADD231PS 32(BX), wb, Y1; \
	VFMADD231PS (BX)(R14*1), wa, Y2; \
	VFMADD231PS 32(BX)(R14*1), wb, Y3; \
	VFMADD231PS (DX), wa, Y4; \
	VFMADD231PS 32(DX), wb, Y5; \
	VFMADD231PS (DX)(R14*1), wa, Y6; \
	VFMADD231PS 32(DX)(R14*1), wb, Y7

// Two-level integer single-row kernels (decode). x is split per row into
// int16 limbs, x ≈ sx·(hi + lo/32768) with sx a power of two chosen so
// that |x/sx| < 2^14 (xsplit4AVX / xsplit8AVX): hi = round(x/sx) and lo =
// round((x/sx - hi)·32768), |lo| <= 16384, so an element is off by at
// most sx/65536 = max|x|/2^29 or less, below float32 rounding of the
// products. Codes are widened to int16 and VPMADDWD forms exact integer
// dots of both limbs, converted to float once per group and multiplied by
// the group's scale: Σ_g s_g·(Σ q·hi + 2^-15·Σ q·lo), times sx, plus
// Σ_g b_g·(Σ x). Per 32 elements x holds 128 bytes: hi of the elements
// that line up with the low nibbles (4 bits: the 16 even ones) or the
// first 16 bytes (8 bits), hi of the others, then lo of both likewise.
// Sums cannot overflow: at most 64 products of 255·16384 per int32 lane
// and group. Rows go in pairs that share each load of x, row k with row
// k+rows/2 (pw, ps and pd bytes further in the weights, the scale and
// bias rows and dst), then the odd row rows-1 alone. Adjacent rows would
// interleave two streams within one 4 KiB page whenever a row is 2 KiB
// or less, which the hardware prefetchers follow poorly (8-bit 2048-wide
// rows ran at 0.7 of the one-row kernel's rate from memory); rows half a
// tile apart are two plain sequential streams.
// Registers: DI weight row of row 0, SI/DX scales of rows 0/1, R8 biases
// of row 0, R9 xs, R12 dst, R10 groups, R13 gpad, R14 wstride, AX and R11
// weight cursors of rows 0 and 1 (R11 the biases of row 1 after the
// groups), R9 the prefetch distance pf in bytes (xs after the groups),
// BX x cursor, CX group index; Y0-Y3 integer dots (hi,
// lo of row 0, hi, lo of row 1), Y4-Y7 float totals likewise, Y8-Y11
// widened codes, Y12-Y13 scratch, Y14 2^-15, Y15 nibble mask.

DATA lo15<>+0(SB)/4, $0x38000000
GLOBL lo15<>(SB), RODATA|NOPTR, $4

// Widen 32 codes of row 0 (at wo(AX)) or row 1 (at wo(R11)) to two
// vectors of 16 words: 4 bits low nibbles / high nibbles, 8 bits bytes
// 0-15 / 16-31.
#define H4R0(wo) VPMOVZXBW wo(AX), Y8; VPSRLW $4, Y8, Y9; VPAND Y15, Y8, Y8
#define H4R1(wo) VPMOVZXBW wo(R11), Y10; VPSRLW $4, Y10, Y11; VPAND Y15, Y10, Y10
#define H8R0(wo) VPMOVZXBW wo(AX), Y8; VPMOVZXBW wo+16(AX), Y9
#define H8R1(wo) VPMOVZXBW wo(R11), Y10; VPMOVZXBW wo+16(R11), Y11

// Dots of two widened vectors a, b with the 32 elements of x at xo(BX):
// HF starts a group's integer sums h (hi) and l (lo), HN adds to them.
#define HF(xo, a, b, h, l) \
	VPMADDWD xo(BX), a, h; VPMADDWD xo+32(BX), b, Y12; VPADDD Y12, h, h; \
	VPMADDWD xo+64(BX), a, l; VPMADDWD xo+96(BX), b, Y13; VPADDD Y13, l, l
#define HN(xo, a, b, h, l) \
	VPMADDWD xo(BX), a, Y12; VPADDD Y12, h, h; VPMADDWD xo+32(BX), b, Y13; VPADDD Y13, h, h; \
	VPMADDWD xo+64(BX), a, Y12; VPADDD Y12, l, l; VPMADDWD xo+96(BX), b, Y13; VPADDD Y13, l, l

// One 32-element step for both rows of a pair or for row 0 alone.
#define P4F(wo, xo) H4R0(wo); H4R1(wo); HF(xo, Y8, Y9, Y0, Y1); HF(xo, Y10, Y11, Y2, Y3)
#define P4N(wo, xo) H4R0(wo); H4R1(wo); HN(xo, Y8, Y9, Y0, Y1); HN(xo, Y10, Y11, Y2, Y3)
#define P8F(wo, xo) H8R0(wo); H8R1(wo); HF(xo, Y8, Y9, Y0, Y1); HF(xo, Y10, Y11, Y2, Y3)
#define P8N(wo, xo) H8R0(wo); H8R1(wo); HN(xo, Y8, Y9, Y0, Y1); HN(xo, Y10, Y11, Y2, Y3)
#define S4F(wo, xo) H4R0(wo); HF(xo, Y8, Y9, Y0, Y1)
#define S4N(wo, xo) H4R0(wo); HN(xo, Y8, Y9, Y0, Y1)
#define S8F(wo, xo) H8R0(wo); HF(xo, Y8, Y9, Y0, Y1)
#define S8N(wo, xo) H8R0(wo); HN(xo, Y8, Y9, Y0, Y1)

// End of a group: float totals += s_g · dots, for a pair or one row.
#define HSCALE2 \
	VCVTDQ2PS Y0, Y0; VCVTDQ2PS Y1, Y1; VBROADCASTSS (SI)(CX*4), Y12; \
	VFMADD231PS Y12, Y0, Y4; VFMADD231PS Y12, Y1, Y5; \
	VCVTDQ2PS Y2, Y2; VCVTDQ2PS Y3, Y3; VBROADCASTSS (DX)(CX*4), Y13; \
	VFMADD231PS Y13, Y2, Y6; VFMADD231PS Y13, Y3, Y7
#define HSCALE1 \
	VCVTDQ2PS Y0, Y0; VCVTDQ2PS Y1, Y1; VBROADCASTSS (SI)(CX*4), Y12; \
	VFMADD231PS Y12, Y0, Y4; VFMADD231PS Y12, Y1, Y5

#define HENTRY \
	MOVQ w+0(FP), DI; \
	MOVQ s+8(FP), SI; \
	MOVQ b+16(FP), R8; \
	MOVQ dst+40(FP), R12; \
	MOVQ groups+56(FP), R10; \
	MOVQ gpad+64(FP), R13; \
	MOVQ wstride+72(FP), R14; \
	VPBROADCASTW wmask<>(SB), Y15; \
	VBROADCASTSS lo15<>(SB), Y14

// Start of a pass: cursors to the first group, totals zero.
#define HSTART2 \
	MOVQ DI, AX; \
	MOVQ xq+24(FP), BX; \
	MOVQ ps+104(FP), DX; \
	ADDQ SI, DX; \
	MOVQ pw+96(FP), R11; \
	ADDQ AX, R11; \
	MOVQ pf+88(FP), R9; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	XORQ CX, CX
#define HSTART1 \
	MOVQ DI, AX; \
	MOVQ xq+24(FP), BX; \
	MOVQ pf+88(FP), R9; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	XORQ CX, CX

// Group loop step: advance the cursors by wadv weight and xadv x bytes.
#define HNEXT(wadv, xadv) \
	ADDQ $wadv, AX; \
	ADDQ $wadv, R11; \
	ADDQ $xadv, BX; \
	INCQ CX; \
	CMPQ CX, R10

// End of a pass: total = sx·(hi + 2^-15·lo) + Σ_g b_g·xs_g (over gpad,
// the padding groups have zero biases and sums), stored to dst.
#define HEND2 \
	VFMADD231PS Y14, Y5, Y4; \
	VFMADD231PS Y14, Y7, Y6; \
	VBROADCASTSS sx+80(FP), Y12; \
	VMULPS Y12, Y4, Y4; \
	VMULPS Y12, Y6, Y6; \
	MOVQ ps+104(FP), R11; \
	ADDQ R8, R11; \
	MOVQ xs+32(FP), R9; \
	XORQ CX, CX
#define HBIAS2 \
	VMOVUPS (R9)(CX*4), Y13; \
	VFMADD231PS (R8)(CX*4), Y13, Y4; \
	VFMADD231PS (R11)(CX*4), Y13, Y6; \
	ADDQ $8, CX; \
	CMPQ CX, R13
#define HSTORE2 \
	VHADDPS Y6, Y4, Y4; \
	VEXTRACTF128 $1, Y4, X5; \
	VADDPS X5, X4, X4; \
	VHADDPS X4, X4, X4; \
	MOVQ pd+112(FP), R9; \
	VMOVSS X4, (R12); \
	VEXTRACTPS $1, X4, (R12)(R9*1); \
	ADDQ $4, R12; \
	ADDQ R14, DI; \
	LEAQ (SI)(R13*4), SI; \
	LEAQ (R8)(R13*4), R8; \
	SUBQ $2, rows+48(FP)

// After the pairs: on to the odd row rows-1 (pw, ps, pd past row rows/2).
#define HSKIP \
	MOVQ pw+96(FP), R9; \
	ADDQ R9, DI; \
	MOVQ ps+104(FP), R9; \
	ADDQ R9, SI; \
	ADDQ R9, R8; \
	MOVQ pd+112(FP), R9; \
	ADDQ R9, R12
#define HEND1 \
	VFMADD231PS Y14, Y5, Y4; \
	VBROADCASTSS sx+80(FP), Y12; \
	VMULPS Y12, Y4, Y4; \
	MOVQ xs+32(FP), R9; \
	XORQ CX, CX
#define HBIAS1 \
	VMOVUPS (R9)(CX*4), Y13; \
	VFMADD231PS (R8)(CX*4), Y13, Y4; \
	ADDQ $8, CX; \
	CMPQ CX, R13
#define HSTORE1 \
	HSUM(Y4, X4, X5); \
	VMOVSS X4, (R12)

// BF16 forms of the scale, bias and next-row steps, for the kernels with
// a "b" suffix: scales and biases are read straight from the checkpoint's
// bfloat16 rows (groups values a row, a multiple of 8, no padding) and
// widened in registers (a bfloat16 is the top half of a float32), instead
// of being converted to a float32 copy before every tile; the arithmetic
// is the same, so the results are bit-identical.
#define HSCALE2B \
	VCVTDQ2PS Y0, Y0; VCVTDQ2PS Y1, Y1; VPBROADCASTW (SI)(CX*2), Y12; VPSLLD $16, Y12, Y12; \
	VFMADD231PS Y12, Y0, Y4; VFMADD231PS Y12, Y1, Y5; \
	VCVTDQ2PS Y2, Y2; VCVTDQ2PS Y3, Y3; VPBROADCASTW (DX)(CX*2), Y13; VPSLLD $16, Y13, Y13; \
	VFMADD231PS Y13, Y2, Y6; VFMADD231PS Y13, Y3, Y7
#define HSCALE1B \
	VCVTDQ2PS Y0, Y0; VCVTDQ2PS Y1, Y1; VPBROADCASTW (SI)(CX*2), Y12; VPSLLD $16, Y12, Y12; \
	VFMADD231PS Y12, Y0, Y4; VFMADD231PS Y12, Y1, Y5
#define HBIAS2B \
	VMOVUPS (R9)(CX*4), Y13; \
	VPMOVZXWD (R8)(CX*2), Y12; VPSLLD $16, Y12, Y12; VFMADD231PS Y12, Y13, Y4; \
	VPMOVZXWD (R11)(CX*2), Y12; VPSLLD $16, Y12, Y12; VFMADD231PS Y12, Y13, Y6; \
	ADDQ $8, CX; \
	CMPQ CX, R13
#define HBIAS1B \
	VMOVUPS (R9)(CX*4), Y13; \
	VPMOVZXWD (R8)(CX*2), Y12; VPSLLD $16, Y12, Y12; VFMADD231PS Y12, Y13, Y4; \
	ADDQ $8, CX; \
	CMPQ CX, R13
#define HSTORE2B \
	VHADDPS Y6, Y4, Y4; \
	VEXTRACTF128 $1, Y4, X5; \
	VADDPS X5, X4, X4; \
	VHADDPS X4, X4, X4; \
	MOVQ pd+112(FP), R9; \
	VMOVSS X4, (R12); \
	VEXTRACTPS $1, X4, (R12)(R9*1); \
	ADDQ $4, R12; \
	ADDQ R14, DI; \
	LEAQ (SI)(R13*2), SI; \
	LEAQ (R8)(R13*2), R8; \
	SUBQ $2, rows+48(FP)

// Tail of the 4-row kernels, in three parts around the bias loop label:
// add Σ_g b_g·xs[r][g] to Y8..Y11, reduce, store the four results and
// advance to the next output row.
#define BIAS4SETUP \
	MOVQ R8, AX; \
	MOVQ xs+32(FP), BX; \
	MOVQ xsstride+104(FP), R14; \
	LEAQ (BX)(R14*2), DX; \
	MOVQ gpad+64(FP), R13; \
	SHRQ $3, R13

#define BIAS4BODY \
	VMOVUPS (AX), Y14; \
	VFMADD231PS (BX), Y14, Y8; \
	VFMADD231PS (BX)(R14*1), Y14, Y9; \
	VFMADD231PS (DX), Y14, Y10; \
	VFMADD231PS (DX)(R14*1), Y14, Y11; \
	ADDQ $32, AX; \
	ADDQ $32, BX; \
	ADDQ $32, DX; \
	DECQ R13

#define STORE4 \
	VHADDPS Y9, Y8, Y8; \
	VHADDPS Y11, Y10, Y10; \
	VHADDPS Y10, Y8, Y8; \
	VEXTRACTF128 $1, Y8, X9; \
	VADDPS X9, X8, X8; \
	MOVQ dstride+88(FP), R14; \
	VMOVSS X8, (R12); \
	VEXTRACTPS $1, X8, (R12)(R14*1); \
	LEAQ (R12)(R14*2), AX; \
	VEXTRACTPS $2, X8, (AX); \
	VEXTRACTPS $3, X8, (AX)(R14*1); \
	ADDQ $4, R12; \
	ADDQ wstride+80(FP), DI; \
	MOVQ gpad+64(FP), R13; \
	LEAQ (SI)(R13*4), SI; \
	LEAQ (R8)(R13*4), R8

#define SCALE4 \
	VBROADCASTSS (SI)(CX*4), Y14; \
	VADDPS Y1, Y0, Y0; \
	VFMADD231PS Y14, Y0, Y8; \
	VADDPS Y3, Y2, Y2; \
	VFMADD231PS Y14, Y2, Y9; \
	VADDPS Y5, Y4, Y4; \
	VFMADD231PS Y14, Y4, Y10; \
	VADDPS Y7, Y6, Y6; \
	VFMADD231PS Y14, Y6, Y11

#define ZERO8 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

#define START4 \
	MOVQ DI, AX; \
	MOVQ x+24(FP), BX; \
	MOVQ xstride+96(FP), R14; \
	LEAQ (BX)(R14*2), DX; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	XORQ CX, CX

// func q4h32(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q4h32(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P4F(0, 0)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2
	HNEXT(16, 128)
	JLT group2
	HEND2

bias2:
	HBIAS2
	JLT bias2
	HSTORE2
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S4F(0, 0)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1
	HNEXT(16, 128)
	JLT group1
	HEND1

bias1:
	HBIAS1
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET

// func q4h64(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q4h64(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P4F(0, 0)
	P4N(16, 128)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2
	HNEXT(32, 256)
	JLT group2
	HEND2

bias2:
	HBIAS2
	JLT bias2
	HSTORE2
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S4F(0, 0)
	S4N(16, 128)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1
	HNEXT(32, 256)
	JLT group1
	HEND1

bias1:
	HBIAS1
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET

// func q4h128(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q4h128(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P4F(0, 0)
	P4N(16, 128)
	P4N(32, 256)
	P4N(48, 384)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2
	HNEXT(64, 512)
	JLT group2
	HEND2

bias2:
	HBIAS2
	JLT bias2
	HSTORE2
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S4F(0, 0)
	S4N(16, 128)
	S4N(32, 256)
	S4N(48, 384)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1
	HNEXT(64, 512)
	JLT group1
	HEND1

bias1:
	HBIAS1
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET

// func q8h32(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q8h32(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P8F(0, 0)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2
	HNEXT(32, 128)
	JLT group2
	HEND2

bias2:
	HBIAS2
	JLT bias2
	HSTORE2
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S8F(0, 0)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1
	HNEXT(32, 128)
	JLT group1
	HEND1

bias1:
	HBIAS1
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET

// func q8h64(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q8h64(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P8F(0, 0)
	P8N(32, 128)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2
	HNEXT(64, 256)
	JLT group2
	HEND2

bias2:
	HBIAS2
	JLT bias2
	HSTORE2
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S8F(0, 0)
	S8N(32, 128)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1
	HNEXT(64, 256)
	JLT group1
	HEND1

bias1:
	HBIAS1
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET

// func q8h128(w *byte, s, b *float32, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q8h128(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P8F(0, 0)
	P8N(32, 128)
	P8N(64, 256)
	P8N(96, 384)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2
	HNEXT(128, 512)
	JLT group2
	HEND2

bias2:
	HBIAS2
	JLT bias2
	HSTORE2
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S8F(0, 0)
	S8N(32, 128)
	S8N(64, 256)
	S8N(96, 384)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1
	HNEXT(128, 512)
	JLT group1
	HEND1

bias1:
	HBIAS1
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET
// func q4x4(w *byte, s, b, x, xs, dst *float32, rows, groups, gpad, steps, wstride, dstride, xstride, xsstride int)
TEXT ·q4x4(SB), NOSPLIT, $0-112
	VPBROADCASTD nibd2<>(SB), Y15
	MOVQ w+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ b+16(FP), R8
	MOVQ dst+40(FP), R12
	MOVQ groups+56(FP), R10
	MOVQ steps+72(FP), R11

row:
	START4

group:
	ZERO8
	MOVQ R11, R13

step:
	DEC4(0, Y12, Y13)
	FMA4(Y12, Y13)
	ADDQ $8, AX
	ADDQ $64, BX
	ADDQ $64, DX
	DECQ R13
	JNZ  step

	SCALE4
	INCQ CX
	CMPQ CX, R10
	JLT  group

	BIAS4SETUP

bias:
	BIAS4BODY
	JNZ bias

	STORE4
	DECQ rows+48(FP)
	JNZ  row
	VZEROUPPER
	RET

// func q8x4(w *byte, s, b, x, xs, dst *float32, rows, groups, gpad, steps, wstride, dstride, xstride, xsstride int)
TEXT ·q8x4(SB), NOSPLIT, $0-112
	MOVQ w+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ b+16(FP), R8
	MOVQ dst+40(FP), R12
	MOVQ groups+56(FP), R10
	MOVQ steps+72(FP), R11

row:
	START4

group:
	ZERO8
	MOVQ R11, R13

step:
	DEC8(0, Y12, Y13)
	FMA4(Y12, Y13)
	ADDQ $16, AX
	ADDQ $64, BX
	ADDQ $64, DX
	DECQ R13
	JNZ  step

	SCALE4
	INCQ CX
	CMPQ CX, R10
	JLT  group

	BIAS4SETUP

bias:
	BIAS4BODY
	JNZ bias

	STORE4
	DECQ rows+48(FP)
	JNZ  row
	VZEROUPPER
	RET

// func dotAVX(a, b *float32, n int) float32   (n a multiple of 32)
TEXT ·dotAVX(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SHRQ   $5, CX
	JZ     done

loop:
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	DECQ        CX
	JNZ         loop

done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM(Y0, X0, X1)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotx4AVX(w, x *float32, xstride, n int, out *float32)   (n a multiple of 16)
// out[r] = Σ_i w[i]·x[r*xstride/4 + i] for r < 4.
TEXT ·dotx4AVX(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), AX
	MOVQ x+8(FP), BX
	MOVQ xstride+16(FP), R14
	MOVQ n+24(FP), CX
	LEAQ (BX)(R14*2), DX
	ZERO8
	SHRQ $4, CX
	JZ   done

loop:
	VMOVUPS (AX), Y12
	VMOVUPS 32(AX), Y13
	FMA4(Y12, Y13)
	ADDQ    $64, AX
	ADDQ    $64, BX
	ADDQ    $64, DX
	DECQ    CX
	JNZ     loop

done:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y5, Y4, Y4
	VADDPS       Y7, Y6, Y6
	VHADDPS      Y2, Y0, Y0
	VHADDPS      Y6, Y4, Y4
	VHADDPS      Y4, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	MOVQ         out+32(FP), AX
	VMOVUPS      X0, (AX)
	VZEROUPPER
	RET

// func axpyAVX(dst, src *float32, a float32, n int)   (n a multiple of 8)
// dst[i] += a·src[i].
TEXT ·axpyAVX(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	VBROADCASTSS a+16(FP), Y0
	MOVQ         n+24(FP), CX
	SHRQ         $3, CX
	JZ           done

loop:
	VMOVUPS     (DI), Y1
	VFMADD231PS (SI), Y0, Y1
	VMOVUPS     Y1, (DI)
	ADDQ        $32, DI
	ADDQ        $32, SI
	DECQ        CX
	JNZ         loop

done:
	VZEROUPPER
	RET

// func cvtBF16AVX(dst *float32, src *uint16, n int)   (n a multiple of 8)
TEXT ·cvtBF16AVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   done

loop:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       loop

done:
	VZEROUPPER
	RET

// func cvtF16AVX(dst *float32, src *uint16, n int)   (n a multiple of 8)
TEXT ·cvtF16AVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   done

loop:
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       loop

done:
	VZEROUPPER
	RET

// func scaleI8AVX(dst *float32, src *int8, scale float32, n int)   (n a multiple of 8)
// dst[i] = scale · float32(src[i]).
TEXT ·scaleI8AVX(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	VBROADCASTSS scale+16(FP), Y1
	MOVQ         n+24(FP), CX
	SHRQ         $3, CX
	JZ           done

loop:
	VPMOVSXBD (SI), Y0
	VCVTDQ2PS Y0, Y0
	VMULPS    Y1, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $8, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       loop

done:
	VZEROUPPER
	RET

// func readAVX(p *byte, n int) uint64   (n a multiple of 128)
// XOR-folds n bytes so the loads cannot be optimised away: a read
// bandwidth probe.
TEXT ·readAVX(SB), NOSPLIT, $0-24
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	VPXOR  Y0, Y0, Y0
	VPXOR  Y1, Y1, Y1
	VPXOR  Y2, Y2, Y2
	VPXOR  Y3, Y3, Y3
	SHRQ   $7, CX
	JZ     done

loop:
	VPXOR (SI), Y0, Y0
	VPXOR 32(SI), Y1, Y1
	VPXOR 64(SI), Y2, Y2
	VPXOR 96(SI), Y3, Y3
	ADDQ  $128, SI
	DECQ  CX
	JNZ   loop

done:
	VPXOR        Y1, Y0, Y0
	VPXOR        Y3, Y2, Y2
	VPXOR        Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR        X1, X0, X0
	VPEXTRQ      $1, X0, AX
	VMOVQ        X0, BX
	XORQ         BX, AX
	MOVQ         AX, ret+16(FP)
	VZEROUPPER
	RET

// func spinPause()
TEXT ·spinPause(SB), NOSPLIT, $0-0
	PAUSE
	RET

// func pvAVX(dst, p, v *float32, vstride, keys, n int)   (n a multiple of 64)
// dst[i] += p[j]·v[j·vstride/4 + i] for j = 0, 1, ... keys-1 in that order,
// one FMA per term, so each element gets exactly the sums that keys calls
// of axpyAVX would give it; the 64 accumulators stay in registers.
TEXT ·pvAVX(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), BX
	MOVQ vstride+24(FP), R8
	MOVQ keys+32(FP), CX
	MOVQ n+40(FP), DX
	SHRQ $6, DX
	JZ   done
	TESTQ CX, CX
	JZ   done

chunk:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ SI, R9
	MOVQ BX, R10
	MOVQ CX, R11

key:
	VBROADCASTSS (R9), Y8
	VFMADD231PS  (R10), Y8, Y0
	VFMADD231PS  32(R10), Y8, Y1
	VFMADD231PS  64(R10), Y8, Y2
	VFMADD231PS  96(R10), Y8, Y3
	VFMADD231PS  128(R10), Y8, Y4
	VFMADD231PS  160(R10), Y8, Y5
	VFMADD231PS  192(R10), Y8, Y6
	VFMADD231PS  224(R10), Y8, Y7
	ADDQ         $4, R9
	ADDQ         R8, R10
	DECQ         R11
	JNZ          key

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ    $256, DI
	ADDQ    $256, BX
	DECQ    DX
	JNZ     chunk

done:
	VZEROUPPER
	RET

// func dot2AVX(k, q0, q1 *float32, n int, out *float32)   (n a multiple of 32)
// out[0] = q0·k, out[1] = q1·k, each summed exactly as dotAVX(q, k, n)
// sums it (same accumulators, same reduction), with k loaded once.
TEXT ·dot2AVX(SB), NOSPLIT, $0-40
	MOVQ   k+0(FP), SI
	MOVQ   q0+8(FP), DI
	MOVQ   q1+16(FP), DX
	MOVQ   n+24(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	SHRQ   $5, CX
	JZ     done

loop:
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	VFMADD231PS (DX), Y4, Y8
	VFMADD231PS 32(DX), Y5, Y9
	VFMADD231PS 64(DX), Y6, Y10
	VFMADD231PS 96(DX), Y7, Y11
	ADDQ        $128, SI
	ADDQ        $128, DI
	ADDQ        $128, DX
	DECQ        CX
	JNZ         loop

done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM(Y0, X0, X1)
	VADDPS Y9, Y8, Y8
	VADDPS Y11, Y10, Y10
	VADDPS Y10, Y8, Y8
	HSUM(Y8, X8, X9)
	MOVQ   out+32(FP), AX
	VMOVSS X0, (AX)
	VMOVSS X8, 4(AX)
	VZEROUPPER
	RET

// The x splitters of the two-level decode kernels (see above).
DATA absmask2<>+0(SB)/4, $0x7fffffff
GLOBL absmask2<>(SB), RODATA|NOPTR, $4
DATA c32768<>+0(SB)/4, $0x47000000
GLOBL c32768<>(SB), RODATA|NOPTR, $4

// func xstatsAVX(x, xs *float32, groups, gs int) float32   (gs a multiple of 8)
// xs[g] = Σ x over group g; returns max |x| (not reliable for NaN: callers
// check the sums, which a NaN or Inf makes non-finite).
TEXT ·xstatsAVX(SB), NOSPLIT, $0-36
	MOVQ x+0(FP), SI
	MOVQ xs+8(FP), DI
	MOVQ groups+16(FP), CX
	MOVQ gs+24(FP), DX
	SHRQ $3, DX
	VBROADCASTSS absmask2<>(SB), Y15
	VXORPS Y3, Y3, Y3
	TESTQ CX, CX
	JZ   done

grp:
	VXORPS Y0, Y0, Y0
	MOVQ DX, R8

vec:
	VMOVUPS (SI), Y2
	VADDPS  Y2, Y0, Y0
	VANDPS  Y15, Y2, Y2
	VMAXPS  Y2, Y3, Y3
	ADDQ    $32, SI
	DECQ    R8
	JNZ     vec
	HSUM(Y0, X0, X1)
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	DECQ   CX
	JNZ    grp

done:
	VEXTRACTF128 $1, Y3, X4
	VMAXPS       X4, X3, X3
	VPERMILPS    $0x4e, X3, X4
	VMAXPS       X4, X3, X3
	VPERMILPS    $0xb1, X3, X4
	VMAXPS       X4, X3, X3
	VMOVSS       X3, ret+32(FP)
	VZEROUPPER
	RET

// Split four vectors of x (Y0-Y3) into limbs: hi = round(x·scale) (Y4-Y7),
// lo = round((x·scale - hi)·32768) (Y0-Y3), as int32.
#define XSPLIT4 \
	VMULPS Y15, Y0, Y0; VMULPS Y15, Y1, Y1; VMULPS Y15, Y2, Y2; VMULPS Y15, Y3, Y3; \
	VROUNDPS $0, Y0, Y4; VROUNDPS $0, Y1, Y5; VROUNDPS $0, Y2, Y6; VROUNDPS $0, Y3, Y7; \
	VSUBPS Y4, Y0, Y0; VSUBPS Y5, Y1, Y1; VSUBPS Y6, Y2, Y2; VSUBPS Y7, Y3, Y3; \
	VMULPS Y14, Y0, Y0; VMULPS Y14, Y1, Y1; VMULPS Y14, Y2, Y2; VMULPS Y14, Y3, Y3; \
	VCVTPS2DQ Y0, Y0; VCVTPS2DQ Y1, Y1; VCVTPS2DQ Y2, Y2; VCVTPS2DQ Y3, Y3; \
	VCVTPS2DQ Y4, Y4; VCVTPS2DQ Y5, Y5; VCVTPS2DQ Y6, Y6; VCVTPS2DQ Y7, Y7

// Pack the limbs to words in element order of (Y0 Y1) and (Y2 Y3): 128
// bytes at DI, hi of the first pair, hi of the second, lo likewise.
#define XPACK \
	VPACKSSDW Y5, Y4, Y8; VPERMQ $0xD8, Y8, Y8; VMOVDQU Y8, (DI); \
	VPACKSSDW Y7, Y6, Y9; VPERMQ $0xD8, Y9, Y9; VMOVDQU Y9, 32(DI); \
	VPACKSSDW Y1, Y0, Y8; VPERMQ $0xD8, Y8, Y8; VMOVDQU Y8, 64(DI); \
	VPACKSSDW Y3, Y2, Y9; VPERMQ $0xD8, Y9, Y9; VMOVDQU Y9, 96(DI)

// func xsplit8AVX(x *float32, xq *int16, n int, scale float32)   (n a multiple of 32)
// Per 32 elements: hi of elements 0-15, of 16-31, then lo likewise.
TEXT ·xsplit8AVX(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS scale+24(FP), Y15
	VBROADCASTSS c32768<>(SB), Y14
	SHRQ $5, CX
	JZ   done

loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	XSPLIT4
	XPACK
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	RET

// func xsplit4AVX(x *float32, xq *int16, n int, scale float32)   (n a multiple of 32)
// Per 32 elements: hi of the 16 even elements, of the 16 odd ones, then lo
// likewise (the low and high nibbles of 16 packed bytes).
TEXT ·xsplit4AVX(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS scale+24(FP), Y15
	VBROADCASTSS c32768<>(SB), Y14
	SHRQ $5, CX
	JZ   done

loop:
	VMOVUPS (SI), Y8
	VMOVUPS 32(SI), Y9
	VMOVUPS 64(SI), Y10
	VMOVUPS 96(SI), Y11
	VSHUFPS $0x88, Y9, Y8, Y0
	VSHUFPS $0x88, Y11, Y10, Y1
	VSHUFPS $0xDD, Y9, Y8, Y2
	VSHUFPS $0xDD, Y11, Y10, Y3
	VPERMPD $0xD8, Y0, Y0
	VPERMPD $0xD8, Y1, Y1
	VPERMPD $0xD8, Y2, Y2
	VPERMPD $0xD8, Y3, Y3
	XSPLIT4
	XPACK
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	RET

// Prefill (AVX2): dq4AVX/dq8AVX dequantize rows of weights to float32,
// w = s·q + b with one rounding (FMA), in dqz4/dqz8's order (4 bits: per
// 32 elements the low nibbles of 16 bytes, then their high nibbles), and
// sgemm6x16AVX multiplies six such rows by one panel of 16 x rows.

// func dq4AVX(w *byte, s, b, dst *float32, groups, steps int)   (steps = group size / 32)
TEXT ·dq4AVX(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), AX
	MOVQ         s+8(FP), SI
	MOVQ         b+16(FP), R8
	MOVQ         dst+24(FP), DI
	MOVQ         groups+32(FP), CX
	VPBROADCASTD nibd2<>(SB), Y15
	TESTQ        CX, CX
	JZ           done

grp:
	VBROADCASTSS (SI), Y13
	VBROADCASTSS (R8), Y14
	MOVQ         steps+40(FP), R9

step:
	VPMOVZXBD   (AX), Y0
	VPMOVZXBD   8(AX), Y1
	VPSRLD      $4, Y0, Y2
	VPSRLD      $4, Y1, Y3
	VPAND       Y15, Y0, Y0
	VPAND       Y15, Y1, Y1
	VCVTDQ2PS   Y0, Y0
	VCVTDQ2PS   Y1, Y1
	VCVTDQ2PS   Y2, Y2
	VCVTDQ2PS   Y3, Y3
	VFMADD213PS Y14, Y13, Y0
	VFMADD213PS Y14, Y13, Y1
	VFMADD213PS Y14, Y13, Y2
	VFMADD213PS Y14, Y13, Y3
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)
	VMOVUPS     Y2, 64(DI)
	VMOVUPS     Y3, 96(DI)
	ADDQ        $16, AX
	ADDQ        $128, DI
	DECQ        R9
	JNZ         step
	ADDQ        $4, SI
	ADDQ        $4, R8
	DECQ        CX
	JNZ         grp

done:
	VZEROUPPER
	RET

// func dq8AVX(w *byte, s, b, dst *float32, groups, steps int)   (steps = group size / 32)
TEXT ·dq8AVX(SB), NOSPLIT, $0-48
	MOVQ  w+0(FP), AX
	MOVQ  s+8(FP), SI
	MOVQ  b+16(FP), R8
	MOVQ  dst+24(FP), DI
	MOVQ  groups+32(FP), CX
	TESTQ CX, CX
	JZ    done

grp:
	VBROADCASTSS (SI), Y13
	VBROADCASTSS (R8), Y14
	MOVQ         steps+40(FP), R9

step:
	VPMOVZXBD   (AX), Y0
	VPMOVZXBD   8(AX), Y1
	VPMOVZXBD   16(AX), Y2
	VPMOVZXBD   24(AX), Y3
	VCVTDQ2PS   Y0, Y0
	VCVTDQ2PS   Y1, Y1
	VCVTDQ2PS   Y2, Y2
	VCVTDQ2PS   Y3, Y3
	VFMADD213PS Y14, Y13, Y0
	VFMADD213PS Y14, Y13, Y1
	VFMADD213PS Y14, Y13, Y2
	VFMADD213PS Y14, Y13, Y3
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)
	VMOVUPS     Y2, 64(DI)
	VMOVUPS     Y3, 96(DI)
	ADDQ        $32, AX
	ADDQ        $128, DI
	DECQ        R9
	JNZ         step
	ADDQ        $4, SI
	ADDQ        $4, R8
	DECQ        CX
	JNZ         grp

done:
	VZEROUPPER
	RET

// One inner index of sgemm6x16AVX at byte offsets po into the panel and
// wo into the weight rows: two vectors of 8 x rows, each weight row's
// value broadcast once and multiplied with both.
#define G6(po, wo) \
	VMOVUPS      po(SI), Y12; \
	VMOVUPS      po+32(SI), Y13; \
	VBROADCASTSS wo(DI), Y14; \
	VFMADD231PS  Y12, Y14, Y0; \
	VFMADD231PS  Y13, Y14, Y1; \
	VBROADCASTSS wo(DI)(R12*1), Y15; \
	VFMADD231PS  Y12, Y15, Y2; \
	VFMADD231PS  Y13, Y15, Y3; \
	VBROADCASTSS wo(DI)(R12*2), Y14; \
	VFMADD231PS  Y12, Y14, Y4; \
	VFMADD231PS  Y13, Y14, Y5; \
	VBROADCASTSS wo(R8), Y15; \
	VFMADD231PS  Y12, Y15, Y6; \
	VFMADD231PS  Y13, Y15, Y7; \
	VBROADCASTSS wo(R8)(R12*1), Y14; \
	VFMADD231PS  Y12, Y14, Y8; \
	VFMADD231PS  Y13, Y14, Y9; \
	VBROADCASTSS wo(R8)(R12*2), Y15; \
	VFMADD231PS  Y12, Y15, Y10; \
	VFMADD231PS  Y13, Y15, Y11

// Store (or add to) one result row of 16 floats at (BX).
#define C6ST(a, b) VMOVUPS a, (BX); VMOVUPS b, 32(BX); ADDQ R13, BX
#define C6ACC(a, b) VADDPS (BX), a, a; VADDPS 32(BX), b, b; VMOVUPS a, (BX); VMOVUPS b, 32(BX); ADDQ R13, BX

// func sgemm6x16AVX(xt *float32, pstride int, w *float32, wstride, k int, c *float32, cstride, accumulate int)
// c[j*cstride + r] (=|+=) Σ_k w[j*wstride + k]·xt[16k + r] for six weight
// rows j and the 16 rows r of one panel (strides in bytes; k even;
// pstride is unused, for the common kernel signature).
TEXT ·sgemm6x16AVX(SB), NOSPLIT, $0-64
	MOVQ   xt+0(FP), SI
	MOVQ   w+16(FP), DI
	MOVQ   wstride+24(FP), R12
	MOVQ   k+32(FP), CX
	LEAQ   (R12)(R12*2), AX
	LEAQ   (DI)(AX*1), R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	SHRQ   $1, CX
	JZ     store

	// The panel is read once per call from L2; prefetching 1 KiB ahead
	// sped the 8192-wide down projection up by ~1.2x (thread CPU time).
loop:
	PREFETCHT0 1024(SI)
	G6(0, 0)
	PREFETCHT0 1088(SI)
	G6(64, 4)
	ADDQ $128, SI
	ADDQ $8, DI
	ADDQ $8, R8
	DECQ CX
	JNZ  loop

store:
	MOVQ  c+40(FP), BX
	MOVQ  cstride+48(FP), R13
	MOVQ  accumulate+56(FP), DX
	TESTQ DX, DX
	JZ    plain
	C6ACC(Y0, Y1)
	C6ACC(Y2, Y3)
	C6ACC(Y4, Y5)
	C6ACC(Y6, Y7)
	C6ACC(Y8, Y9)
	C6ACC(Y10, Y11)
	VZEROUPPER
	RET

plain:
	C6ST(Y0, Y1)
	C6ST(Y2, Y3)
	C6ST(Y4, Y5)
	C6ST(Y6, Y7)
	C6ST(Y8, Y9)
	C6ST(Y10, Y11)
	VZEROUPPER
	RET

// func q4h32b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q4h32b(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P4F(0, 0)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2B
	HNEXT(16, 128)
	JLT group2
	HEND2

bias2:
	HBIAS2B
	JLT bias2
	HSTORE2B
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S4F(0, 0)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1B
	HNEXT(16, 128)
	JLT group1
	HEND1

bias1:
	HBIAS1B
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET

// func q4h64b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q4h64b(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P4F(0, 0)
	P4N(16, 128)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2B
	HNEXT(32, 256)
	JLT group2
	HEND2

bias2:
	HBIAS2B
	JLT bias2
	HSTORE2B
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S4F(0, 0)
	S4N(16, 128)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1B
	HNEXT(32, 256)
	JLT group1
	HEND1

bias1:
	HBIAS1B
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET

// func q4h128b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q4h128b(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P4F(0, 0)
	P4N(16, 128)
	P4N(32, 256)
	P4N(48, 384)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2B
	HNEXT(64, 512)
	JLT group2
	HEND2

bias2:
	HBIAS2B
	JLT bias2
	HSTORE2B
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S4F(0, 0)
	S4N(16, 128)
	S4N(32, 256)
	S4N(48, 384)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1B
	HNEXT(64, 512)
	JLT group1
	HEND1

bias1:
	HBIAS1B
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET

// func q8h32b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q8h32b(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P8F(0, 0)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2B
	HNEXT(32, 128)
	JLT group2
	HEND2

bias2:
	HBIAS2B
	JLT bias2
	HSTORE2B
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S8F(0, 0)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1B
	HNEXT(32, 128)
	JLT group1
	HEND1

bias1:
	HBIAS1B
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET

// func q8h64b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q8h64b(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P8F(0, 0)
	P8N(32, 128)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2B
	HNEXT(64, 256)
	JLT group2
	HEND2

bias2:
	HBIAS2B
	JLT bias2
	HSTORE2B
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S8F(0, 0)
	S8N(32, 128)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1B
	HNEXT(64, 256)
	JLT group1
	HEND1

bias1:
	HBIAS1B
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET

// func q8h128b(w *byte, s, b *uint16, xq *int16, xs, dst *float32, rows, groups, gpad, wstride int, sx float32, pf, pw, ps, pd int)
TEXT ·q8h128b(SB), NOSPLIT, $0-120
	HENTRY
	CMPQ rows+48(FP), $2
	JLT  one

pair:
	HSTART2

group2:
	P8F(0, 0)
	P8N(32, 128)
	P8N(64, 256)
	P8N(96, 384)
	PREFETCHT0 (AX)(R9*1)
	PREFETCHT0 (R11)(R9*1)
	HSCALE2B
	HNEXT(128, 512)
	JLT group2
	HEND2

bias2:
	HBIAS2B
	JLT bias2
	HSTORE2B
	CMPQ rows+48(FP), $2
	JGE  pair
	HSKIP

one:
	CMPQ rows+48(FP), $0
	JEQ  done
	HSTART1

group1:
	S8F(0, 0)
	S8N(32, 128)
	S8N(64, 256)
	S8N(96, 384)
	PREFETCHT0 (AX)(R9*1)
	HSCALE1B
	HNEXT(128, 512)
	JLT group1
	HEND1

bias1:
	HBIAS1B
	JLT bias1
	HSTORE1

done:
	VZEROUPPER
	RET

DATA expc<>+0(SB)/4, $0x3fb8aa3b  // log2 e
DATA expc<>+4(SB)/4, $0x4b400000  // 1.5·2^23
DATA expc<>+8(SB)/4, $0x3f318000  // ln2 hi 0.693359375
DATA expc<>+12(SB)/4, $0xb95e8083 // ln2 lo -2.12194440e-4
DATA expc<>+16(SB)/4, $0x3ab60b61 // 1/720
DATA expc<>+20(SB)/4, $0x3c088889 // 1/120
DATA expc<>+24(SB)/4, $0x3d2aaaab // 1/24
DATA expc<>+28(SB)/4, $0x3e2aaaab // 1/6
DATA expc<>+32(SB)/4, $0x3f000000 // 1/2
DATA expc<>+36(SB)/4, $0x3f800000 // 1
DATA expc<>+40(SB)/4, $0xc2ae0000 // -87
GLOBL expc<>(SB), RODATA|NOPTR, $44

// func expSubAVX(dst, src *float32, m float32, n int)   (n a multiple of 8)
// dst[i] = e^(src[i]-m) for arguments in [-87, 0] (smaller ones are
// clamped to -87, e^-87 ≈ 1.6e-38): expf's reduction and polynomial, with
// FMAs, eight at a time (attention's softmax weights).
TEXT ·expSubAVX(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	VBROADCASTSS m+16(FP), Y15
	MOVQ         n+24(FP), CX
	SHRQ         $3, CX
	JZ           done
	VBROADCASTSS expc<>+0(SB), Y14
	VBROADCASTSS expc<>+4(SB), Y13
	VBROADCASTSS expc<>+8(SB), Y12
	VBROADCASTSS expc<>+12(SB), Y11
	VBROADCASTSS expc<>+36(SB), Y10
	VBROADCASTSS expc<>+40(SB), Y9
	VBROADCASTSS expc<>+16(SB), Y4
	VBROADCASTSS expc<>+20(SB), Y5
	VBROADCASTSS expc<>+24(SB), Y6
	VBROADCASTSS expc<>+28(SB), Y7
	VBROADCASTSS expc<>+32(SB), Y8

loop:
	VMOVUPS      (SI), Y0
	VSUBPS       Y15, Y0, Y0
	VMAXPS       Y9, Y0, Y0
	VMOVAPS      Y13, Y1
	VFMADD231PS  Y14, Y0, Y1       // t = x·log2e + 1.5·2^23
	VSUBPS       Y13, Y1, Y2       // k
	VFNMADD231PS Y12, Y2, Y0       // r = x - k·ln2hi
	VFNMADD231PS Y11, Y2, Y0       // r -= k·ln2lo
	VMOVAPS      Y4, Y3
	VFMADD213PS  Y5, Y0, Y3
	VFMADD213PS  Y6, Y0, Y3
	VFMADD213PS  Y7, Y0, Y3
	VFMADD213PS  Y8, Y0, Y3
	VFMADD213PS  Y10, Y0, Y3
	VFMADD213PS  Y10, Y0, Y3       // p = 1 + r(1 + r(1/2 + ...))
	VCVTPS2DQ    Y2, Y2
	VPSLLD       $23, Y2, Y2
	VPADDD       Y10, Y2, Y2       // 2^k: (k+127)<<23 = k<<23 + bits of 1.0
	VMULPS       Y2, Y3, Y3
	VMOVUPS      Y3, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          loop

done:
	VZEROUPPER
	RET

// func prefetchLines(p *byte, n int)
// PREFETCHT0 of the n 64-byte lines from p (n > 0).
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX

pfloop:
	PREFETCHT0 (AX)
	ADDQ       $64, AX
	DECQ       CX
	JNZ        pfloop
	RET

// Elementwise kernels over n floats, n a multiple of 8 (the callers do
// the tail in Go). Each result is the same single rounding as the Go
// expression it replaces.

// func addAVX(dst, a, b *float32, n int)   dst = a + b
TEXT ·addAVX(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func mulAVX(dst, a, b *float32, n int)   dst = a * b
TEXT ·mulAVX(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS (SI), Y0
	VMULPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func scaleAVX(dst, x *float32, s float32, n int)   dst = x * s
TEXT ·scaleAVX(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS s+16(FP), Y1
	MOVQ         n+24(FP), CX
	SHRQ         $3, CX
	JZ           done

loop:
	VMULPS  (SI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func scaleMulAVX(dst, x, w *float32, s float32, n int)   dst = (x * s) * w
TEXT ·scaleMulAVX(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	VBROADCASTSS s+24(FP), Y1
	MOVQ         n+32(FP), CX
	SHRQ         $3, CX
	JZ           done

loop:
	VMULPS  (SI), Y1, Y0
	VMULPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// GaussianTopK's passes over a row of n floats, n a multiple of 8.

// HSUMPD leaves Y0 + Y1, summed over their float64 lanes, in X0 (X1 is
// clobbered).
#define HSUMPD VADDPD Y1, Y0, Y0; VEXTRACTF128 $1, Y0, X1; VADDPD X1, X0, X0; VPERMILPD $1, X0, X1; VADDSD X1, X0, X0

// func sumF64AVX(x *float32, n int) float64   Σ x in float64
TEXT ·sumF64AVX(SB), NOSPLIT, $0-24
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	SHRQ   $3, CX
	JZ     done

loop:
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VADDPD    Y2, Y0, Y0
	VADDPD    Y3, Y1, Y1
	ADDQ      $32, SI
	DECQ      CX
	JNZ       loop

done:
	HSUMPD
	VMOVSD       X0, ret+16(FP)
	VZEROUPPER
	RET

// func sqDevF64AVX(x *float32, n int, mean float64) float64   Σ (x - mean)² in float64
TEXT ·sqDevF64AVX(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD mean+16(FP), Y4
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	SHRQ         $3, CX
	JZ           done

loop:
	VCVTPS2PD   (SI), Y2
	VCVTPS2PD   16(SI), Y3
	VSUBPD      Y4, Y2, Y2
	VSUBPD      Y4, Y3, Y3
	VFMADD231PD Y2, Y2, Y0
	VFMADD231PD Y3, Y3, Y1
	ADDQ        $32, SI
	DECQ        CX
	JNZ         loop

done:
	HSUMPD
	VMOVSD       X0, ret+24(FP)
	VZEROUPPER
	RET

// func subClampAVX(dst, x *float32, cut float32, n int)   dst = max(0, x - cut)
// as Go's max: a NaN stays NaN and a zero result is +0 (max(+0, d) gives d
// for either zero, and d + 0 turns -0 into +0).
TEXT ·subClampAVX(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS cut+16(FP), Y1
	MOVQ         n+24(FP), CX
	VXORPS       Y2, Y2, Y2
	SHRQ         $3, CX
	JZ           done

loop:
	VMOVUPS (SI), Y0
	VSUBPS  Y1, Y0, Y0
	VMAXPS  Y0, Y2, Y0
	VADDPS  Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func ropeHalfAVX(row, cs *float32, half int)
// Rotates the pairs (row[i], row[i+half]) by the angles whose cosines are
// cs[i] and sines cs[half+i], for the whole blocks of eight i: products
// rounded, then one subtraction or addition, as the Go loop does.
TEXT ·ropeHalfAVX(SB), NOSPLIT, $0-24
	MOVQ row+0(FP), DI
	MOVQ cs+8(FP), SI
	MOVQ half+16(FP), CX
	LEAQ (DI)(CX*4), DX
	LEAQ (SI)(CX*4), BX
	SHRQ $3, CX
	JZ   ropedone

ropeloop:
	VMOVUPS (DI), Y0
	VMOVUPS (DX), Y1
	VMOVUPS (SI), Y2
	VMOVUPS (BX), Y3
	VMULPS  Y2, Y0, Y4
	VMULPS  Y3, Y1, Y5
	VSUBPS  Y5, Y4, Y4
	VMULPS  Y2, Y1, Y6
	VMULPS  Y3, Y0, Y7
	VADDPS  Y7, Y6, Y6
	VMOVUPS Y4, (DI)
	VMOVUPS Y6, (DX)
	ADDQ    $32, DI
	ADDQ    $32, DX
	ADDQ    $32, SI
	ADDQ    $32, BX
	DECQ    CX
	JNZ     ropeloop

ropedone:
	VZEROUPPER
	RET
