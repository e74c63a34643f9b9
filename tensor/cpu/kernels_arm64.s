#include "textflag.h"

// NEON kernels for the CPU backend on arm64 (see simd_arm64.go for what
// each computes). Go's assembler lacks some Advanced SIMD instructions;
// they are spelled as WORDs with the encodings from the Arm ARM:
//   UCVTF/SCVTF Vd.4S, Vn.4S     0x6E21D800 / 0x4E21D800 | n<<5 | d
//   FADD  Vd.4S, Vn.4S, Vm.4S    0x4E20D400 | m<<16 | n<<5 | d
//   FADDP Vd.4S, Vn.4S, Vm.4S    0x6E20D400 | m<<16 | n<<5 | d
//   FADDP Sd, Vn.2S              0x7E30D800 | n<<5 | d
//   FCVTL/FCVTL2 Vd.4S, Vn.4H/8H 0x0E217800 / 0x4E217800 | n<<5 | d
//   SMLAL/SMLAL2 Vd.4S, Vn.4H/8H, Vm.4H/8H  0x0E608000 / 0x4E608000 | m<<16 | n<<5 | d

#define UCVTF(n, d) WORD $(0x6E21D800 | (n)<<5 | (d))
#define SCVTF(n, d) WORD $(0x4E21D800 | (n)<<5 | (d))
#define FADD(m, n, d) WORD $(0x4E20D400 | (m)<<16 | (n)<<5 | (d))
#define FADDP(m, n, d) WORD $(0x6E20D400 | (m)<<16 | (n)<<5 | (d))
#define FADDPS(n, d) WORD $(0x7E30D800 | (n)<<5 | (d))
#define FCVTL(n, d) WORD $(0x0E217800 | (n)<<5 | (d))
#define FCVTL2(n, d) WORD $(0x4E217800 | (n)<<5 | (d))
#define SMLAL(m, n, d) WORD $(0x0E608000 | (m)<<16 | (n)<<5 | (d))
#define SMLAL2(m, n, d) WORD $(0x4E608000 | (m)<<16 | (n)<<5 | (d))

// HSUM4 reduces V(v).4S into F(v) (uses FADDP twice).
#define HSUM4(v) FADDP(v, v, v); FADDPS(v, v)

// Four-row forms for prefill: one packed weight row against four x rows
// (xstride bytes apart), decoding each step's codes once for all four;
// out[r] = Σ_g s[g]·Σ q·x_r. V16-V23 accumulate a group (two per row),
// V24-V27 the row totals.
#define ZERO8 \
	VEOR V16.B16, V16.B16, V16.B16; VEOR V17.B16, V17.B16, V17.B16; \
	VEOR V18.B16, V18.B16, V18.B16; VEOR V19.B16, V19.B16, V19.B16; \
	VEOR V20.B16, V20.B16, V20.B16; VEOR V21.B16, V21.B16, V21.B16; \
	VEOR V22.B16, V22.B16, V22.B16; VEOR V23.B16, V23.B16, V23.B16

// FMAROW(xp, a, b) loads 16 floats of one x row and adds codes V4-V7
// times them into accumulators a, b.
#define FMAROW(xp, a, b) \
	VLD1.P 64(xp), [V8.S4, V9.S4, V10.S4, V11.S4]; \
	VFMLA V4.S4, V8.S4, a; VFMLA V5.S4, V9.S4, b; \
	VFMLA V6.S4, V10.S4, a; VFMLA V7.S4, V11.S4, b

#define FMA4ROWS \
	FMAROW(R2, V16.S4, V17.S4); FMAROW(R6, V18.S4, V19.S4); \
	FMAROW(R7, V20.S4, V21.S4); FMAROW(R8, V22.S4, V23.S4)

// SCALE4 adds s[g]·(group sums) to the four totals.
#define SCALE4 \
	FADD(17, 16, 16); FADD(19, 18, 18); FADD(21, 20, 20); FADD(23, 22, 22); \
	FMOVS.P 4(R1), F28; VDUP V28.S[0], V29.S4; \
	VFMLA V16.S4, V29.S4, V24.S4; VFMLA V18.S4, V29.S4, V25.S4; \
	VFMLA V20.S4, V29.S4, V26.S4; VFMLA V22.S4, V29.S4, V27.S4

