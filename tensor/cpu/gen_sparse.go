//go:build ignore

// gen_sparse writes sparse_amd64.s, the column kernels of the sparse
// down_proj (sparse.go): go run gen_sparse.go (from tensor/cpu; go
// generate does the same). spcol4AVX512 keeps a block of 128 outputs in
// eight zmm registers, spcol4AVX2 half a block in eight ymm registers; both
// unroll over those registers, so they are generated rather than written
// out by hand.
package main

import (
	"fmt"
	"os"
	"strings"
)

type gen struct{ b strings.Builder }

func (g *gen) f(format string, a ...any) { fmt.Fprintf(&g.b, format+"\n", a...) }

// args is the Go signature both kernels share.
const args = "y *float32, q *byte, qstride uintptr, s unsafe.Pointer, b unsafe.Pointer, sstride uintptr, idx *int32, val *float32, grp *spGroup, ngrp int, half int"

// text starts kernel name: its Go signature and doc as a comment, then
// the TEXT directive.
func (g *gen) text(name string, doc ...string) {
	g.f("// func %s(%s)", name, args)
	g.f("//")
	for _, l := range doc {
		g.f("// %s", l)
	}
	g.f("TEXT ·%s(SB), NOSPLIT, $0-88", name)
}

// colPrologue is the top of the per-column loop: prefetch the column 8
// entries ahead in idx, load this column's value into vreg, advance idx
// and val, and leave the column's codes address in DX.
func (g *gen) colPrologue(vreg string) {
	g.f("col:")
	g.f("\tMOVLQSX 32(R12), BX")
	g.f("\tIMULQ R8, BX")
	g.f("\tPREFETCHT0 (SI)(BX*1)")
	g.f("\tMOVLQSX (R12), DX")
	g.f("\tVBROADCASTSS (R13), %s", vreg)
	g.f("\tADDQ $4, R12")
	g.f("\tADDQ $4, R13")
	g.f("\tIMULQ R8, DX")
	g.f("\tADDQ SI, DX")
}

// groupPrologue loads the group's factor row (AX), column count (CX) and
// Σx (into hs) and zeroes the accumulators.
func (g *gen) groupPrologue(hs string, acc func(i int) string, zero string) {
	g.f("group:")
	g.f("\tMOVLQSX 0(R14), AX")
	g.f("\tMOVLQSX 4(R14), CX")
	g.f("\tVBROADCASTSS 8(R14), %s", hs)
	for i := 0; i < 8; i++ {
		g.f("\t%s %s, %s, %s", zero, acc(i), acc(i), acc(i))
	}
	g.f("\tTESTQ CX, CX")
	g.f("\tJZ flush")
}

