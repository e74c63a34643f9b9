//go:build ignore

// gen_kernels512 writes kernels512_amd64.s, the AVX-512 (BW, VNNI)
// decode kernels: go run gen_kernels512.go (from tensor/cpu; go generate
// does the same). The six variants (4 or 8 bits, groups of 32, 64 or 128)
// share one skeleton, so they are generated instead of written by hand.
package main

import (
	"fmt"
	"os"
	"strings"
)

// Field offsets of qzArgs (simd512_amd64.go); TestQzArgsLayout checks them.
const (
	offW       = 0
	offS       = 8
	offBsoff   = 16
	offXq      = 24
	offSxs     = 32
	offSxsEnd  = 40
	offC       = 48
	offDst     = 56
	offRows    = 64
	offWstride = 72
	offSstride = 80
	offCstride = 88
	offBlocks  = 96
	offTail    = 104
	offGmask   = 112
	offWmask0  = 120
	offWmask1  = 128
	offSfmt    = 136
	offPf4     = 144
	offPf1     = 152
	offWfull   = 160
)

type variant struct{ bits, gs int }

func (v variant) name() string { return fmt.Sprintf("qz%dg%d", v.bits, v.gs) }

// blockBytes is the packed size of one 128-element block of a row.
func (v variant) blockBytes() int { return 128 * v.bits / 8 }

// xBlockBytes is the size of one 128-element block of x in its layout:
// three byte limbs for 4 bits, two int16 limbs for 8.
func (v variant) xBlockBytes() int {
	if v.bits == 4 {
		return 384
	}
	return 512
}

// gpb is the number of groups in a block.
func (v variant) gpb() int { return 128 / v.gs }

type gen struct{ b strings.Builder }

func (g *gen) f(format string, a ...any) { fmt.Fprintf(&g.b, format+"\n", a...) }

// wAddr is the address of row r's weights at byte offset off of the block.
func wAddr(r, off int) string {
	d := ""
	if off != 0 {
		d = fmt.Sprint(off)
	}
	switch r {
	case 0:
		return d + "(AX)"
	case 1:
		return d + "(AX)(R14*1)"
	case 2:
		return d + "(DX)"
	}
	return d + "(DX)(R14*1)"
}

// cAddr is the address of row r's scale-times-sx values plus off bytes.
func cAddr(r, off int) string {
	d := ""
	if off != 0 {
		d = fmt.Sprint(off)
	}
	switch r {
	case 0:
		return d + "(R9)"
	case 1:
		return d + "(R9)(R10*1)"
	case 2:
		return d + "(R9)(R10*2)"
	}
	return d + "(R11)"
}

func z(i int) string { return fmt.Sprintf("Z%d", i) }

// Per-row vector registers: accumulator, loaded weights, unpacked codes,
// integer dots (for 8 bits: with the hi limb, and dlreg with the lo one).
func acc(r int) string   { return z(4 + r) }
func wreg(r int) string  { return z(8 + r) }
func nreg(r int) string  { return z(12 + r) }
func dreg(r int) string  { return z(16 + r) }
func dlreg(r int) string { return z(20 + r) }

// loadMask emits the load of 64 weight bytes, masked by words with k
// ("": none) in the tail block.
func (g *gen) loadMask(addr, dst, k string) {
	if k == "" {
		g.f("\tVMOVDQU64 %s, %s", addr, dst)
		return
	}
	g.f("\tVMOVDQU16.Z %s, %s, %s", addr, k, dst)
}

// permuted reports whether v's lanes need their group factors gathered
// with VPERMPS (more than one group per 16 lanes).
func (v variant) permuted() bool { return (v.bits == 4 && v.gs < 128) || (v.bits == 8 && v.gs == 32) }

// scaleAdd adds the float dots d of one row, times each lane's group
// factor at c, to the row's accumulator.
func (g *gen) scaleAdd(v variant, d, c string, r int) {
	if v.permuted() {
		g.f("\tVPERMPS %s, Z30, Z24", c)
		g.f("\tVFMADD231PS Z24, %s, %s", d, acc(r))
		return
	}
	g.f("\tVFMADD231PS.BCST %s, %s, %s", c, d, acc(r))
}

// body emits one block for rows 0..R-1; tail selects masked loads.
func (g *gen) body(v variant, R int, tail bool) {
	k0, k1 := "", ""
	if tail {
		k0, k1 = "K3", "K4"
	}
	if v.bits == 4 {
		g.body4(v, R, k0)
	} else {
		g.body8(v, R, k0, k1)
	}
}

