#include "textflag.h"

// Vector tanh and GELU (AVX2/FMA, 8 lanes) with the formulas of mathf.go:
// tanh(a) = 1 - 2/(e^{2a}+1) with expf's range reduction and degree-6
// polynomial, the odd polynomial below |x| = 0.0625, exactly ±1 from
// |x| = 9, NaN passed through. Constants are 8-lane vectors because VEX
// FMAs take no broadcast operands.

DATA log2e<>+0(SB)/4, $0x3fb8aa3b
DATA log2e<>+4(SB)/4, $0x3fb8aa3b
DATA log2e<>+8(SB)/4, $0x3fb8aa3b
DATA log2e<>+12(SB)/4, $0x3fb8aa3b
DATA log2e<>+16(SB)/4, $0x3fb8aa3b
DATA log2e<>+20(SB)/4, $0x3fb8aa3b
DATA log2e<>+24(SB)/4, $0x3fb8aa3b
DATA log2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL log2e<>(SB), RODATA|NOPTR, $32
DATA rnd<>+0(SB)/4, $0x4b400000
DATA rnd<>+4(SB)/4, $0x4b400000
DATA rnd<>+8(SB)/4, $0x4b400000
DATA rnd<>+12(SB)/4, $0x4b400000
DATA rnd<>+16(SB)/4, $0x4b400000
DATA rnd<>+20(SB)/4, $0x4b400000
DATA rnd<>+24(SB)/4, $0x4b400000
DATA rnd<>+28(SB)/4, $0x4b400000
GLOBL rnd<>(SB), RODATA|NOPTR, $32
DATA ln2hi<>+0(SB)/4, $0x3f318000
DATA ln2hi<>+4(SB)/4, $0x3f318000
DATA ln2hi<>+8(SB)/4, $0x3f318000
DATA ln2hi<>+12(SB)/4, $0x3f318000
DATA ln2hi<>+16(SB)/4, $0x3f318000
DATA ln2hi<>+20(SB)/4, $0x3f318000
DATA ln2hi<>+24(SB)/4, $0x3f318000
DATA ln2hi<>+28(SB)/4, $0x3f318000
GLOBL ln2hi<>(SB), RODATA|NOPTR, $32
DATA ln2lo<>+0(SB)/4, $0xb95e8083
DATA ln2lo<>+4(SB)/4, $0xb95e8083
DATA ln2lo<>+8(SB)/4, $0xb95e8083
DATA ln2lo<>+12(SB)/4, $0xb95e8083
DATA ln2lo<>+16(SB)/4, $0xb95e8083
DATA ln2lo<>+20(SB)/4, $0xb95e8083
DATA ln2lo<>+24(SB)/4, $0xb95e8083
DATA ln2lo<>+28(SB)/4, $0xb95e8083
GLOBL ln2lo<>(SB), RODATA|NOPTR, $32
DATA one<>+0(SB)/4, $0x3f800000
DATA one<>+4(SB)/4, $0x3f800000
DATA one<>+8(SB)/4, $0x3f800000
DATA one<>+12(SB)/4, $0x3f800000
DATA one<>+16(SB)/4, $0x3f800000
DATA one<>+20(SB)/4, $0x3f800000
DATA one<>+24(SB)/4, $0x3f800000
DATA one<>+28(SB)/4, $0x3f800000
GLOBL one<>(SB), RODATA|NOPTR, $32
DATA half<>+0(SB)/4, $0x3f000000
DATA half<>+4(SB)/4, $0x3f000000
DATA half<>+8(SB)/4, $0x3f000000
DATA half<>+12(SB)/4, $0x3f000000
DATA half<>+16(SB)/4, $0x3f000000
DATA half<>+20(SB)/4, $0x3f000000
DATA half<>+24(SB)/4, $0x3f000000
DATA half<>+28(SB)/4, $0x3f000000
GLOBL half<>(SB), RODATA|NOPTR, $32
DATA c6<>+0(SB)/4, $0x3e2aaaab
DATA c6<>+4(SB)/4, $0x3e2aaaab
DATA c6<>+8(SB)/4, $0x3e2aaaab
DATA c6<>+12(SB)/4, $0x3e2aaaab
DATA c6<>+16(SB)/4, $0x3e2aaaab
DATA c6<>+20(SB)/4, $0x3e2aaaab
DATA c6<>+24(SB)/4, $0x3e2aaaab
DATA c6<>+28(SB)/4, $0x3e2aaaab
GLOBL c6<>(SB), RODATA|NOPTR, $32
DATA c24<>+0(SB)/4, $0x3d2aaaab
DATA c24<>+4(SB)/4, $0x3d2aaaab
DATA c24<>+8(SB)/4, $0x3d2aaaab
DATA c24<>+12(SB)/4, $0x3d2aaaab
DATA c24<>+16(SB)/4, $0x3d2aaaab
DATA c24<>+20(SB)/4, $0x3d2aaaab
DATA c24<>+24(SB)/4, $0x3d2aaaab
DATA c24<>+28(SB)/4, $0x3d2aaaab
GLOBL c24<>(SB), RODATA|NOPTR, $32
DATA c120<>+0(SB)/4, $0x3c088889
DATA c120<>+4(SB)/4, $0x3c088889
DATA c120<>+8(SB)/4, $0x3c088889
DATA c120<>+12(SB)/4, $0x3c088889
DATA c120<>+16(SB)/4, $0x3c088889
DATA c120<>+20(SB)/4, $0x3c088889
DATA c120<>+24(SB)/4, $0x3c088889
DATA c120<>+28(SB)/4, $0x3c088889
GLOBL c120<>(SB), RODATA|NOPTR, $32
DATA c720<>+0(SB)/4, $0x3ab60b61
DATA c720<>+4(SB)/4, $0x3ab60b61
DATA c720<>+8(SB)/4, $0x3ab60b61
DATA c720<>+12(SB)/4, $0x3ab60b61
DATA c720<>+16(SB)/4, $0x3ab60b61
DATA c720<>+20(SB)/4, $0x3ab60b61
DATA c720<>+24(SB)/4, $0x3ab60b61
DATA c720<>+28(SB)/4, $0x3ab60b61
GLOBL c720<>(SB), RODATA|NOPTR, $32
DATA two<>+0(SB)/4, $0x40000000
DATA two<>+4(SB)/4, $0x40000000
DATA two<>+8(SB)/4, $0x40000000
DATA two<>+12(SB)/4, $0x40000000
DATA two<>+16(SB)/4, $0x40000000
DATA two<>+20(SB)/4, $0x40000000
DATA two<>+24(SB)/4, $0x40000000
DATA two<>+28(SB)/4, $0x40000000
GLOBL two<>(SB), RODATA|NOPTR, $32
DATA t3<>+0(SB)/4, $0xbeaaaaab
DATA t3<>+4(SB)/4, $0xbeaaaaab
DATA t3<>+8(SB)/4, $0xbeaaaaab
DATA t3<>+12(SB)/4, $0xbeaaaaab
DATA t3<>+16(SB)/4, $0xbeaaaaab
DATA t3<>+20(SB)/4, $0xbeaaaaab
DATA t3<>+24(SB)/4, $0xbeaaaaab
DATA t3<>+28(SB)/4, $0xbeaaaaab
GLOBL t3<>(SB), RODATA|NOPTR, $32
DATA t15<>+0(SB)/4, $0x3e088889
DATA t15<>+4(SB)/4, $0x3e088889
DATA t15<>+8(SB)/4, $0x3e088889
DATA t15<>+12(SB)/4, $0x3e088889
DATA t15<>+16(SB)/4, $0x3e088889
DATA t15<>+20(SB)/4, $0x3e088889
DATA t15<>+24(SB)/4, $0x3e088889
DATA t15<>+28(SB)/4, $0x3e088889
GLOBL t15<>(SB), RODATA|NOPTR, $32
DATA t315<>+0(SB)/4, $0xbd5d0dd1
DATA t315<>+4(SB)/4, $0xbd5d0dd1
DATA t315<>+8(SB)/4, $0xbd5d0dd1
DATA t315<>+12(SB)/4, $0xbd5d0dd1
DATA t315<>+16(SB)/4, $0xbd5d0dd1
DATA t315<>+20(SB)/4, $0xbd5d0dd1
DATA t315<>+24(SB)/4, $0xbd5d0dd1
DATA t315<>+28(SB)/4, $0xbd5d0dd1
GLOBL t315<>(SB), RODATA|NOPTR, $32
DATA small<>+0(SB)/4, $0x3d800000
DATA small<>+4(SB)/4, $0x3d800000
DATA small<>+8(SB)/4, $0x3d800000
DATA small<>+12(SB)/4, $0x3d800000
DATA small<>+16(SB)/4, $0x3d800000
DATA small<>+20(SB)/4, $0x3d800000
DATA small<>+24(SB)/4, $0x3d800000
DATA small<>+28(SB)/4, $0x3d800000
GLOBL small<>(SB), RODATA|NOPTR, $32
DATA big<>+0(SB)/4, $0x41100000
DATA big<>+4(SB)/4, $0x41100000
DATA big<>+8(SB)/4, $0x41100000
DATA big<>+12(SB)/4, $0x41100000
DATA big<>+16(SB)/4, $0x41100000
DATA big<>+20(SB)/4, $0x41100000
DATA big<>+24(SB)/4, $0x41100000
DATA big<>+28(SB)/4, $0x41100000
GLOBL big<>(SB), RODATA|NOPTR, $32
DATA absm<>+0(SB)/4, $0x7fffffff
DATA absm<>+4(SB)/4, $0x7fffffff
DATA absm<>+8(SB)/4, $0x7fffffff
DATA absm<>+12(SB)/4, $0x7fffffff
DATA absm<>+16(SB)/4, $0x7fffffff
DATA absm<>+20(SB)/4, $0x7fffffff
DATA absm<>+24(SB)/4, $0x7fffffff
DATA absm<>+28(SB)/4, $0x7fffffff
GLOBL absm<>(SB), RODATA|NOPTR, $32
DATA sgnm<>+0(SB)/4, $0x80000000
DATA sgnm<>+4(SB)/4, $0x80000000
DATA sgnm<>+8(SB)/4, $0x80000000
DATA sgnm<>+12(SB)/4, $0x80000000
DATA sgnm<>+16(SB)/4, $0x80000000
DATA sgnm<>+20(SB)/4, $0x80000000
DATA sgnm<>+24(SB)/4, $0x80000000
DATA sgnm<>+28(SB)/4, $0x80000000
GLOBL sgnm<>(SB), RODATA|NOPTR, $32
DATA i127<>+0(SB)/4, $0x0000007f
DATA i127<>+4(SB)/4, $0x0000007f
DATA i127<>+8(SB)/4, $0x0000007f
DATA i127<>+12(SB)/4, $0x0000007f
DATA i127<>+16(SB)/4, $0x0000007f
DATA i127<>+20(SB)/4, $0x0000007f
DATA i127<>+24(SB)/4, $0x0000007f
DATA i127<>+28(SB)/4, $0x0000007f
GLOBL i127<>(SB), RODATA|NOPTR, $32
DATA gc<>+0(SB)/4, $0x3f4c422a
DATA gc<>+4(SB)/4, $0x3f4c422a
DATA gc<>+8(SB)/4, $0x3f4c422a
DATA gc<>+12(SB)/4, $0x3f4c422a
DATA gc<>+16(SB)/4, $0x3f4c422a
DATA gc<>+20(SB)/4, $0x3f4c422a
DATA gc<>+24(SB)/4, $0x3f4c422a
DATA gc<>+28(SB)/4, $0x3f4c422a
GLOBL gc<>(SB), RODATA|NOPTR, $32
DATA g3<>+0(SB)/4, $0x3d372713
DATA g3<>+4(SB)/4, $0x3d372713
DATA g3<>+8(SB)/4, $0x3d372713
DATA g3<>+12(SB)/4, $0x3d372713
DATA g3<>+16(SB)/4, $0x3d372713
DATA g3<>+20(SB)/4, $0x3d372713
DATA g3<>+24(SB)/4, $0x3d372713
DATA g3<>+28(SB)/4, $0x3d372713
GLOBL g3<>(SB), RODATA|NOPTR, $32