func (g *gen) avx512() {
	z := func(i int) string { return fmt.Sprintf("Z%d", i) }
	g.text("spcol4AVX512",
		"One block of 128 outputs of a 4-bit column matrix: for each group in",
		"grp, acc = Σ val[k]·codes(column idx[k]) over its n columns, then",
		"y += s[g]·acc + b[g]·hs, with float32 factors or, when half is not 0,",
		"bfloat16 ones (sstride bytes from one group's factors to the next's).",
		"Z0-Z7 hold y, Z8-Z15 acc, Z29 the value, Z30 hs, Z31 the nibble mask.",
		"The column 8 places ahead in idx is prefetched: idx must have 8",
		"readable entries past its last.")
	g.f("\tMOVQ q+8(FP), SI")
	g.f("\tMOVQ qstride+16(FP), R8")
	g.f("\tMOVQ s+24(FP), R9")
	g.f("\tMOVQ b+32(FP), R10")
	g.f("\tMOVQ sstride+40(FP), R11")
	g.f("\tMOVQ idx+48(FP), R12")
	g.f("\tMOVQ val+56(FP), R13")
	g.f("\tMOVQ grp+64(FP), R14")
	g.f("\tMOVQ ngrp+72(FP), DI")
	for i := 0; i < 8; i++ {
		g.f("\tVPXORD %s, %s, %s", z(i), z(i), z(i))
	}
	g.f("\tMOVL $15, AX")
	g.f("\tVPBROADCASTD AX, Z31")
	g.f("\tTESTQ DI, DI")
	g.f("\tJZ done")
	g.groupPrologue("Z30", func(i int) string { return z(8 + i) }, "VPXORD")
	g.colPrologue("Z29")
	// Four 16-byte runs of codes, each widened to 16 dwords whose low
	// nibbles are outputs 2i and high nibbles 2i+1 of the run.
	for r := 0; r < 4; r++ {
		g.f("\tVPMOVZXBD %d(DX), %s", 16*r, z(16+2*r))
	}
	for r := 0; r < 4; r++ {
		g.f("\tVPSRLD $4, %s, %s", z(16+2*r), z(17+2*r))
		g.f("\tVPANDD Z31, %s, %s", z(16+2*r), z(16+2*r))
	}
	for i := 16; i < 24; i++ {
		g.f("\tVCVTDQ2PS %s, %s", z(i), z(i))
	}
	for i := 0; i < 8; i++ {
		g.f("\tVFMADD231PS %s, Z29, %s", z(16+i), z(8+i))
	}
	g.f("\tDECQ CX")
	g.f("\tJNZ col")
	g.f("flush:")
	g.f("\tIMULQ R11, AX")
	g.f("\tLEAQ (R9)(AX*1), BX")
	g.f("\tADDQ R10, AX")
	g.f("\tCMPQ half+80(FP), $0")
	g.f("\tJNE flush16")
	for i := 0; i < 8; i++ {
		g.f("\tVFMADD231PS %s(BX), %s, %s", off(64*i), z(8+i), z(i))
	}
	for i := 0; i < 8; i++ {
		g.f("\tVFMADD231PS %s(AX), Z30, %s", off(64*i), z(i))
	}
	g.f("\tJMP next")
	// bfloat16 factors: widened to float32 by a 16-bit shift.
	g.f("flush16:")
	for i := 0; i < 8; i++ {
		g.f("\tVPMOVZXWD %s(BX), %s", off(32*i), z(16+i))
		g.f("\tVPSLLD $16, %s, %s", z(16+i), z(16+i))
		g.f("\tVFMADD231PS %s, %s, %s", z(16+i), z(8+i), z(i))
	}
	for i := 0; i < 8; i++ {
		g.f("\tVPMOVZXWD %s(AX), %s", off(32*i), z(16+i))
		g.f("\tVPSLLD $16, %s, %s", z(16+i), z(16+i))
		g.f("\tVFMADD231PS %s, Z30, %s", z(16+i), z(i))
	}
	g.f("next:")
	g.f("\tADDQ $16, R14")
	g.f("\tDECQ DI")
	g.f("\tJNZ group")
	g.f("done:")
	g.f("\tMOVQ y+0(FP), DI")
	for i := 0; i < 8; i++ {
		g.f("\tVMOVUPS %s, %s(DI)", z(i), off(64*i))
	}
	g.f("\tVZEROUPPER")
	g.f("\tRET")
}

// off is a displacement as the kernels write it (0 included).
func off(d int) string { return fmt.Sprint(d) }

