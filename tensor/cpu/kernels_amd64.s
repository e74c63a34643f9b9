#include "textflag.h"

// AVX2/FMA kernels for the CPU backend. Quantized kernels work on packed
// MLX affine weights and accumulate Σ_g s_g·(Σ q·x) + Σ_g b_g·(Σ x) with
// float32 scales and biases converted beforehand (rows padded to gpad, a
// multiple of 8, with zeros). For 4 bits, x is pre-permuted per block of 16
// elements as [8 even][8 odd] so low and high nibbles of 8 bytes line up
// with two vectors of x. A "step" consumes 16 elements of a row and 64
// bytes of x; a group has steps = groupSize/16 of them (2, 4 or 8).
// (The 4-bit x layout is refined further: see DEC4.)

DATA wmask<>+0(SB)/2, $0x000f
GLOBL wmask<>(SB), RODATA|NOPTR, $2

#define HSUM(y, x, xt) VEXTRACTF128 $1, y, xt; VADDPS xt, x, x; VHADDPS x, x, x; VHADDPS x, x, x

// 4-bit decode of 8 bytes at wo(AX): whole bytes (16·hi+lo) -> wa, high
// nibbles -> wb. Paired with x laid out as [even] and [odd - 16·even] this
// gives lo·even + hi·odd without masking the low nibble.
#define DEC4(wo, wa, wb) VPMOVZXBD wo(AX), wa; VPSRLD $4, wa, wb; VCVTDQ2PS wa, wa; VCVTDQ2PS wb, wb

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

// Bias part of the single-row kernels: Y0 += Σ_g b_g·xs_g over gpad
// groups (R8 biases row, R9 xs, R13 gpad).
#define Q1BIASSETUP XORQ CX, CX

#define Q1BIASBODY \
	VMOVUPS (R8)(CX*4), Y5; \
	VFMADD231PS (R9)(CX*4), Y5, Y0; \
	ADDQ $8, CX; \
	CMPQ CX, R13


// Integer single-row kernels (decode): x is quantized per group to int16
// (x ≈ sx·xq with sx = max|x|/32767), codes are widened to int16 and
// VPMADDWD forms exact integer partial dots, converted to float once per
// group and scaled by s·sx. About half the vector work of the float path,
// which decode needs to keep up with memory. For 4 bits, x is laid out
// per 32 elements as [16 even][16 odd] to match low and high nibbles of
// 16 packed bytes; for 8 bits it is in natural order. Sums cannot
// overflow: at most 16 products of 255·32767 per int32 lane and group.
// Registers: DI weight row, SI scales row, R8 biases row, R9 xs, R11 sx
// (one float per group), R12 dst, R10 groups, R13 gpad, AX weight cursor,
// BX x cursor, CX group index, Y0 row total.
#define I4FIRST(wo, xo) VPMOVZXBW wo(AX), Y8; VPSRLW $4, Y8, Y9; VPAND Y15, Y8, Y8; VPMADDWD xo(BX), Y8, Y1; VPMADDWD xo+32(BX), Y9, Y2
#define I4NEXT(wo, xo) VPMOVZXBW wo(AX), Y10; VPSRLW $4, Y10, Y11; VPAND Y15, Y10, Y10; VPMADDWD xo(BX), Y10, Y10; VPMADDWD xo+32(BX), Y11, Y11; VPADDD Y10, Y1, Y1; VPADDD Y11, Y2, Y2
#define I8FIRST(wo, xo, acc) VPMOVZXBW wo(AX), Y8; VPMADDWD xo(BX), Y8, acc
#define I8NEXT(wo, xo, acc) VPMOVZXBW wo(AX), Y10; VPMADDWD xo(BX), Y10, Y10; VPADDD Y10, acc, acc

#define IG4_32 I4FIRST(0, 0)
#define IG4_64 IG4_32; I4NEXT(16, 64)
#define IG4_128 IG4_64; I4NEXT(32, 128); I4NEXT(48, 192)
#define IG8_32 I8FIRST(0, 0, Y1); I8FIRST(16, 32, Y2)
#define IG8_64 IG8_32; I8NEXT(32, 64, Y1); I8NEXT(48, 96, Y2)
#define IG8_128 IG8_64; I8NEXT(64, 128, Y1); I8NEXT(80, 160, Y2); I8NEXT(96, 192, Y1); I8NEXT(112, 224, Y2)

