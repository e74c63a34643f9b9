// AVX2 attention kernels (straight-line code, not generated): the ymm forms of
// attn512_amd64.s (same attnArgs, same layouts: four query vectors or
// accumulators d floats apart, score rows attnBlock floats apart, rows
// prefetched pf bytes ahead into L2).

#include "textflag.h"

// func attnScores4AVX(a *attnArgs)
// s_v[j] = q_v · k_j for v < 4 and j < keys (keys a multiple of 2, d a
// multiple of 8): 2 keys × 4 vectors = 8 accumulators (Y0-Y7, Y(4j+v))
// over d in steps of 8, then horizontal adds to one 4-float vector per key
// (X0, X4) and an unpack to two-float stores per vector. Registers: AX
// args, R8 q_0 at the column, R9 d in bytes, R10 3·R9, SI key row of the
// tile at the column, DX key stride, R11 prefetch distance, R15 prefetch
// address, CX tiles left, DI column offset, BX offset in the score rows,
// R14 s_0.
TEXT ·attnScores4AVX(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R14
	MOVQ 16(AX), SI
	MOVQ 24(AX), DX
	MOVQ 48(AX), R11
	MOVQ 32(AX), CX
	SHRQ $1, CX
	JZ   sdone
	MOVQ 40(AX), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	XORQ BX, BX

stile:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   DI, DI

sdim:
	LEAQ       (SI)(R11*1), R15
	PREFETCHT1 (R15)
	PREFETCHT1 (R15)(DX*1)
	VMOVUPS    (SI), Y8
	VMOVUPS    (SI)(DX*1), Y9
	VMOVUPS    (R8), Y10
	VMOVUPS    (R8)(R9*1), Y11
	VMOVUPS    (R8)(R9*2), Y12
	VMOVUPS    (R8)(R10*1), Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y13, Y8, Y3
	VFMADD231PS Y10, Y9, Y4
	VFMADD231PS Y11, Y9, Y5
	VFMADD231PS Y12, Y9, Y6
	VFMADD231PS Y13, Y9, Y7
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, DI
	CMPQ DI, R9
	JLT  sdim

	// Y(4j+v) sums to s_v[j]: X(4j) = (s_0[j], s_1[j], s_2[j], s_3[j]).
	VHADDPS      Y1, Y0, Y14
	VHADDPS      Y3, Y2, Y15
	VHADDPS      Y15, Y14, Y14
	VEXTRACTF128 $1, Y14, X15
	VADDPS       X15, X14, X0
	VHADDPS      Y5, Y4, Y14
	VHADDPS      Y7, Y6, Y15
	VHADDPS      Y15, Y14, Y14
	VEXTRACTF128 $1, Y14, X15
	VADDPS       X15, X14, X4
	VUNPCKLPS X4, X0, X8
	VUNPCKHPS X4, X0, X9
	VMOVLPS   X8, (R14)(BX*1)
	VMOVHPS   X8, 256(R14)(BX*1)
	VMOVLPS   X9, 512(R14)(BX*1)
	VMOVHPS   X9, 768(R14)(BX*1)
	ADDQ      $8, BX
	SUBQ      R9, R8
	SUBQ      R9, SI
	LEAQ      (SI)(DX*2), SI
	DECQ      CX
	JNZ       stile

sdone:
	VZEROUPPER
	RET

// func attnPV4AVX(a *attnArgs)
// acc_v[i] += Σ_j p_v[j]·v_j[i] for v < 4, j < keys in order (keys > 0),
// i < d (d a multiple of 16): per 16-float chunk of d the 8 accumulators
// (Y(2v+c)) stay in registers over all the keys. Registers as in attnPV4.
TEXT ·attnPV4AVX(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R12
	MOVQ 16(AX), SI
	MOVQ 24(AX), DX
	MOVQ 48(AX), R11
	MOVQ 40(AX), R9
	MOVQ R9, R15
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	SHRQ $4, R15
	JZ   pdone
	CMPQ 32(AX), $0
	JLE  pdone

pchunk:
	VMOVUPS 0(R8), Y0
	VMOVUPS 32(R8), Y1
	VMOVUPS 0(R8)(R9*1), Y2
	VMOVUPS 32(R8)(R9*1), Y3
	VMOVUPS 0(R8)(R9*2), Y4
	VMOVUPS 32(R8)(R9*2), Y5
	VMOVUPS 0(R8)(R10*1), Y6
	VMOVUPS 32(R8)(R10*1), Y7
	MOVQ SI, DI
	XORQ CX, CX

pkey:
	PREFETCHT1 (DI)(R11*1)
	VMOVUPS 0(DI), Y8
	VMOVUPS 32(DI), Y9
	VBROADCASTSS 0(R12)(CX*4), Y10
	VBROADCASTSS 256(R12)(CX*4), Y11
	VBROADCASTSS 512(R12)(CX*4), Y12
	VBROADCASTSS 768(R12)(CX*4), Y13
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ DX, DI
	INCQ CX
	CMPQ CX, 32(AX)
	JLT  pkey

	VMOVUPS Y0, 0(R8)
	VMOVUPS Y1, 32(R8)
	VMOVUPS Y2, 0(R8)(R9*1)
	VMOVUPS Y3, 32(R8)(R9*1)
	VMOVUPS Y4, 0(R8)(R9*2)
	VMOVUPS Y5, 32(R8)(R9*2)
	VMOVUPS Y6, 0(R8)(R10*1)
	VMOVUPS Y7, 32(R8)(R10*1)
	ADDQ $64, R8
	ADDQ $64, SI
	DECQ R15
	JNZ  pchunk

pdone:
	VZEROUPPER
	RET

// func attnScores2AVX(a *attnArgs)
// attnScores4AVX for two query vectors: 4 keys × 2 vectors per tile, the
// same 8 accumulators and reduction with virtual vector u = v + 2g for key
// pair g (keys 2g, 2g+1). keys is a multiple of 4. Registers as in
// attnScores4AVX.
TEXT ·attnScores2AVX(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R14
	MOVQ 16(AX), SI
	MOVQ 24(AX), DX
	LEAQ (DX)(DX*2), R12
	MOVQ 48(AX), R11
	MOVQ 32(AX), CX
	SHRQ $2, CX
	JZ   s2done
	MOVQ 40(AX), R9
	SHLQ $2, R9
	XORQ BX, BX

s2tile:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   DI, DI

s2dim:
	LEAQ       (SI)(R11*1), R15
	PREFETCHT1 (R15)
	PREFETCHT1 (R15)(DX*1)
	PREFETCHT1 (R15)(DX*2)
	PREFETCHT1 (R15)(R12*1)
	VMOVUPS    (SI), Y8
	VMOVUPS    (SI)(DX*1), Y9
	VMOVUPS    (SI)(DX*2), Y10
	VMOVUPS    (SI)(R12*1), Y11
	VMOVUPS    (R8), Y12
	VMOVUPS    (R8)(R9*1), Y13
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y13, Y8, Y1
	VFMADD231PS Y12, Y10, Y2
	VFMADD231PS Y13, Y10, Y3
	VFMADD231PS Y12, Y9, Y4
	VFMADD231PS Y13, Y9, Y5
	VFMADD231PS Y12, Y11, Y6
	VFMADD231PS Y13, Y11, Y7
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, DI
	CMPQ DI, R9
	JLT  s2dim

	VHADDPS      Y1, Y0, Y14
	VHADDPS      Y3, Y2, Y15
	VHADDPS      Y15, Y14, Y14
	VEXTRACTF128 $1, Y14, X15
	VADDPS       X15, X14, X0
	VHADDPS      Y5, Y4, Y14
	VHADDPS      Y7, Y6, Y15
	VHADDPS      Y15, Y14, Y14
	VEXTRACTF128 $1, Y14, X15
	VADDPS       X15, X14, X4
	VUNPCKLPS X4, X0, X8
	VUNPCKHPS X4, X0, X9
	VMOVLPS   X8, (R14)(BX*1)
	VMOVHPS   X8, 256(R14)(BX*1)
	VMOVLPS   X9, 8(R14)(BX*1)
	VMOVHPS   X9, 264(R14)(BX*1)
	ADDQ      $16, BX
	SUBQ      R9, R8
	SUBQ      R9, SI
	LEAQ      (SI)(DX*4), SI
	DECQ      CX
	JNZ       s2tile

s2done:
	VZEROUPPER
	RET

// func attnPV2AVX(a *attnArgs)
// attnPV4AVX for two accumulators: per 32-float chunk of d (d a multiple
// of 32) the 8 accumulators (Y(4v+c)) stay in registers over all the keys.
TEXT ·attnPV2AVX(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R12
	MOVQ 16(AX), SI
	MOVQ 24(AX), DX
	MOVQ 48(AX), R11
	MOVQ 40(AX), R9
	MOVQ R9, R15
	SHLQ $2, R9
	SHRQ $5, R15
	JZ   p2done
	CMPQ 32(AX), $0
	JLE  p2done

p2chunk:
	VMOVUPS 0(R8), Y0
	VMOVUPS 32(R8), Y1
	VMOVUPS 64(R8), Y2
	VMOVUPS 96(R8), Y3
	VMOVUPS 0(R8)(R9*1), Y4
	VMOVUPS 32(R8)(R9*1), Y5
	VMOVUPS 64(R8)(R9*1), Y6
	VMOVUPS 96(R8)(R9*1), Y7
	MOVQ SI, DI
	XORQ CX, CX

p2key:
	PREFETCHT1 (DI)(R11*1)
	PREFETCHT1 64(DI)(R11*1)
	VMOVUPS 0(DI), Y8
	VMOVUPS 32(DI), Y9
	VMOVUPS 64(DI), Y10
	VMOVUPS 96(DI), Y11
	VBROADCASTSS 0(R12)(CX*4), Y12
	VBROADCASTSS 256(R12)(CX*4), Y13
	VFMADD231PS Y8, Y12, Y0
	VFMADD231PS Y9, Y12, Y1
	VFMADD231PS Y10, Y12, Y2
	VFMADD231PS Y11, Y12, Y3
	VFMADD231PS Y8, Y13, Y4
	VFMADD231PS Y9, Y13, Y5
	VFMADD231PS Y10, Y13, Y6
	VFMADD231PS Y11, Y13, Y7
	ADDQ DX, DI
	INCQ CX
	CMPQ CX, 32(AX)
	JLT  p2key

	VMOVUPS Y0, 0(R8)
	VMOVUPS Y1, 32(R8)
	VMOVUPS Y2, 64(R8)
	VMOVUPS Y3, 96(R8)
	VMOVUPS Y4, 0(R8)(R9*1)
	VMOVUPS Y5, 32(R8)(R9*1)
	VMOVUPS Y6, 64(R8)(R9*1)
	VMOVUPS Y7, 96(R8)(R9*1)
	ADDQ $128, R8
	ADDQ $128, SI
	DECQ R15
	JNZ  p2chunk

p2done:
	VZEROUPPER
	RET