// body4 is body for 4 bits, x in three byte limbs (xlayout.go): Z0-Z3
// and Z20-Z21 hold h, m and l, each as the block's even elements then its odd ones.
// The low nibbles of 64 bytes are the even elements, the high nibbles the
// odd ones, so VPDPBUSD multiplies them with x without shuffles: the
// signed h limb with the codes as unsigned bytes, the unsigned m and l
// limbs with the codes as signed bytes (0-15 either way), and
// d = ((q·h)·2^8 + q·m)·2^8 + q·l = Σ q·D is exact in int32 (a lane sums 8
// products of at most 15·2^23).
func (g *gen) body4(v variant, R int, k0 string) {
	xr := []string{"Z0", "Z1", "Z2", "Z3", "Z20", "Z21"}
	for i, x := range xr {
		g.f("\tVMOVDQU64 %d(BX), %s", 64*i, x)
	}
	for r := 0; r < R; r++ {
		w, n, d := wreg(r), nreg(r), dreg(r)
		g.loadMask(wAddr(r, 0), w, k0)
		g.f("\tVPANDD Z31, %s, %s", w, n)
		g.f("\tVPSRLW $4, %s, %s", w, w)
		g.f("\tVPANDD Z31, %s, %s", w, w)
		g.f("\tVPXORD %s, %s, %s", d, d, d)
		g.f("\tVPDPBUSD Z0, %s, %s", n, d)
		g.f("\tVPDPBUSD Z1, %s, %s", w, d)
		g.f("\tVPSLLD $8, %s, %s", d, d)
		g.f("\tVPDPBUSD %s, Z2, %s", n, d)
		g.f("\tVPDPBUSD %s, Z3, %s", w, d)
		g.f("\tVPSLLD $8, %s, %s", d, d)
		g.f("\tVPDPBUSD %s, Z20, %s", n, d)
		g.f("\tVPDPBUSD %s, Z21, %s", w, d)
		g.f("\tVCVTDQ2PS %s, %s", d, d)
		g.scaleAdd(v, d, cAddr(r, 0), r)
	}
}

// body8 is body for 8 bits, x in two int16 limbs (xlayout.go): each dot
// with a vector of the hi limb (Z0-Z3) has its twin with the lo limb, read
// from memory 256 bytes further on, into the lo dots (Z20-Z23). The first
// 64 bytes hold elements 0-63 of the block, the second 64-127; below group
// 128 each half is scaled as soon as its dots are done, so the second half
// reuses the registers.
func (g *gen) body8(v variant, R int, k0, k1 string) {
	for i := 0; i < 4; i++ {
		g.f("\tVMOVDQU64 %d(BX), Z%d", 64*i, i)
	}
	// dot multiplies codes n with x vector i into d (first: VPMADDWD,
	// which starts d) and the lo limb likewise into dl.
	dot := func(first bool, i int, n, d, dl string) {
		op := "VPDPWSSD"
		if first {
			op = "VPMADDWD"
		}
		g.f("\t%s Z%d, %s, %s", op, i, n, d)
		g.f("\t%s %d(BX), %s, %s", op, 256+64*i, n, dl)
	}
	// scale combines the dots as d + 2^-15·dl (Z29) and adds them in.
	scale := func(d, dl, c string, r int) {
		g.f("\tVCVTDQ2PS %s, %s", d, d)
		g.f("\tVCVTDQ2PS %s, %s", dl, dl)
		g.f("\tVFMADD231PS Z29, %s, %s", dl, d)
		g.scaleAdd(v, d, c, r)
	}
	for r := 0; r < R; r++ {
		w, n, d, dl := wreg(r), nreg(r), dreg(r), dlreg(r)
		g.loadMask(wAddr(r, 0), w, k0)
		g.f("\tVPANDD Z31, %s, %s", w, n)
		dot(true, 0, n, d, dl)
		g.f("\tVPSRLW $8, %s, %s", w, n)
		dot(false, 1, n, d, dl)
		if v.gs != 128 {
			scale(d, dl, cAddr(r, 0), r)
		}
		g.loadMask(wAddr(r, 64), w, k1)
		g.f("\tVPANDD Z31, %s, %s", w, n)
		dot(v.gs != 128, 2, n, d, dl)
		g.f("\tVPSRLW $8, %s, %s", w, n)
		dot(false, 3, n, d, dl)
		if v.gs != 128 {
			scale(d, dl, cAddr(r, 4*(64/v.gs)), r)
		}
	}
	if v.gs == 128 {
		for r := 0; r < R; r++ {
			scale(dreg(r), dlreg(r), cAddr(r, 0), r)
		}
	}
}