#define SETUP4 \
	MOVD w+0(FP), R0; MOVD s+8(FP), R1; MOVD x+16(FP), R2; MOVD xstride+24(FP), R9; \
	MOVD groups+32(FP), R3; MOVD steps+40(FP), R4; \
	ADD R9, R2, R6; ADD R9, R6, R7; ADD R9, R7, R8; \
	VEOR V24.B16, V24.B16, V24.B16; VEOR V25.B16, V25.B16, V25.B16; \
	VEOR V26.B16, V26.B16, V26.B16; VEOR V27.B16, V27.B16, V27.B16

#define STORE4 \
	MOVD out+48(FP), R0; \
	HSUM4(24); HSUM4(25); HSUM4(26); HSUM4(27); \
	FMOVS F24, 0(R0); FMOVS F25, 4(R0); FMOVS F26, 8(R0); FMOVS F27, 12(R0)

// func dotNEON(a, b *float32, n int) float32   (n a multiple of 16)
TEXT ·dotNEON(SB), NOSPLIT, $0-28
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD n+16(FP), R2
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	LSR  $4, R2
	CBZ  R2, dotdone
dotloop:
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R1), [V8.S4, V9.S4, V10.S4, V11.S4]
	VFMLA V4.S4, V8.S4, V0.S4
	VFMLA V5.S4, V9.S4, V1.S4
	VFMLA V6.S4, V10.S4, V2.S4
	VFMLA V7.S4, V11.S4, V3.S4
	SUBS $1, R2, R2
	BNE  dotloop
dotdone:
	FADD(1, 0, 0)
	FADD(3, 2, 2)
	FADD(2, 0, 0)
	HSUM4(0)
	FMOVS F0, ret+24(FP)
	RET

// func axpyNEON(dst, src *float32, a float32, n int)   (n a multiple of 16)
TEXT ·axpyNEON(SB), NOSPLIT, $0-32
	MOVD  dst+0(FP), R0
	MOVD  src+8(FP), R1
	FMOVS a+16(FP), F16
	MOVD  n+24(FP), R2
	VDUP  V16.S[0], V17.S4
	LSR   $4, R2
	CBZ   R2, axpydone