#define QIENTRY \
	MOVQ w+0(FP), DI; \
	MOVQ s+8(FP), SI; \
	MOVQ b+16(FP), R8; \
	MOVQ sx+32(FP), R11; \
	MOVQ xs+40(FP), R9; \
	MOVQ dst+48(FP), R12; \
	MOVQ groups+64(FP), R10; \
	MOVQ gpad+72(FP), R13; \
	VPBROADCASTW wmask<>(SB), Y15

#define QIROW \
	MOVQ DI, AX; \
	MOVQ xq+24(FP), BX; \
	VXORPS Y0, Y0, Y0; \
	XORQ CX, CX

#define QISCALE(wadv, xadv) \
	PREFETCHT0 1024(AX); \
	VPADDD Y2, Y1, Y1; \
	VCVTDQ2PS Y1, Y1; \
	VBROADCASTSS (SI)(CX*4), Y5; \
	VBROADCASTSS (R11)(CX*4), Y6; \
	VMULPS Y6, Y5, Y5; \
	VFMADD231PS Y5, Y1, Y0; \
	ADDQ $wadv, AX; \
	ADDQ $xadv, BX; \
	INCQ CX; \
	CMPQ CX, R10

#define QISTORE \
	HSUM(Y0, X0, X1); \
	VMOVSS X0, (R12); \
	ADDQ $4, R12; \
	ADDQ wstride+80(FP), DI; \
	LEAQ (SI)(R13*4), SI; \
	LEAQ (R8)(R13*4), R8; \
	DECQ rows+56(FP)


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

// func q4x1i32(w *byte, s, b *float32, xq *int16, sx, xs, dst *float32, rows, groups, gpad, wstride int)
TEXT ·q4x1i32(SB), NOSPLIT, $0-88
	QIENTRY

row:
	QIROW

group:
	IG4_32
	QISCALE(16, 64)
	JLT group
	Q1BIASSETUP

bias:
	Q1BIASBODY
	JLT bias
	QISTORE
	JNZ row
	VZEROUPPER
	RET

// func q4x1i64(w *byte, s, b *float32, xq *int16, sx, xs, dst *float32, rows, groups, gpad, wstride int)
TEXT ·q4x1i64(SB), NOSPLIT, $0-88
	QIENTRY

row:
	QIROW

group:
	IG4_64
	QISCALE(32, 128)
	JLT group
	Q1BIASSETUP

bias:
	Q1BIASBODY
	JLT bias
	QISTORE
	JNZ row
	VZEROUPPER
	RET

// func q4x1i128(w *byte, s, b *float32, xq *int16, sx, xs, dst *float32, rows, groups, gpad, wstride int)
TEXT ·q4x1i128(SB), NOSPLIT, $0-88
	QIENTRY

row:
	QIROW

group:
	IG4_128
	QISCALE(64, 256)
	JLT group
	Q1BIASSETUP

bias:
	Q1BIASBODY
	JLT bias
	QISTORE
	JNZ row
	VZEROUPPER
	RET

// func q8x1i32(w *byte, s, b *float32, xq *int16, sx, xs, dst *float32, rows, groups, gpad, wstride int)
TEXT ·q8x1i32(SB), NOSPLIT, $0-88
	QIENTRY

row:
	QIROW

group:
	IG8_32
	QISCALE(32, 64)
	JLT group
	Q1BIASSETUP

bias:
	Q1BIASBODY
	JLT bias
	QISTORE
	JNZ row
	VZEROUPPER
	RET

// func q8x1i64(w *byte, s, b *float32, xq *int16, sx, xs, dst *float32, rows, groups, gpad, wstride int)
TEXT ·q8x1i64(SB), NOSPLIT, $0-88
	QIENTRY

row:
	QIROW

group:
	IG8_64
	QISCALE(64, 128)
	JLT group
	Q1BIASSETUP

bias:
	Q1BIASBODY
	JLT bias
	QISTORE
	JNZ row
	VZEROUPPER
	RET

// func q8x1i128(w *byte, s, b *float32, xq *int16, sx, xs, dst *float32, rows, groups, gpad, wstride int)
TEXT ·q8x1i128(SB), NOSPLIT, $0-88
	QIENTRY

row:
	QIROW

group:
	IG8_128
	QISCALE(128, 256)
	JLT group
	Q1BIASSETUP

bias:
	Q1BIASBODY
	JLT bias
	QISTORE
	JNZ row
	VZEROUPPER
	RET

// func q4x4(w *byte, s, b, x, xs, dst *float32, rows, groups, gpad, steps, wstride, dstride, xstride, xsstride int)
TEXT ·q4x4(SB), NOSPLIT, $0-112
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