// preamble emits, for row r of a pass, c = scale·sx for every group into
// the row's c buffer and acc(r) = Σ bias·xs (per lane).
func (g *gen) preamble(v variant, tag string, r int) {
	L := fmt.Sprintf("%s_p%d", tag, r)
	if r == 0 {
		g.f("\tMOVQ R13, SI")
	} else {
		g.f("\tMOVQ %d(DI), SI", offSstride)
		g.f("\tIMULQ $%d, SI", r)
		g.f("\tADDQ R13, SI")
	}
	g.f("\tMOVQ SI, BX")
	g.f("\tADDQ %d(DI), BX", offBsoff)
	switch r {
	case 0:
		g.f("\tMOVQ R9, R12")
	case 1:
		g.f("\tLEAQ (R9)(R10*1), R12")
	case 2:
		g.f("\tLEAQ (R9)(R10*2), R12")
	case 3:
		g.f("\tMOVQ R11, R12")
	}
	g.f("\tMOVQ %d(DI), DX", offSxs)
	g.f("\tVPXORD %s, %s, %s", acc(r), acc(r), acc(r))
	g.f("\tCMPQ %d(DI), $1", offSfmt)
	g.f("\tJEQ %s_f16", L)
	g.f("\tJGT %s_f32", L)
	type fmtSpec struct {
		name       string
		step       int
		full       func(src, dst string)
		masked     func(src, dst string)
		tmpS, tmpB string
	}
	specs := []fmtSpec{
		{"bf16", 32,
			func(src, dst string) { g.f("\tVPMOVZXWD %s, %s", src, dst); g.f("\tVPSLLD $16, %s, %s", dst, dst) },
			func(src, dst string) {
				y := "Y" + dst[1:]
				g.f("\tVMOVDQU16.Z %s, K2, %s", src, y)
				g.f("\tVPMOVZXWD %s, %s", y, dst)
				g.f("\tVPSLLD $16, %s, %s", dst, dst)
			}, "Z24", "Z25"},
		{"f16", 32,
			func(src, dst string) { g.f("\tVCVTPH2PS %s, %s", src, dst) },
			func(src, dst string) {
				y := "Y" + dst[1:]
				g.f("\tVMOVDQU16.Z %s, K2, %s", src, y)
				g.f("\tVCVTPH2PS %s, %s", y, dst)
			}, "Z24", "Z25"},
		{"f32", 64,
			func(src, dst string) { g.f("\tVMOVUPS %s, %s", src, dst) },
			func(src, dst string) { g.f("\tVMOVUPS.Z %s, K2, %s", src, dst) }, "Z24", "Z25"},
	}
	for _, s := range specs {
		P := L + "_" + s.name
		g.f("%s:", P)
		g.f("\tCMPQ DX, %d(DI)", offSxsEnd)
		g.f("\tJAE %s_tail", P)
		g.f("%s_loop:", P)
		s.full("(SI)", s.tmpS)
		g.f("\tVMULPS (DX), %s, %s", s.tmpS, s.tmpS)
		g.f("\tVMOVUPS %s, (R12)", s.tmpS)
		s.full("(BX)", s.tmpB)
		g.f("\tVFMADD231PS 64(DX), %s, %s", s.tmpB, acc(r))
		g.f("\tADDQ $%d, SI", s.step)
		g.f("\tADDQ $%d, BX", s.step)
		g.f("\tADDQ $128, DX")
		g.f("\tADDQ $64, R12")
		g.f("\tCMPQ DX, %d(DI)", offSxsEnd)
		g.f("\tJB %s_loop", P)
		g.f("%s_tail:", P)
		g.f("\tKORTESTW K2, K2")
		g.f("\tJZ %s_done", L)
		s.masked("(SI)", s.tmpS)
		g.f("\tVMULPS (DX), %s, %s", s.tmpS, s.tmpS)
		g.f("\tVMOVUPS %s, (R12)", s.tmpS)
		s.masked("(BX)", s.tmpB)
		g.f("\tVFMADD231PS 64(DX), %s, %s", s.tmpB, acc(r))
		g.f("\tJMP %s_done", L)
	}
	g.f("%s_done:", L)
}

// pass emits the code for one pass over R rows (R is 4 or 1).
func (g *gen) pass(v variant, R int) {
	tag := fmt.Sprintf("r%d", R)
	g.f("%s:", tag)
	for r := 0; r < R; r++ {
		g.preamble(v, tag, r)
	}
	pf := offPf4
	if R == 1 {
		pf = offPf1
	}
	g.f("\tMOVQ %d(DI), BX", offXq)
	g.f("\tLEAQ (AX)(R14*2), DX")
	g.f("\tMOVQ AX, R12")
	g.f("\tADDQ %d(DI), R12", pf)
	g.f("\tMOVQ %d(DI), SI", offBlocks)
	g.f("\tTESTQ SI, SI")
	g.f("\tJZ %s_tail", tag)
	g.f("%s_blk:", tag)
	g.body(v, R, false)
	// Prefetch into L2 (qzSetup says why not L1).
	lines := R * v.blockBytes() / 64
	for i := 0; i < lines; i++ {
		g.f("\tPREFETCHT1 %d(R12)", 64*i)
	}
	g.f("\tADDQ $%d, R12", 64*lines)
	g.f("\tADDQ $%d, AX", v.blockBytes())
	g.f("\tADDQ $%d, DX", v.blockBytes())
	g.f("\tADDQ $%d, BX", v.xBlockBytes())
	g.f("\tADDQ $%d, R9", 4*v.gpb())
	g.f("\tADDQ $%d, R11", 4*v.gpb())
	g.f("\tDECQ SI")
	g.f("\tJNZ %s_blk", tag)
	g.f("%s_tail:", tag)
	g.f("\tCMPQ %d(DI), $0", offTail)
	g.f("\tJEQ %s_red", tag)
	g.body(v, R, true)
	g.f("%s_red:", tag)
	if R == 4 {
		for r := 0; r < 4; r++ {
			g.f("\tVEXTRACTF64X4 $1, %s, Y%d", acc(r), 8+r)
			g.f("\tVADDPS Y%d, Y%d, Y%d", 8+r, 4+r, 4+r)
		}
		g.f("\tVHADDPS Y5, Y4, Y4")
		g.f("\tVHADDPS Y7, Y6, Y6")
		g.f("\tVHADDPS Y6, Y4, Y4")
		g.f("\tVEXTRACTF128 $1, Y4, X5")
		g.f("\tVADDPS X5, X4, X4")
		g.f("\tVMOVUPS X4, (R8)")
	} else {
		g.f("\tVEXTRACTF64X4 $1, Z4, Y8")
		g.f("\tVADDPS Y8, Y4, Y4")
		g.f("\tVEXTRACTF128 $1, Y4, X8")
		g.f("\tVADDPS X8, X4, X4")
		g.f("\tVHADDPS X4, X4, X4")
		g.f("\tVHADDPS X4, X4, X4")
		g.f("\tVMOVSS X4, (R8)")
	}
	// Next pass: weights, scales and c rows start over R rows further on.
	g.f("\tADDQ $%d, R8", 4*R)
	g.f("\tSUBQ %d(DI), AX", offWfull)
	g.f("\tLEAQ (AX)(R14*%d), AX", R)
	g.f("\tMOVQ %d(DI), SI", offSstride)
	if R == 4 {
		g.f("\tSHLQ $2, SI")
	}
	g.f("\tADDQ SI, R13")
	g.f("\tMOVQ %d(DI), R9", offC)
	g.f("\tLEAQ (R10)(R10*2), R11")
	g.f("\tADDQ R9, R11")
	g.f("\tSUBQ $%d, CX", R)
	if R == 4 {
		g.f("\tCMPQ CX, $4")
		g.f("\tJGE r4")
	} else {
		g.f("\tJNZ r1")
	}
}