axpyloop:
	VLD1   (R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA  V17.S4, V4.S4, V0.S4
	VFMLA  V17.S4, V5.S4, V1.S4
	VFMLA  V17.S4, V6.S4, V2.S4
	VFMLA  V17.S4, V7.S4, V3.S4
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUBS   $1, R2, R2
	BNE    axpyloop
axpydone:
	RET

// func cvtBF16NEON(dst *float32, src *uint16, n int)   (n a multiple of 8)
TEXT ·cvtBF16NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2
	VEOR V31.B16, V31.B16, V31.B16
	LSR  $3, R2
	CBZ  R2, bf16done
bf16loop:
	VLD1.P 16(R1), [V0.H8]
	VZIP1  V0.H8, V31.H8, V1.H8
	VZIP2  V0.H8, V31.H8, V2.H8
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUBS   $1, R2, R2
	BNE    bf16loop
bf16done:
	RET

// func cvtF16NEON(dst *float32, src *uint16, n int)   (n a multiple of 8)
TEXT ·cvtF16NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2
	LSR  $3, R2
	CBZ  R2, f16done
f16loop:
	VLD1.P 16(R1), [V0.H8]
	FCVTL(0, 1)
	FCVTL2(0, 2)
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUBS   $1, R2, R2
	BNE    f16loop
f16done:
	RET

// func q4dotNEON(w *byte, s, x *float32, groups, steps int) float32
// Σ_g s[g]·Σ q·x over one packed 4-bit row; x laid out per 16 elements as
// [8 even][8 odd - 16·even] (permute16): whole bytes (16·hi+lo) times the
// even part plus high nibbles times the odd part give lo·even + hi·odd.
TEXT ·q4dotNEON(SB), NOSPLIT, $0-44
	MOVD w+0(FP), R0
	MOVD s+8(FP), R1
	MOVD x+16(FP), R2
	MOVD groups+24(FP), R3
	MOVD steps+32(FP), R4
	VEOR V20.B16, V20.B16, V20.B16
q4group:
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	MOVD R4, R5
q4step:
	VLD1.P 8(R0), [V0.B8]
	VUSHR  $4, V0.B8, V2.B8
	VUXTL  V0.B8, V1.H8
	VUXTL  V2.B8, V3.H8
	VUXTL  V1.H4, V4.S4
	VUXTL2 V1.H8, V5.S4
	VUXTL  V3.H4, V6.S4
	VUXTL2 V3.H8, V7.S4
	UCVTF(4, 4)
	UCVTF(5, 5)
	UCVTF(6, 6)
	UCVTF(7, 7)
	VLD1.P 64(R2), [V8.S4, V9.S4, V10.S4, V11.S4]
	VFMLA  V4.S4, V8.S4, V16.S4
	VFMLA  V5.S4, V9.S4, V17.S4
	VFMLA  V6.S4, V10.S4, V16.S4
	VFMLA  V7.S4, V11.S4, V17.S4
	SUBS   $1, R5, R5
	BNE    q4step
	FADD(17, 16, 16)
	FMOVS.P 4(R1), F18
	VDUP   V18.S[0], V19.S4
	VFMLA  V16.S4, V19.S4, V20.S4
	SUBS   $1, R3, R3
	BNE    q4group
	HSUM4(20)
	FMOVS F20, ret+40(FP)
	RET

// func q8dotNEON(w *byte, s, x *float32, groups, steps int) float32
// Σ_g s[g]·Σ q·x over one packed 8-bit row (16 codes per step).
TEXT ·q8dotNEON(SB), NOSPLIT, $0-44
	MOVD w+0(FP), R0
	MOVD s+8(FP), R1
	MOVD x+16(FP), R2
	MOVD groups+24(FP), R3
	MOVD steps+32(FP), R4
	VEOR V20.B16, V20.B16, V20.B16
q8group:
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	MOVD R4, R5
q8step:
	VLD1.P 16(R0), [V0.B16]
	VUXTL  V0.B8, V1.H8
	VUXTL2 V0.B16, V3.H8
	VUXTL  V1.H4, V4.S4
	VUXTL2 V1.H8, V5.S4
	VUXTL  V3.H4, V6.S4
	VUXTL2 V3.H8, V7.S4
	UCVTF(4, 4)
	UCVTF(5, 5)
	UCVTF(6, 6)
	UCVTF(7, 7)
	VLD1.P 64(R2), [V8.S4, V9.S4, V10.S4, V11.S4]
	VFMLA  V4.S4, V8.S4, V16.S4
	VFMLA  V5.S4, V9.S4, V17.S4
	VFMLA  V6.S4, V10.S4, V16.S4
	VFMLA  V7.S4, V11.S4, V17.S4
	SUBS   $1, R5, R5
	BNE    q8step
	FADD(17, 16, 16)
	FMOVS.P 4(R1), F18
	VDUP   V18.S[0], V19.S4
	VFMLA  V16.S4, V19.S4, V20.S4
	SUBS   $1, R3, R3
	BNE    q8group
	HSUM4(20)
	FMOVS F20, ret+40(FP)
	RET

// func qi4dotNEON(w *byte, s *float32, xq *int16, sx *float32, groups, blocks int) float32
// Decode form: Σ_g s[g]·sx[g]·Σ q·xq with exact int32 sums (SMLAL); xq per
// 32 elements is [16 even][16 odd], lining up with the low and high
// nibbles of 16 bytes. blocks is the group size / 32.
TEXT ·qi4dotNEON(SB), NOSPLIT, $0-52
	MOVD w+0(FP), R0
	MOVD s+8(FP), R1
	MOVD xq+16(FP), R2
	MOVD sx+24(FP), R6
	MOVD groups+32(FP), R3
	MOVD blocks+40(FP), R4
	VMOVI $15, V30.B16
	VEOR  V20.B16, V20.B16, V20.B16
qi4group:
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	MOVD R4, R5
qi4block:
	VLD1.P 16(R0), [V0.B16]
	VUSHR  $4, V0.B16, V2.B16
	VAND   V30.B16, V0.B16, V0.B16
	VUXTL  V0.B8, V4.H8
	VUXTL2 V0.B16, V5.H8
	VUXTL  V2.B8, V6.H8
	VUXTL2 V2.B16, V7.H8
	VLD1.P 64(R2), [V8.H8, V9.H8, V10.H8, V11.H8]
	SMLAL(8, 4, 16)
	SMLAL2(8, 4, 17)
	SMLAL(9, 5, 16)
	SMLAL2(9, 5, 17)
	SMLAL(10, 6, 16)
	SMLAL2(10, 6, 17)
	SMLAL(11, 7, 16)
	SMLAL2(11, 7, 17)
	SUBS   $1, R5, R5
	BNE    qi4block
	VADD   V17.S4, V16.S4, V16.S4
	SCVTF(16, 16)
	FMOVS.P 4(R1), F18
	FMOVS.P 4(R6), F19
	FMULS  F19, F18, F18
	VDUP   V18.S[0], V19.S4
	VFMLA  V16.S4, V19.S4, V20.S4
	SUBS   $1, R3, R3
	BNE    qi4group
	HSUM4(20)
	FMOVS F20, ret+48(FP)
	RET

// func qi8dotNEON(w *byte, s *float32, xq *int16, sx *float32, groups, blocks int) float32
// As qi4dotNEON for 8-bit codes, xq in natural order; blocks is the
// group size / 16.
TEXT ·qi8dotNEON(SB), NOSPLIT, $0-52
	MOVD w+0(FP), R0
	MOVD s+8(FP), R1
	MOVD xq+16(FP), R2
	MOVD sx+24(FP), R6
	MOVD groups+32(FP), R3
	MOVD blocks+40(FP), R4
	VEOR V20.B16, V20.B16, V20.B16
qi8group:
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	MOVD R4, R5
qi8block:
	VLD1.P 16(R0), [V0.B16]
	VUXTL  V0.B8, V4.H8
	VUXTL2 V0.B16, V5.H8
	VLD1.P 32(R2), [V8.H8, V9.H8]
	SMLAL(8, 4, 16)
	SMLAL2(8, 4, 17)
	SMLAL(9, 5, 16)
	SMLAL2(9, 5, 17)
	SUBS   $1, R5, R5
	BNE    qi8block
	VADD   V17.S4, V16.S4, V16.S4
	SCVTF(16, 16)
	FMOVS.P 4(R1), F18
	FMOVS.P 4(R6), F19
	FMULS  F19, F18, F18
	VDUP   V18.S[0], V19.S4
	VFMLA  V16.S4, V19.S4, V20.S4
	SUBS   $1, R3, R3
	BNE    qi8group
	HSUM4(20)
	FMOVS F20, ret+48(FP)
	RET


// func q4x4NEON(w *byte, s, x *float32, xstride, groups, steps int, out *[4]float32)
// x per 16 elements is permute16's [8 even][8 odd]; the low nibbles are
// masked, the high ones shifted down.
TEXT ·q4x4NEON(SB), NOSPLIT, $0-56
	SETUP4
	VMOVI $15, V30.B16
q4x4group:
	ZERO8
	MOVD R4, R5
q4x4step:
	VLD1.P 8(R0), [V0.B8]
	VUSHR  $4, V0.B8, V2.B8
	VAND   V30.B16, V0.B16, V0.B16
	VUXTL  V0.B8, V1.H8
	VUXTL  V2.B8, V3.H8
	VUXTL  V1.H4, V4.S4
	VUXTL2 V1.H8, V5.S4
	VUXTL  V3.H4, V6.S4
	VUXTL2 V3.H8, V7.S4
	UCVTF(4, 4)
	UCVTF(5, 5)
	UCVTF(6, 6)
	UCVTF(7, 7)
	FMA4ROWS
	SUBS $1, R5, R5
	BNE  q4x4step
	SCALE4
	SUBS $1, R3, R3
	BNE  q4x4group
	STORE4
	RET

// func q8x4NEON(w *byte, s, x *float32, xstride, groups, steps int, out *[4]float32)
TEXT ·q8x4NEON(SB), NOSPLIT, $0-56
	SETUP4
q8x4group:
	ZERO8
	MOVD R4, R5
q8x4step:
	VLD1.P 16(R0), [V0.B16]
	VUXTL  V0.B8, V1.H8
	VUXTL2 V0.B16, V3.H8
	VUXTL  V1.H4, V4.S4
	VUXTL2 V1.H8, V5.S4
	VUXTL  V3.H4, V6.S4
	VUXTL2 V3.H8, V7.S4
	UCVTF(4, 4)
	UCVTF(5, 5)
	UCVTF(6, 6)
	UCVTF(7, 7)
	FMA4ROWS
	SUBS $1, R5, R5
	BNE  q8x4step
	SCALE4
	SUBS $1, R3, R3
	BNE  q8x4group
	STORE4
	RET

// func spinPause()
TEXT ·spinPause(SB), NOSPLIT, $0-0
	YIELD
	RET