func (g *gen) avx2() {
	y := func(i int) string { return fmt.Sprintf("Y%d", i) }
	g.text("spcol4AVX2",
		"spcol4AVX512 for half a block: 64 outputs, whose codes are two 16-byte",
		"runs (32 bytes at q within each column) and whose factors start at s",
		"and b. y is zeroed, then accumulated in memory at each group; Y0-Y7",
		"hold acc (run 0 bytes 0-7 low, high; bytes 8-15 low, high; run 1",
		"likewise), Y12 the value, Y13 hs, Y14 the nibble mask.")
	g.f("\tMOVQ y+0(FP), DI")
	g.f("\tMOVQ q+8(FP), SI")
	g.f("\tMOVQ qstride+16(FP), R8")
	g.f("\tMOVQ s+24(FP), R9")
	g.f("\tMOVQ b+32(FP), R10")
	g.f("\tMOVQ idx+48(FP), R12")
	g.f("\tMOVQ val+56(FP), R13")
	g.f("\tMOVQ grp+64(FP), R14")
	g.f("\tVPXOR Y15, Y15, Y15")
	for i := 0; i < 8; i++ {
		g.f("\tVMOVUPS Y15, %s(DI)", off(32*i))
	}
	g.f("\tMOVL $15, AX")
	g.f("\tMOVQ AX, X14")
	g.f("\tVPBROADCASTD X14, Y14")
	g.f("\tMOVQ ngrp+72(FP), DX")
	g.f("\tTESTQ DX, DX")
	g.f("\tJZ done")
	g.f("\tMOVQ DX, R11")
	g.groupPrologue("Y13", y, "VPXOR")
	g.colPrologue("Y12")
	// Eight bytes of codes at a time: their low nibbles into acc 2i, high
	// nibbles into acc 2i+1.
	for i := 0; i < 4; i++ {
		g.f("\tVPMOVZXBD %d(DX), Y8", 8*i)
		g.f("\tVPSRLD $4, Y8, Y9")
		g.f("\tVPAND Y14, Y8, Y8")
		g.f("\tVCVTDQ2PS Y8, Y8")
		g.f("\tVCVTDQ2PS Y9, Y9")
		g.f("\tVFMADD231PS Y8, Y12, %s", y(2*i))
		g.f("\tVFMADD231PS Y9, Y12, %s", y(2*i+1))
	}
	g.f("\tDECQ CX")
	g.f("\tJNZ col")
	g.f("flush:")
	g.f("\tIMULQ sstride+40(FP), AX")
	g.f("\tLEAQ (R9)(AX*1), BX")
	g.f("\tADDQ R10, AX")
	// Where each accumulator's 8 outputs sit in y, in bytes: for run r,
	// the low nibbles of bytes 0-7 and 8-15 at 128r and 128r+32, the high
	// nibbles at 128r+64 and 128r+96.
	g.f("\tCMPQ half+80(FP), $0")
	g.f("\tJNE flush16")
	for i := 0; i < 8; i++ {
		d := []int{0, 64, 32, 96, 128, 192, 160, 224}[i]
		g.f("\tVMOVUPS %s(DI), Y15", off(d))
		g.f("\tVFMADD231PS %s(BX), %s, Y15", off(d), y(i))
		g.f("\tVFMADD231PS %s(AX), Y13, Y15", off(d))
		g.f("\tVMOVUPS Y15, %s(DI)", off(d))
	}
	g.f("\tJMP next")
	// bfloat16 factors (half the byte offsets), widened by a 16-bit shift.
	g.f("flush16:")
	for i := 0; i < 8; i++ {
		d := []int{0, 64, 32, 96, 128, 192, 160, 224}[i]
		g.f("\tVPMOVZXWD %s(BX), Y8", off(d/2))
		g.f("\tVPSLLD $16, Y8, Y8")
		g.f("\tVPMOVZXWD %s(AX), Y9", off(d/2))
		g.f("\tVPSLLD $16, Y9, Y9")
		g.f("\tVMOVUPS %s(DI), Y15", off(d))
		g.f("\tVFMADD231PS Y8, %s, Y15", y(i))
		g.f("\tVFMADD231PS Y9, Y13, Y15")
		g.f("\tVMOVUPS Y15, %s(DI)", off(d))
	}
	g.f("next:")
	g.f("\tADDQ $16, R14")
	g.f("\tDECQ R11")
	g.f("\tJNZ group")
	g.f("done:")
	g.f("\tVZEROUPPER")
	g.f("\tRET")
}

func main() {
	var g gen
	g.f("// Code generated by gen_sparse.go; DO NOT EDIT.")
	g.f("")
	g.f("// The column kernels of the sparse down_proj; see sparse.go for the")
	g.f("// layout they read.")
	g.f("")
	g.f("#include \"textflag.h\"")
	g.f("")
	g.avx512()
	g.f("")
	g.avx2()
	if err := os.WriteFile("sparse_amd64.s", []byte(g.b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