func (g *gen) kernel(v variant) {
	g.f("// func %s(a *qzArgs)", v.name())
	g.f("TEXT ·%s(SB), NOSPLIT, $0-8", v.name())
	g.f("\tMOVQ a+0(FP), DI")
	if v.bits == 4 {
		g.f("\tVPBROADCASTW nib4<>(SB), Z31")
	} else {
		g.f("\tVPBROADCASTW byte8<>(SB), Z31")
		g.f("\tVBROADCASTSS lo15<>(SB), Z29")
	}
	switch {
	case v.bits == 4 && v.gs == 32:
		g.f("\tVMOVDQU64 idx4<>(SB), Z30")
	case v.bits == 4 && v.gs == 64, v.bits == 8 && v.gs == 32:
		g.f("\tVMOVDQU64 idx8<>(SB), Z30")
	}
	g.f("\tKMOVW %d(DI), K2", offGmask)
	g.f("\tKMOVD %d(DI), K3", offWmask0)
	g.f("\tKMOVD %d(DI), K4", offWmask1)
	g.f("\tMOVQ %d(DI), AX", offW)
	g.f("\tMOVQ %d(DI), R14", offWstride)
	g.f("\tMOVQ %d(DI), R8", offDst)
	g.f("\tMOVQ %d(DI), R13", offS)
	g.f("\tMOVQ %d(DI), R9", offC)
	g.f("\tMOVQ %d(DI), R10", offCstride)
	g.f("\tLEAQ (R10)(R10*2), R11")
	g.f("\tADDQ R9, R11")
	g.f("\tMOVQ %d(DI), CX", offRows)
	g.f("\tCMPQ CX, $4")
	g.f("\tJLT r1check")
	g.pass(v, 4)
	g.f("r1check:")
	g.f("\tTESTQ CX, CX")
	g.f("\tJZ done")
	g.pass(v, 1)
	g.f("done:")
	g.f("\tVZEROUPPER")
	g.f("\tRET")
	g.f("")
}

