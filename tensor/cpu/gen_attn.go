//go:build ignore

// gen_attn writes the attention kernels: attn512_amd64.s (AVX-512) and
// attn_amd64.s (AVX2). Run go run gen_attn.go from tensor/cpu (go
// generate does the same). Each file has a scores kernel and a pv kernel
// for tiles of four and of two query vectors; the four share one skeleton
// per instruction set, so they are generated instead of written by hand.
//
// scores: s_v[j] = q_v·k_j. A tile is vectors × keys with 16 (zmm) or 8
// (ymm) accumulators; for two vectors each accumulator row is a "virtual
// vector" u = v + 2g over key group g, so both shapes share one
// transposing reduction. pv: acc_v += Σ_j p_v[j]·v_j with one chunk of
// every accumulator of the tile in registers over all the keys.
package main

import (
	"fmt"
	"os"
	"strings"
)

// Field offsets of attnArgs (attn_amd64.go); TestAttnArgsLayout checks
// them. Score rows lie scoreRow bytes apart (attnBlock floats).
const (
	offQ      = 0
	offS      = 8
	offKV     = 16
	offStride = 24
	offKeys   = 32
	offD      = 40
	offPf     = 48
	scoreRow  = 256
)

// isa is one instruction set's vector registers.
type isa struct {
	name   string // kernel name suffix
	reg    byte   // 'Z' or 'Y'
	bytes  int    // bytes per vector register
	accums int    // accumulators of a tile: 16 zmm or 8 ymm
}

var (
	avx512 = isa{name: "", reg: 'Z', bytes: 64, accums: 16}
	avx2   = isa{name: "AVX", reg: 'Y', bytes: 32, accums: 8}
)

func (s isa) r(i int) string { return fmt.Sprintf("%c%d", s.reg, i) }

// keysPerGroup is how many keys one virtual vector of a tile covers.
func (s isa) keysPerGroup() int { return s.accums / 4 }

type gen struct{ b strings.Builder }

func (g *gen) f(format string, a ...any) { fmt.Fprintf(&g.b, format+"\n", a...) }

func log2(n int) int {
	l := 0
	for ; n > 1; n >>= 1 {
		l++
	}
	return l
}

// keyAddr is the address of key kk of a tile: keys 0-3 from SI, 4-7 from
// R10 (SI plus four rows), with DX the row stride and R12 three of them.
func keyAddr(kk int) string {
	base := "SI"
	if kk >= 4 {
		base = "R10"
	}
	return "(" + base + ")" + [...]string{"", "(DX*1)", "(DX*2)", "(R12*1)"}[kk%4]
}

// vecAddr is the address of vector v of the tile (d floats apart: R9 d in
// bytes, R10 three times that) at displacement disp from R8.
func vecAddr(v, disp int) string {
	d := ""
	if disp != 0 {
		d = fmt.Sprint(disp)
	}
	return d + [...]string{"(R8)", "(R8)(R9*1)", "(R8)(R9*2)", "(R8)(R10*1)"}[v]
}

