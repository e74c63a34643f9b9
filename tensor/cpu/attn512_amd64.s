// AVX-512 attention kernels, written by hand: four query vectors of one
// KV head against a block of keys, and their four accumulators against
// the block's value rows. attnArgs (attn512_amd64.go) holds the operands;
// TestAttnArgsLayout keeps its offsets and these in step. The four query
// vectors or accumulators lie d floats apart, the four score rows
// attnBlock (64) floats apart. Both kernels prefetch the rows pf bytes
// ahead into L2 (PREFETCHT1: into L1 they leave the line fill buffers
// short, and a decode row reads its cache at half the speed).

#include "textflag.h"

// func attnScores4(a *attnArgs)
// s_v[j] = q_v · k_j for v < 4 and j < keys (keys a multiple of 4, d a
// multiple of 16): 4 keys × 4 vectors = 16 accumulators (Z0-Z15, Z(4j+v))
// over d in steps of 16, then a transposing reduction to one 4-float store
// per vector. Registers: AX args, R8 q_0 at the column, R9 d in bytes,
// R10 3·R9, SI key row of the tile at the column, DX key stride, R12
// 3·stride, R11 prefetch distance, R15 prefetch address, CX tiles left,
// DI column offset, BX offset in the score rows, R14 s_0.
TEXT ·attnScores4(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R14
	MOVQ 16(AX), SI
	MOVQ 24(AX), DX
	LEAQ (DX)(DX*2), R12
	MOVQ 48(AX), R11
	MOVQ 32(AX), CX
	SHRQ $2, CX
	JZ   sdone
	MOVQ 40(AX), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	XORQ BX, BX

stile:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
	VXORPS Z13, Z13, Z13
	VXORPS Z14, Z14, Z14
	VXORPS Z15, Z15, Z15
	XORQ   DI, DI

sdim:
	LEAQ       (SI)(R11*1), R15
	PREFETCHT1 (R15)
	PREFETCHT1 (R15)(DX*1)
	PREFETCHT1 (R15)(DX*2)
	PREFETCHT1 (R15)(R12*1)
	VMOVUPS    (SI), Z16
	VMOVUPS    (SI)(DX*1), Z17
	VMOVUPS    (SI)(DX*2), Z18
	VMOVUPS    (SI)(R12*1), Z19
	VMOVUPS    (R8), Z20
	VMOVUPS    (R8)(R9*1), Z21
	VMOVUPS    (R8)(R9*2), Z22
	VMOVUPS    (R8)(R10*1), Z23
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z21, Z16, Z1
	VFMADD231PS Z22, Z16, Z2
	VFMADD231PS Z23, Z16, Z3
	VFMADD231PS Z20, Z17, Z4
	VFMADD231PS Z21, Z17, Z5
	VFMADD231PS Z22, Z17, Z6
	VFMADD231PS Z23, Z17, Z7
	VFMADD231PS Z20, Z18, Z8
	VFMADD231PS Z21, Z18, Z9
	VFMADD231PS Z22, Z18, Z10
	VFMADD231PS Z23, Z18, Z11
	VFMADD231PS Z20, Z19, Z12
	VFMADD231PS Z21, Z19, Z13
	VFMADD231PS Z22, Z19, Z14
	VFMADD231PS Z23, Z19, Z15
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, DI
	CMPQ DI, R9
	JLT  sdim

	// Z(4j+v) sums to s_v[j]. Pairs of vectors of one key: 256-bit halves
	// added, then 128-bit quarters, leaving Z(4j) with lane v = partial
	// s_v[j]; two in-lane rounds then leave in Z0 lane v = s_v[0..3].
	VSHUFF32X4 $0x44, Z1, Z0, Z16
	VSHUFF32X4 $0xEE, Z1, Z0, Z17
	VADDPS     Z17, Z16, Z0
	VSHUFF32X4 $0x44, Z3, Z2, Z16
	VSHUFF32X4 $0xEE, Z3, Z2, Z17
	VADDPS     Z17, Z16, Z2
	VSHUFF32X4 $0x88, Z2, Z0, Z16
	VSHUFF32X4 $0xDD, Z2, Z0, Z17
	VADDPS     Z17, Z16, Z0
	VSHUFF32X4 $0x44, Z5, Z4, Z16
	VSHUFF32X4 $0xEE, Z5, Z4, Z17
	VADDPS     Z17, Z16, Z4
	VSHUFF32X4 $0x44, Z7, Z6, Z16
	VSHUFF32X4 $0xEE, Z7, Z6, Z17
	VADDPS     Z17, Z16, Z6
	VSHUFF32X4 $0x88, Z6, Z4, Z16
	VSHUFF32X4 $0xDD, Z6, Z4, Z17
	VADDPS     Z17, Z16, Z4
	VSHUFF32X4 $0x44, Z9, Z8, Z16
	VSHUFF32X4 $0xEE, Z9, Z8, Z17
	VADDPS     Z17, Z16, Z8
	VSHUFF32X4 $0x44, Z11, Z10, Z16
	VSHUFF32X4 $0xEE, Z11, Z10, Z17
	VADDPS     Z17, Z16, Z10
	VSHUFF32X4 $0x88, Z10, Z8, Z16
	VSHUFF32X4 $0xDD, Z10, Z8, Z17
	VADDPS     Z17, Z16, Z8
	VSHUFF32X4 $0x44, Z13, Z12, Z16
	VSHUFF32X4 $0xEE, Z13, Z12, Z17
	VADDPS     Z17, Z16, Z12
	VSHUFF32X4 $0x44, Z15, Z14, Z16
	VSHUFF32X4 $0xEE, Z15, Z14, Z17
	VADDPS     Z17, Z16, Z14
	VSHUFF32X4 $0x88, Z14, Z12, Z16
	VSHUFF32X4 $0xDD, Z14, Z12, Z17
	VADDPS     Z17, Z16, Z12
	VSHUFPS $0x88, Z4, Z0, Z16
	VSHUFPS $0xDD, Z4, Z0, Z17
	VADDPS  Z17, Z16, Z0
	VSHUFPS $0x88, Z12, Z8, Z16
	VSHUFPS $0xDD, Z12, Z8, Z17
	VADDPS  Z17, Z16, Z8
	VSHUFPS $0x88, Z8, Z0, Z16
	VSHUFPS $0xDD, Z8, Z0, Z17
	VADDPS  Z17, Z16, Z0
	VMOVUPS X0, (R14)(BX*1)
	VEXTRACTF32X4 $1, Z0, 256(R14)(BX*1)
	VEXTRACTF32X4 $2, Z0, 512(R14)(BX*1)
	VEXTRACTF32X4 $3, Z0, 768(R14)(BX*1)
	ADDQ    $16, BX
	SUBQ    R9, R8
	SUBQ    R9, SI
	LEAQ    (SI)(DX*4), SI
	DECQ    CX
	JNZ     stile

sdone:
	VZEROUPPER
	RET

// func attnPV4(a *attnArgs)
// acc_v[i] += Σ_j p_v[j]·v_j[i] for v < 4, j < keys in order (keys > 0),
// i < d (d a multiple of 64): per 64-float chunk of d the 16 accumulators
// (Z(4v+c)) stay in registers over all the keys. Registers: AX args, R8
// acc_0 at the chunk, R9 d in bytes, R10 3·R9, R12 p_0 (the score rows),
// SI value rows at the chunk, DI the key's value row, DX value stride,
// R11 prefetch distance, CX key index, R15 chunks left.
TEXT ·attnPV4(SB), NOSPLIT, $0-8
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
	SHRQ $6, R15
	JZ   pdone
	CMPQ 32(AX), $0
	JLE  pdone

pchunk:
	VMOVUPS 0(R8), Z0
	VMOVUPS 64(R8), Z1
	VMOVUPS 128(R8), Z2
	VMOVUPS 192(R8), Z3
	VMOVUPS 0(R8)(R9*1), Z4
	VMOVUPS 64(R8)(R9*1), Z5
	VMOVUPS 128(R8)(R9*1), Z6
	VMOVUPS 192(R8)(R9*1), Z7
	VMOVUPS 0(R8)(R9*2), Z8
	VMOVUPS 64(R8)(R9*2), Z9
	VMOVUPS 128(R8)(R9*2), Z10
	VMOVUPS 192(R8)(R9*2), Z11
	VMOVUPS 0(R8)(R10*1), Z12
	VMOVUPS 64(R8)(R10*1), Z13
	VMOVUPS 128(R8)(R10*1), Z14
	VMOVUPS 192(R8)(R10*1), Z15
	MOVQ SI, DI
	XORQ CX, CX

pkey:
	PREFETCHT1 0(DI)(R11*1)
	PREFETCHT1 64(DI)(R11*1)
	PREFETCHT1 128(DI)(R11*1)
	PREFETCHT1 192(DI)(R11*1)
	VMOVUPS 0(DI), Z16
	VMOVUPS 64(DI), Z17
	VMOVUPS 128(DI), Z18
	VMOVUPS 192(DI), Z19
	VBROADCASTSS 0(R12)(CX*4), Z20
	VBROADCASTSS 256(R12)(CX*4), Z21
	VBROADCASTSS 512(R12)(CX*4), Z22
	VBROADCASTSS 768(R12)(CX*4), Z23
	VFMADD231PS Z16, Z20, Z0
	VFMADD231PS Z17, Z20, Z1
	VFMADD231PS Z18, Z20, Z2
	VFMADD231PS Z19, Z20, Z3
	VFMADD231PS Z16, Z21, Z4
	VFMADD231PS Z17, Z21, Z5
	VFMADD231PS Z18, Z21, Z6
	VFMADD231PS Z19, Z21, Z7
	VFMADD231PS Z16, Z22, Z8
	VFMADD231PS Z17, Z22, Z9
	VFMADD231PS Z18, Z22, Z10
	VFMADD231PS Z19, Z22, Z11
	VFMADD231PS Z16, Z23, Z12
	VFMADD231PS Z17, Z23, Z13
	VFMADD231PS Z18, Z23, Z14
	VFMADD231PS Z19, Z23, Z15
	ADDQ DX, DI
	INCQ CX
	CMPQ CX, 32(AX)
	JLT  pkey

	VMOVUPS Z0, 0(R8)
	VMOVUPS Z1, 64(R8)
	VMOVUPS Z2, 128(R8)
	VMOVUPS Z3, 192(R8)
	VMOVUPS Z4, 0(R8)(R9*1)
	VMOVUPS Z5, 64(R8)(R9*1)
	VMOVUPS Z6, 128(R8)(R9*1)
	VMOVUPS Z7, 192(R8)(R9*1)
	VMOVUPS Z8, 0(R8)(R9*2)
	VMOVUPS Z9, 64(R8)(R9*2)
	VMOVUPS Z10, 128(R8)(R9*2)
	VMOVUPS Z11, 192(R8)(R9*2)
	VMOVUPS Z12, 0(R8)(R10*1)
	VMOVUPS Z13, 64(R8)(R10*1)
	VMOVUPS Z14, 128(R8)(R10*1)
	VMOVUPS Z15, 192(R8)(R10*1)
	ADDQ $256, R8
	ADDQ $256, SI
	DECQ R15
	JNZ  pchunk

pdone:
	VZEROUPPER
	RET