// quantizer emits xzq{bits}g{gs}(x *float32, xq *byte, sxs *float32,
// blocks int): xzQuantize for whole 128-element blocks.
func (g *gen) quantizer(bits, gs int) {
	name := fmt.Sprintf("xzq%dg%d", bits, gs)
	nz := gs / 16
	g.f("// func %s(x *float32, xq *byte, sxs *float32, blocks int)", name)
	g.f("TEXT ·%s(SB), NOSPLIT, $0-32", name)
	g.f("\tMOVQ x+0(FP), SI")
	g.f("\tMOVQ xq+8(FP), DI")
	g.f("\tMOVQ sxs+16(FP), R8")
	g.f("\tMOVQ blocks+24(FP), CX")
	g.f("\tXORQ R9, R9")
	g.f("\tVPBROADCASTD absmask<>(SB), Z31")
	if bits == 4 {
		g.f("\tVMOVSS full23<>(SB), X30")
		g.f("\tVMOVDQU64 xzeven<>(SB), Z20")
		g.f("\tVMOVDQU64 xzodd<>(SB), Z21")
	} else {
		g.f("\tVMOVSS c32767<>(SB), X30")
		g.f("\tVBROADCASTSS c32768<>(SB), Z28")
		for k := 0; k < 2; k++ {
			g.f("\tVMOVDQU64 xzidx8<>+%d(SB), Z%d", 64*k, 20+k)
		}
	}
	g.f("\tVMOVSS fltmax<>(SB), X29")
	g.f("\tTESTQ CX, CX")
	g.f("\tJZ done")
	g.f("blk:")
	for i := 0; i < 8; i++ {
		g.f("\tVMOVUPS %d(SI), Z%d", 64*i, i)
	}
	for q := 0; q < 128/gs; q++ {
		z0 := q * nz
		g.f("\tVANDPS Z31, Z%d, Z8", z0)
		g.f("\tVMOVAPS Z%d, Z9", z0)
		for i := z0 + 1; i < z0+nz; i++ {
			g.f("\tVANDPS Z31, Z%d, Z10", i)
			g.f("\tVMAXPS Z10, Z8, Z8")
			g.f("\tVADDPS Z%d, Z9, Z9", i)
		}
		for _, r := range []struct{ op, reg, tmp string }{{"VMAXPS", "8", "10"}, {"VADDPS", "9", "11"}} {
			g.f("\tVEXTRACTF64X4 $1, Z%s, Y%s", r.reg, r.tmp)
			g.f("\t%s Y%s, Y%s, Y%s", r.op, r.tmp, r.reg, r.reg)
			g.f("\tVEXTRACTF128 $1, Y%s, X%s", r.reg, r.tmp)
			g.f("\t%s X%s, X%s, X%s", r.op, r.tmp, r.reg, r.reg)
			g.f("\tVPERMILPS $0x4e, X%s, X%s", r.reg, r.tmp)
			g.f("\t%s X%s, X%s, X%s", r.op, r.tmp, r.reg, r.reg)
			g.f("\tVPERMILPS $0xb1, X%s, X%s", r.reg, r.tmp)
			g.f("\t%s X%s, X%s, X%s", r.op, r.tmp, r.reg, r.reg)
		}
		// sx = max/F; inv = F/max (F = X30, the largest integer x maps
		// to), which is +Inf for an all-zero group: clamped to MaxFloat32
		// so its zeros stay zero.
		g.f("\tVDIVSS X30, X8, X12")
		g.f("\tVDIVSS X8, X30, X13")
		g.f("\tVMINSS X29, X13, X13")
		g.f("\tVBROADCASTSS X13, Z13")
		g.f("\tMOVQ R9, R10")
		g.f("\tSHRQ $4, R10")
		g.f("\tSHLQ $7, R10")
		g.f("\tMOVQ R9, R11")
		g.f("\tANDQ $15, R11")
		g.f("\tLEAQ (R10)(R11*4), R10")
		g.f("\tVMOVSS X12, (R8)(R10*1)")
		g.f("\tVMOVSS X9, 64(R8)(R10*1)")
		g.f("\tINCQ R9")
		for i := z0; i < z0+nz; i++ {
			g.f("\tVMULPS Z13, Z%d, Z%d", i, i)
			if bits == 4 {
				// D = round(x·inv), to nearest even.
				g.f("\tVCVTPS2DQ Z%d, Z%d", i, i)
				continue
			}
			// hi = round(t) with t = x·inv, lo = round((t - hi)·32768);
			// t - hi is exact, so x = sx·(hi + lo/32768) within sx/65536.
			g.f("\tVCVTPS2DQ Z%d, Z26", i)
			g.f("\tVCVTDQ2PS Z26, Z27")
			g.f("\tVSUBPS Z27, Z%d, Z27", i)
			g.f("\tVMOVDQA64 Z26, Z%d", i)
			g.f("\tVMULPS Z28, Z27, Z27")
			g.f("\tVCVTPS2DQ Z27, %s", xzLoReg(i))
		}
	}
	if bits == 4 {
		g.xzStoreBytes()
	} else {
		hi := []string{"Z0", "Z1", "Z2", "Z3", "Z4", "Z5", "Z6", "Z7"}
		lo := []string{xzLoReg(0), xzLoReg(1), xzLoReg(2), xzLoReg(3), xzLoReg(4), xzLoReg(5), xzLoReg(6), xzLoReg(7)}
		g.xzPack(hi, 0)
		g.xzPack(lo, 256)
	}
	g.f("\tADDQ $%d, DI", variant{bits, gs}.xBlockBytes())
	g.f("\tADDQ $512, SI")
	g.f("\tDECQ CX")
	g.f("\tJNZ blk")
	g.f("done:")
	g.f("\tVZEROUPPER")
	g.f("\tRET")
	g.f("")
}

// xzStoreBytes stores the integers D of one block (Z0-Z7, 16 elements
// each) as the three byte limbs of the 4-bit layout at (DI): the even
// elements of each pair of vectors (32 elements) go to offset 16p of a
// limb, the odd ones to 64+16p; h = D >> 16 (arithmetic), m the byte
// above the lowest, l the lowest (VPMOVDB keeps a dword's low byte).
func (g *gen) xzStoreBytes() {
	for p := 0; p < 4; p++ {
		for k, idx := range []string{"Z20", "Z21"} {
			d := z(8 + 2*p + k)
			g.f("\tVMOVDQA64 %s, %s", idx, d)
			g.f("\tVPERMI2D Z%d, Z%d, %s", 2*p+1, 2*p, d)
		}
	}
	for p := 0; p < 4; p++ {
		for k := 0; k < 2; k++ {
			d, off := z(8+2*p+k), 64*k+16*p
			g.f("\tVPMOVDB %s, %d(DI)", d, off+256)
			g.f("\tVPSRAD $8, %s, Z16", d)
			g.f("\tVPMOVDB Z16, %d(DI)", off+128)
			g.f("\tVPSRAD $16, %s, Z16", d)
			g.f("\tVPMOVDB Z16, %d(DI)", off)
		}
	}
}

// xzLoReg holds the lo limb of vector i (0-7) of a block in the 8-bit
// quantizer.
func xzLoReg(i int) string {
	return []string{"Z14", "Z15", "Z16", "Z17", "Z18", "Z19", "Z24", "Z25"}[i]
}

// xzTableIndex is the VPERMI2W table index (0-63 over the two packed
// vectors of a pair) of element e (0-63) of a 64-element half block after
// VPACKSSDW packed four vectors of 16 int32 as pack(I0, I1), pack(I2, I3):
// per 128-bit lane l, words 8l..8l+3 come from the first operand's dwords
// 4l..4l+3 and words 8l+4..8l+7 from the second's.
func xzTableIndex(e int) int {
	src, e1 := e/32, e%32
	second := e1 / 16
	e2 := e1 % 16
	return src*32 + 8*(e2/4) + 4*second + e2%4
}