func (g *gen) scores(s isa, nv int) {
	name := fmt.Sprintf("attnScores%d%s", nv, s.name)
	kpg := s.keysPerGroup()
	groups := 4 / nv
	keys := kpg * groups // keys per tile
	lbl := strings.ToLower(name)
	g.f("")
	g.f("// func %s(a *attnArgs)", name)
	g.f("// s_v[j] = q_v · k_j for v < %d, j < keys (a multiple of %d), d a multiple", nv, keys)
	g.f("// of %d: %d keys × %d vectors per tile in %s0-%s%d (accumulator 4j+u of", s.bytes/4, keys, nv, string(s.reg), string(s.reg), s.accums-1)
	g.f("// virtual vector u = v + %d·g, key %d·g + j), then a transposing reduction.", nv, kpg)
	g.f("// Registers: AX args, R8 q_0 at the column, R9 d in bytes, SI (R10)")
	g.f("// key rows 0-3 (4-7) at the column, DX key stride, R12 3·stride, R11")
	g.f("// prefetch distance, R15 prefetch address, CX tiles left, DI column,")
	g.f("// BX offset in the score rows, R14 s_0.")
	g.f("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	g.f("\tMOVQ a+0(FP), AX")
	g.f("\tMOVQ %d(AX), R8", offQ)
	g.f("\tMOVQ %d(AX), R14", offS)
	g.f("\tMOVQ %d(AX), SI", offKV)
	g.f("\tMOVQ %d(AX), DX", offStride)
	g.f("\tLEAQ (DX)(DX*2), R12")
	g.f("\tMOVQ %d(AX), R11", offPf)
	g.f("\tMOVQ %d(AX), CX", offKeys)
	g.f("\tSHRQ $%d, CX", log2(keys))
	g.f("\tJZ   %sdone", lbl)
	g.f("\tMOVQ %d(AX), R9", offD)
	g.f("\tSHLQ $2, R9")
	if nv == 4 {
		g.f("\tLEAQ (R9)(R9*2), R10")
	} else if keys > 4 {
		g.f("\tLEAQ (SI)(DX*4), R10")
	}
	g.f("\tXORQ BX, BX")
	g.f("")
	g.f("%stile:", lbl)
	for i := 0; i < s.accums; i++ {
		g.f("\tVXORPS %s, %s, %s", s.r(i), s.r(i), s.r(i))
	}
	g.f("\tXORQ DI, DI")
	g.f("")
	g.f("%sdim:", lbl)
	for k0 := 0; k0 < keys; k0 += 4 {
		base := strings.TrimSuffix(strings.TrimPrefix(keyAddr(k0), "("), ")")
		g.f("\tLEAQ (%s)(R11*1), R15", base)
		for kk := k0; kk < min(keys, k0+4); kk++ {
			g.f("\tPREFETCHT1 (R15)%s", strings.TrimPrefix(keyAddr(kk), "("+base+")"))
		}
	}
	kreg := func(kk int) string { return s.r(s.accums + kk) }
	qreg := func(v int) string { return s.r(s.accums + keys + v) }
	for kk := 0; kk < keys; kk++ {
		g.f("\tVMOVUPS %s, %s", keyAddr(kk), kreg(kk))
	}
	for v := 0; v < nv; v++ {
		g.f("\tVMOVUPS %s, %s", vecAddr(v, 0), qreg(v))
	}
	for j := 0; j < kpg; j++ {
		for u := 0; u < 4; u++ {
			g.f("\tVFMADD231PS %s, %s, %s", qreg(u%nv), kreg(kpg*(u/nv)+j), s.r(4*j+u))
		}
	}
	g.f("\tADDQ $%d, SI", s.bytes)
	if nv == 2 && keys > 4 {
		g.f("\tADDQ $%d, R10", s.bytes)
	}
	g.f("\tADDQ $%d, R8", s.bytes)
	g.f("\tADDQ $%d, DI", s.bytes)
	g.f("\tCMPQ DI, R9")
	g.f("\tJLT  %sdim", lbl)
	g.f("")
	// off is the byte offset of virtual vector u's scores in the rows.
	off := func(u int) int { return scoreRow*(u%nv) + 4*kpg*(u/nv) }
	if s.reg == 'Z' {
		g.f("\t// Pairs of accumulators of one key: 256-bit halves added, then")
		g.f("\t// 128-bit quarters, leaving Z(4j) with lane u = partial s of u and")
		g.f("\t// key j; two in-lane rounds then leave in Z0 lane u = its 4 scores.")
		for j := 0; j < kpg; j++ {
			for _, p := range []int{0, 2} {
				a, b := 4*j+p, 4*j+p+1
				g.f("\tVSHUFF32X4 $0x44, Z%d, Z%d, Z16", b, a)
				g.f("\tVSHUFF32X4 $0xEE, Z%d, Z%d, Z17", b, a)
				g.f("\tVADDPS     Z17, Z16, Z%d", a)
			}
			a, b := 4*j, 4*j+2
			g.f("\tVSHUFF32X4 $0x88, Z%d, Z%d, Z16", b, a)
			g.f("\tVSHUFF32X4 $0xDD, Z%d, Z%d, Z17", b, a)
			g.f("\tVADDPS     Z17, Z16, Z%d", a)
		}
		for _, ab := range [][2]int{{0, 4}, {8, 12}, {0, 8}} {
			g.f("\tVSHUFPS $0x88, Z%d, Z%d, Z16", ab[1], ab[0])
			g.f("\tVSHUFPS $0xDD, Z%d, Z%d, Z17", ab[1], ab[0])
			g.f("\tVADDPS  Z17, Z16, Z%d", ab[0])
		}
		g.f("\tVMOVUPS X0, (R14)(BX*1)")
		for u := 1; u < 4; u++ {
			g.f("\tVEXTRACTF32X4 $%d, Z0, %d(R14)(BX*1)", u, off(u))
		}
	} else {
		g.f("\t// Y(4j+u) sums to u's score of key j: X(4j) = the four u's, then")
		g.f("\t// unpacked into each u's pair of keys.")
		for j := 0; j < kpg; j++ {
			b := 4 * j
			g.f("\tVHADDPS      Y%d, Y%d, Y14", b+1, b)
			g.f("\tVHADDPS      Y%d, Y%d, Y15", b+3, b+2)
			g.f("\tVHADDPS      Y15, Y14, Y14")
			g.f("\tVEXTRACTF128 $1, Y14, X15")
			g.f("\tVADDPS       X15, X14, X%d", b)
		}
		g.f("\tVUNPCKLPS X4, X0, X8")
		g.f("\tVUNPCKHPS X4, X0, X9")
		for u := 0; u < 4; u++ {
			disp := ""
			if off(u) != 0 {
				disp = fmt.Sprint(off(u))
			}
			g.f("\t%s X%d, %s(R14)(BX*1)", [...]string{"VMOVLPS", "VMOVHPS"}[u%2], 8+u/2, disp)
		}
	}
	g.f("\tADDQ $%d, BX", 4*keys)
	g.f("\tSUBQ R9, R8")
	g.f("\tSUBQ R9, SI")
	g.f("\tLEAQ (SI)(DX*%d), SI", keys)
	if nv == 2 && keys > 4 {
		g.f("\tSUBQ R9, R10")
		g.f("\tLEAQ (R10)(DX*%d), R10", keys)
	}
	g.f("\tDECQ CX")
	g.f("\tJNZ  %stile", lbl)
	g.f("")
	g.f("%sdone:", lbl)
	g.f("\tVZEROUPPER")
	g.f("\tRET")
}

func (g *gen) pv(s isa, nv int) {
	name := fmt.Sprintf("attnPV%d%s", nv, s.name)
	per := s.accums / nv // registers of each accumulator in a chunk
	chunk := per * s.bytes
	lbl := strings.ToLower(name)
	g.f("")
	g.f("// func %s(a *attnArgs)", name)
	g.f("// acc_v[i] += Σ_j p_v[j]·v_j[i] for v < %d, j < keys in order (keys > 0),", nv)
	g.f("// i < d (d a multiple of %d): per %d-float chunk of d the accumulators", chunk/4, chunk/4)
	g.f("// (%s(%d·v+c)) stay in registers over all the keys. Registers: AX args, R8", string(s.reg), per)
	g.f("// acc_0 at the chunk, R9 d in bytes, R10 3·R9, R12 p_0 (the score rows),")
	g.f("// SI value rows at the chunk, DI the key's value row, DX value stride,")
	g.f("// R11 prefetch distance, CX key index, R15 chunks left.")
	g.f("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	g.f("\tMOVQ a+0(FP), AX")
	g.f("\tMOVQ %d(AX), R8", offQ)
	g.f("\tMOVQ %d(AX), R12", offS)
	g.f("\tMOVQ %d(AX), SI", offKV)
	g.f("\tMOVQ %d(AX), DX", offStride)
	g.f("\tMOVQ %d(AX), R11", offPf)
	g.f("\tMOVQ %d(AX), R9", offD)
	g.f("\tMOVQ R9, R15")
	g.f("\tSHLQ $2, R9")
	g.f("\tLEAQ (R9)(R9*2), R10")
	g.f("\tSHRQ $%d, R15", log2(chunk/4))
	g.f("\tJZ   %sdone", lbl)
	g.f("\tCMPQ %d(AX), $0", offKeys)
	g.f("\tJLE  %sdone", lbl)
	g.f("")
	g.f("%schunk:", lbl)
	for v := 0; v < nv; v++ {
		for c := 0; c < per; c++ {
			g.f("\tVMOVUPS %s, %s", vecAddr(v, c*s.bytes), s.r(per*v+c))
		}
	}
	g.f("\tMOVQ SI, DI")
	g.f("\tXORQ CX, CX")
	g.f("")
	g.f("%skey:", lbl)
	for l := 0; l < chunk; l += 64 {
		if l == 0 {
			g.f("\tPREFETCHT1 (DI)(R11*1)")
		} else {
			g.f("\tPREFETCHT1 %d(DI)(R11*1)", l)
		}
	}
	vreg := func(c int) string { return s.r(s.accums + c) }
	preg := func(v int) string { return s.r(s.accums + per + v) }
	for c := 0; c < per; c++ {
		g.f("\tVMOVUPS %d(DI), %s", c*s.bytes, vreg(c))
	}
	for v := 0; v < nv; v++ {
		g.f("\tVBROADCASTSS %d(R12)(CX*4), %s", scoreRow*v, preg(v))
	}
	for v := 0; v < nv; v++ {
		for c := 0; c < per; c++ {
			g.f("\tVFMADD231PS %s, %s, %s", vreg(c), preg(v), s.r(per*v+c))
		}
	}
	g.f("\tADDQ DX, DI")
	g.f("\tINCQ CX")
	g.f("\tCMPQ CX, %d(AX)", offKeys)
	g.f("\tJLT  %skey", lbl)
	g.f("")
	for v := 0; v < nv; v++ {
		for c := 0; c < per; c++ {
			g.f("\tVMOVUPS %s, %s", s.r(per*v+c), vecAddr(v, c*s.bytes))
		}
	}
	g.f("\tADDQ $%d, R8", chunk)
	g.f("\tADDQ $%d, SI", chunk)
	g.f("\tDECQ R15")
	g.f("\tJNZ  %schunk", lbl)
	g.f("")
	g.f("%sdone:", lbl)
	g.f("\tVZEROUPPER")
	g.f("\tRET")
}

func write(file string, s isa, about string) {
	g := &gen{}
	g.f("// Code generated by gen_attn.go; DO NOT EDIT.")
	g.f("")
	g.f("// %s attention kernels (see gen_attn.go): tiles of four and of two", about)
	g.f("// query vectors of one KV head against a block of keys, and their")
	g.f("// accumulators against the block's value rows. attnArgs (attn_amd64.go)")
	g.f("// holds the operands: the vectors or accumulators lie d floats apart,")
	g.f("// the score rows attnBlock (64) floats apart. Rows are prefetched pf")
	g.f("// bytes ahead into L2 (PREFETCHT1: into L1 the line fill buffers ran")
	g.f("// short and a decode row read its cache at half the speed).")
	g.f("")
	g.f("#include \"textflag.h\"")
	for _, nv := range []int{4, 2} {
		g.scores(s, nv)
		g.pv(s, nv)
	}
	if err := os.WriteFile(file, []byte(g.b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen_attn:", err)
		os.Exit(1)
	}
}

func main() {
	write("attn512_amd64.s", avx512, "AVX-512")
	write("attn_amd64.s", avx2, "AVX2")
}