// TANH8 sets Y1 = tanh(Y0); Y2-Y7 are clobbered.
#define TANH8 \
	VANDPS absm<>(SB), Y0, Y2; \
	VMINPS big<>(SB), Y2, Y3; \
	VADDPS Y3, Y3, Y3; \
	VMOVUPS rnd<>(SB), Y4; \
	VFMADD231PS log2e<>(SB), Y3, Y4; \
	VSUBPS rnd<>(SB), Y4, Y4; \
	VMOVAPS Y3, Y5; \
	VFNMADD231PS ln2hi<>(SB), Y4, Y5; \
	VFNMADD231PS ln2lo<>(SB), Y4, Y5; \
	VMOVUPS c720<>(SB), Y6; \
	VFMADD213PS c120<>(SB), Y5, Y6; \
	VFMADD213PS c24<>(SB), Y5, Y6; \
	VFMADD213PS c6<>(SB), Y5, Y6; \
	VFMADD213PS half<>(SB), Y5, Y6; \
	VFMADD213PS one<>(SB), Y5, Y6; \
	VFMADD213PS one<>(SB), Y5, Y6; \
	VCVTPS2DQ Y4, Y4; \
	VPADDD i127<>(SB), Y4, Y4; \
	VPSLLD $23, Y4, Y4; \
	VMULPS Y4, Y6, Y6; \
	VADDPS one<>(SB), Y6, Y6; \
	VMOVUPS two<>(SB), Y7; \
	VDIVPS Y6, Y7, Y7; \
	VMOVUPS one<>(SB), Y1; \
	VSUBPS Y7, Y1, Y1; \
	VMULPS Y2, Y2, Y3; \
	VMOVUPS t315<>(SB), Y4; \
	VFMADD213PS t15<>(SB), Y3, Y4; \
	VFMADD213PS t3<>(SB), Y3, Y4; \
	VFMADD213PS one<>(SB), Y3, Y4; \
	VMULPS Y2, Y4, Y4; \
	VCMPPS $1, small<>(SB), Y2, Y5; \
	VBLENDVPS Y5, Y4, Y1, Y1; \
	VCMPPS $13, big<>(SB), Y2, Y5; \
	VBLENDVPS Y5, one<>(SB), Y1, Y1; \
	VANDPS sgnm<>(SB), Y0, Y3; \
	VORPS Y3, Y1, Y1; \
	VCMPPS $3, Y0, Y0, Y5; \
	VBLENDVPS Y5, Y0, Y1, Y1

// func tanhAVX(dst, src *float32, n int, in, out float32)   (n a multiple of 8)
// dst[i] = tanh(src[i]·in)·out.
TEXT ·tanhAVX(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS in+24(FP), Y8
	VBROADCASTSS out+28(FP), Y9
	SHRQ $3, CX
	JZ   done

loop:
	VMULPS (SI), Y8, Y0
	TANH8
	VMULPS Y9, Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	RET

// func geluAVX(dst, src *float32, n int)   (n a multiple of 8)
// dst[i] = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), x = src[i].
TEXT ·geluAVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS (SI), Y8
	VMULPS Y8, Y8, Y0
	VMULPS Y8, Y0, Y0
	VMULPS g3<>(SB), Y0, Y0
	VADDPS Y8, Y0, Y0
	VMULPS gc<>(SB), Y0, Y0
	TANH8
	VADDPS one<>(SB), Y1, Y1
	VMULPS Y8, Y1, Y1
	VMULPS half<>(SB), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	RET