// xzPack packs the eight int32 vectors v of one limb of an 8-bit block to
// words and stores them, permuted to the block layout, at off(DI).
func (g *gen) xzPack(v []string, off int) {
	for i := 0; i < 8; i += 2 {
		g.f("\tVPACKSSDW %s, %s, %s", v[i+1], v[i], v[i])
	}
	for k := 0; k < 2; k++ {
		g.f("\tVMOVDQA64 Z%d, Z8", 20+k)
		g.f("\tVPERMI2W %s, %s, Z8", v[2], v[0])
		g.f("\tVMOVDQU64 Z8, %d(DI)", off+64*k)
		g.f("\tVMOVDQA64 Z%d, Z9", 20+k)
		g.f("\tVPERMI2W %s, %s, Z9", v[6], v[4])
		g.f("\tVMOVDQU64 Z9, %d(DI)", off+64*(2+k))
	}
}

// dequant emits dqz{bits}(w *byte, s, b, dst *float32, groups, steps
// int): w = s·q + b as float32 for groups consecutive groups of
// steps·32 weights (one row after another: rows are contiguous in w, in
// the scale rows and in dst). For 4 bits each 32 weights come out as the
// 16 low nibbles of their 16 bytes, then the 16 high ones (x is permuted
// to match); 8 bits stay in order.
func (g *gen) dequant(bits int) {
	name := fmt.Sprintf("dqz%d", bits)
	g.f("// func %s(w *byte, s, b, dst *float32, groups, steps int)", name)
	g.f("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	g.f("\tMOVQ w+0(FP), AX")
	g.f("\tMOVQ s+8(FP), SI")
	g.f("\tMOVQ b+16(FP), R8")
	g.f("\tMOVQ dst+24(FP), DI")
	g.f("\tMOVQ groups+32(FP), CX")
	g.f("\tVPBROADCASTD nibd<>(SB), Z31")
	g.f("\tTESTQ CX, CX")
	g.f("\tJZ done")
	g.f("grp:")
	g.f("\tVBROADCASTSS (SI), Z2")
	g.f("\tVBROADCASTSS (R8), Z3")
	g.f("\tMOVQ steps+40(FP), R9")
	g.f("step:")
	if bits == 4 {
		g.f("\tVPMOVZXBD (AX), Z0")
		g.f("\tVPSRLD $4, Z0, Z1")
		g.f("\tVPANDD Z31, Z0, Z0")
		g.f("\tADDQ $16, AX")
	} else {
		g.f("\tVPMOVZXBD (AX), Z0")
		g.f("\tVPMOVZXBD 16(AX), Z1")
		g.f("\tADDQ $32, AX")
	}
	g.f("\tVCVTDQ2PS Z0, Z0")
	g.f("\tVCVTDQ2PS Z1, Z1")
	g.f("\tVFMADD213PS Z3, Z2, Z0")
	g.f("\tVFMADD213PS Z3, Z2, Z1")
	g.f("\tVMOVUPS Z0, (DI)")
	g.f("\tVMOVUPS Z1, 64(DI)")
	g.f("\tADDQ $128, DI")
	g.f("\tDECQ R9")
	g.f("\tJNZ step")
	g.f("\tADDQ $4, SI")
	g.f("\tADDQ $4, R8")
	g.f("\tDECQ CX")
	g.f("\tJNZ grp")
	g.f("done:")
	g.f("\tVZEROUPPER")
	g.f("\tRET")
	g.f("")
}

// sgemm emits sgemm4x5(x *float32, xstride int, w *float32, wstride, k
// int, c *float32, cstride, accumulate int): c[i][j] (+)= Σ_k x_i·w_j for
// four x rows and five w rows of k floats (k a multiple of 16; strides in
// bytes). Each of the 20 dot products keeps 16 lanes in a register; the
// five w rows and four x rows of a step are loaded once for 20 FMAs.
func (g *gen) sgemm() {
	acc := func(i, j int) string { return z(5*i + j) }
	xr := []string{"(SI)", "(SI)(R10*1)", "(SI)(R10*2)", "(R12)"}
	wr := []string{"(DI)", "(DI)(R11*1)", "(DI)(R11*2)", "(R13)", "(R13)(R11*1)"}
	cr := []string{"(R8)", "(R8)(R9*1)", "(R8)(R9*2)", "(BX)"}
	g.f("// func sgemm4x5(x *float32, xstride int, w *float32, wstride, k int, c *float32, cstride, accumulate int)")
	g.f("TEXT ·sgemm4x5(SB), NOSPLIT, $0-64")
	g.f("\tMOVQ x+0(FP), SI")
	g.f("\tMOVQ xstride+8(FP), R10")
	g.f("\tMOVQ w+16(FP), DI")
	g.f("\tMOVQ wstride+24(FP), R11")
	g.f("\tMOVQ k+32(FP), CX")
	g.f("\tSHRQ $4, CX")
	g.f("\tLEAQ (R10)(R10*2), R12")
	g.f("\tADDQ SI, R12")
	g.f("\tLEAQ (R11)(R11*2), R13")
	g.f("\tADDQ DI, R13")
	for i := 0; i < 4; i++ {
		for j := 0; j < 5; j++ {
			g.f("\tVPXORD %s, %s, %s", acc(i, j), acc(i, j), acc(i, j))
		}
	}
	g.f("\tTESTQ CX, CX")
	g.f("\tJZ red")
	g.f("loop:")
	for j := 0; j < 5; j++ {
		g.f("\tVMOVUPS %s, Z%d", wr[j], 20+j)
	}
	for i := 0; i < 4; i++ {
		g.f("\tVMOVUPS %s, Z%d", xr[i], 25+i)
		for j := 0; j < 5; j++ {
			g.f("\tVFMADD231PS Z%d, Z%d, %s", 20+j, 25+i, acc(i, j))
		}
	}
	for _, r := range []string{"SI", "DI", "R12", "R13"} {
		g.f("\tADDQ $64, %s", r)
	}
	g.f("\tDECQ CX")
	g.f("\tJNZ loop")
	g.f("red:")
	g.f("\tMOVQ c+40(FP), R8")
	g.f("\tMOVQ cstride+48(FP), R9")
	g.f("\tLEAQ (R9)(R9*2), BX")
	g.f("\tADDQ R8, BX")
	g.f("\tMOVQ accumulate+56(FP), DX")
	for i := 0; i < 4; i++ {
		for j := 0; j < 5; j++ {
			a := acc(i, j)
			g.f("\tVEXTRACTF64X4 $1, %s, Y29", a)
			g.f("\tVADDPS Y29, Y%s, Y29", a[1:])
			g.f("\tVEXTRACTF32X4 $1, Y29, X30")
			g.f("\tVADDPS X30, X29, X29")
			g.f("\tVPERMILPS $0x4e, X29, X30")
			g.f("\tVADDPS X30, X29, X29")
			g.f("\tVPERMILPS $0xb1, X29, X30")
			g.f("\tVADDPS X30, X29, X29")
			addr := cr[i]
			if j > 0 {
				addr = fmt.Sprint(4*j) + addr
			}
			g.f("\tTESTQ DX, DX")
			g.f("\tJZ st%d%d", i, j)
			g.f("\tVADDSS %s, X29, X29", addr)
			g.f("st%d%d:", i, j)
			g.f("\tVMOVSS X29, %s", addr)
		}
	}
	g.f("\tVZEROUPPER")
	g.f("\tRET")
	g.f("")
}

// sgemmPanels emits sgemm12x{16P}(xt *float32, pstride int, w *float32,
// wstride, k int, c *float32, cstride, accumulate int): for twelve w rows
// j and P panels of 16 x rows (x transposed: 16 floats per k, panels
// pstride bytes apart), c[j][16p+r] (+)= Σ_k w_j[k]·x_{16p+r}[k]. Each w
// value is broadcast once and multiplies P vectors of x, so no horizontal
// sums are needed; 12·P accumulators stay in registers.
func (g *gen) sgemmPanels(P int) {
	name := fmt.Sprintf("sgemm12x%d", 16*P)
	acc := func(j, p int) string { return z(j*P + p) }
	wbase := []string{"DI", "R8", "R9", "R11"}
	waddr := func(j int) string {
		b := wbase[j/3]
		switch j % 3 {
		case 0:
			return "(" + b + ")"
		case 1:
			return "(" + b + ")(R12*1)"
		}
		return "(" + b + ")(R12*2)"
	}
	g.f("// func %s(xt *float32, pstride int, w *float32, wstride, k int, c *float32, cstride, accumulate int)", name)
	g.f("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	g.f("\tMOVQ xt+0(FP), SI")
	g.f("\tMOVQ pstride+8(FP), R10")
	g.f("\tMOVQ w+16(FP), DI")
	g.f("\tMOVQ wstride+24(FP), R12")
	g.f("\tMOVQ k+32(FP), CX")
	g.f("\tLEAQ (R12)(R12*2), AX")
	g.f("\tLEAQ (DI)(AX*1), R8")
	g.f("\tLEAQ (R8)(AX*1), R9")
	g.f("\tLEAQ (R9)(AX*1), R11")
	for j := 0; j < 12; j++ {
		for p := 0; p < P; p++ {
			g.f("\tVPXORD %s, %s, %s", acc(j, p), acc(j, p), acc(j, p))
		}
	}
	g.f("\tTESTQ CX, CX")
	g.f("\tJZ store")
	g.f("loop:")
	g.f("\tVMOVUPS (SI), Z24")
	if P == 2 {
		g.f("\tVMOVUPS (SI)(R10*1), Z25")
	}
	for j := 0; j < 12; j++ {
		t := z(26 + j%2)
		g.f("\tVBROADCASTSS %s, %s", waddr(j), t)
		for p := 0; p < P; p++ {
			g.f("\tVFMADD231PS Z%d, %s, %s", 24+p, t, acc(j, p))
		}
	}
	g.f("\tADDQ $64, SI")
	for _, r := range wbase {
		g.f("\tADDQ $4, %s", r)
	}
	g.f("\tDECQ CX")
	g.f("\tJNZ loop")
	g.f("store:")
	g.f("\tMOVQ c+40(FP), BX")
	g.f("\tMOVQ cstride+48(FP), R13")
	g.f("\tMOVQ accumulate+56(FP), DX")
	for _, accumulate := range []bool{true, false} {
		if accumulate {
			g.f("\tTESTQ DX, DX")
			g.f("\tJZ plain")
		} else {
			g.f("plain:")
			g.f("\tMOVQ c+40(FP), BX")
		}
		for j := 0; j < 12; j++ {
			row := []string{"(BX)", "(BX)(R13*1)", "(BX)(R13*2)"}[j%3]
			for p := 0; p < P; p++ {
				addr := row
				if p > 0 {
					addr = "64" + row
				}
				if accumulate {
					g.f("\tVADDPS %s, %s, %s", addr, acc(j, p), acc(j, p))
				}
				g.f("\tVMOVUPS %s, %s", acc(j, p), addr)
			}
			if j%3 == 2 && j < 11 {
				g.f("\tLEAQ (BX)(R13*2), BX")
				g.f("\tADDQ R13, BX")
			}
		}
		if accumulate {
			g.f("\tVZEROUPPER")
			g.f("\tRET")
		}
	}
	g.f("\tVZEROUPPER")
	g.f("\tRET")
	g.f("")
}

func main() {
	g := &gen{}
	g.f("// Code generated by gen_kernels512.go; DO NOT EDIT.")
	g.f("")
	g.f("#include \"textflag.h\"")
	g.f("")
	g.f("// AVX-512 (BW, VNNI) decode kernels: see xlayout.go for the")
	g.f("// layouts. Registers: DI args, AX/DX weight rows 0 and 2 (R14 the row")
	g.f("// stride), BX x blocks then bias rows, SI block counter or scale row,")
	g.f("// R8 dst, R9/R11 c rows 0 and 3 (R10 the c row stride), R12 prefetch")
	g.f("// cursor or c row, R13 scale row of the pass, CX rows left; Z0-Z3 one")
	g.f("// block of x (h and m limbs; the l limb is read from memory), Z4-Z7")
	g.f("// row accumulators, Z8-Z15 codes, Z16-Z19 integer dots, Z30")
	g.f("// lane-to-group index, Z31 nibble mask.")
	g.f("")
	g.f("DATA nib4<>+0(SB)/2, $0x0f0f")
	g.f("GLOBL nib4<>(SB), RODATA|NOPTR, $2")
	g.f("DATA byte8<>+0(SB)/2, $0x00ff")
	g.f("GLOBL byte8<>(SB), RODATA|NOPTR, $2")
	for i := 0; i < 16; i++ {
		g.f("DATA idx4<>+%d(SB)/4, $%d", 4*i, i/4)
	}
	g.f("GLOBL idx4<>(SB), RODATA|NOPTR, $64")
	for i := 0; i < 16; i++ {
		g.f("DATA idx8<>+%d(SB)/4, $%d", 4*i, i/8)
	}
	g.f("GLOBL idx8<>(SB), RODATA|NOPTR, $64")
	g.f("DATA absmask<>+0(SB)/4, $0x7fffffff")
	g.f("GLOBL absmask<>(SB), RODATA|NOPTR, $4")
	g.f("DATA nibd<>+0(SB)/4, $0x0f")
	g.f("GLOBL nibd<>(SB), RODATA|NOPTR, $4")
	g.f("DATA full23<>+0(SB)/4, $0x4afffff8") // 2^23 - 4
	g.f("GLOBL full23<>(SB), RODATA|NOPTR, $4")
	g.f("DATA c32767<>+0(SB)/4, $0x46fffe00") // 32767.0
	g.f("GLOBL c32767<>(SB), RODATA|NOPTR, $4")
	g.f("DATA c32768<>+0(SB)/4, $0x47000000") // 32768.0
	g.f("GLOBL c32768<>(SB), RODATA|NOPTR, $4")
	g.f("DATA lo15<>+0(SB)/4, $0x38000000") // 2^-15
	g.f("GLOBL lo15<>(SB), RODATA|NOPTR, $4")
	g.f("DATA fltmax<>+0(SB)/4, $0x7f7fffff")
	g.f("GLOBL fltmax<>(SB), RODATA|NOPTR, $4")
	// VPERMI2D indices taking the even and the odd dwords of two vectors.
	for j := 0; j < 16; j++ {
		g.f("DATA xzeven<>+%d(SB)/4, $%d", 4*j, 2*j)
		g.f("DATA xzodd<>+%d(SB)/4, $%d", 4*j, 2*j+1)
	}
	g.f("GLOBL xzeven<>(SB), RODATA|NOPTR, $64")
	g.f("GLOBL xzodd<>(SB), RODATA|NOPTR, $64")
	// VPERMI2W indices of the 8-bit x layout: vector k takes elements
	// 2j+k (j < 32).
	for k := 0; k < 2; k++ {
		for j := 0; j < 32; j++ {
			g.f("DATA xzidx8<>+%d(SB)/2, $%d", 64*k+2*j, xzTableIndex(2*j+k))
		}
	}
	g.f("GLOBL xzidx8<>(SB), RODATA|NOPTR, $128")
	g.f("")
	for _, bits := range []int{4, 8} {
		for _, gs := range []int{32, 64, 128} {
			g.kernel(variant{bits, gs})
			g.quantizer(bits, gs)
		}
	}
	g.dequant(4)
	g.dequant(8)
	g.sgemm()
	g.sgemmPanels(1)
	g.sgemmPanels(2)
	if err := os.WriteFile("kernels512_amd64.s", []byte(g.b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen_kernels512:", err)
		os.Exit(1)
	}
}
