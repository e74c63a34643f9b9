//go:build amd64

package cpu

// An interpreter for the Go assembly that gen_kernels512.go and gen_attn.go write, so the
// AVX-512 kernels are checked on every amd64 machine, not only on those
// that have AVX-512: the CPU model of the development machines changes
// between sessions. It knows exactly the instructions the generator emits
// (each with the Intel semantics, operands in Go order: sources first,
// destination last), reads and writes only memory the test registered
// (a load or store outside it fails the test, so an over-read is caught
// too), and rounds like the hardware: float32 arithmetic in Go is IEEE
// single precision, FMAs round once (fma32), conversions to int round to
// nearest even. Its own correctness is checked by running the kernels
// that were verified on AVX-512 hardware (prefill GEMM, dequantization)
// against float64 references, next to the decode kernels.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"mlxchat/tensor"
)

// Operand kinds.
const (
	oReg = iota
	oImm
	oMem
)

// Register classes.
const (
	rGP = iota
	rX
	rY
	rZ
	rK
)

type emuOpnd struct {
	kind   int
	class  int   // register class (oReg)
	reg    int   // register number (oReg)
	imm    int64 // oImm
	base   int   // GP register, -1 none; -2 the argument frame (FP)
	index  int   // GP register, -1 none
	scale  int64
	disp   int64
	sym    string // DATA symbol (SB)
	symOff int64
}

type emuInst struct {
	op     string
	zero   bool // .Z: masked lanes become zero
	bcast  bool // .BCST: the memory operand is one broadcast float32
	args   []emuOpnd
	target int // jumps: instruction index
	line   int
}

type emuFunc struct {
	name  string
	insts []emuInst
}

type emuRegion struct {
	base uintptr
	data []byte
}

type emu struct {
	t       testing.TB
	funcs   map[string]*emuFunc
	symData map[string][]byte
	symBase map[string]uintptr
	regions []emuRegion
	gp      [16]uint64
	z       [32][64]byte
	k       [8]uint64
	zf, sf  bool
	of, cf  bool
	frame   uintptr
	steps   int
}

var gpNames = map[string]int{"AX": 0, "CX": 1, "DX": 2, "BX": 3, "SP": 4, "BP": 5, "SI": 6, "DI": 7,
	"R8": 8, "R9": 9, "R10": 10, "R11": 11, "R12": 12, "R13": 13, "R14": 14, "R15": 15}

// newEmu parses an assembly file of the package.
func newEmu(t testing.TB, file string) *emu {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := &emu{t: t, funcs: map[string]*emuFunc{}, symData: map[string][]byte{}, symBase: map[string]uintptr{}}
	type pending struct {
		fn    *emuFunc
		idx   int
		label string
	}
	var jumps []pending
	var cur *emuFunc
	labels := map[string]int{}
	finish := func() {
		for _, j := range jumps {
			ti, ok := labels[j.label]
			if !ok {
				t.Fatalf("emu: %s: no label %s", j.fn.name, j.label)
			}
			j.fn.insts[j.idx].target = ti
		}
		jumps, labels = nil, map[string]int{}
	}
	dataLines := map[string][][3]int64{}
	sc := bufio.NewScanner(f)
	ln := 0
	for sc.Scan() {
		ln++
		line := sc.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		trim := strings.TrimSpace(line)
		switch {
		case trim == "" || strings.HasPrefix(trim, "#include"):
		case strings.HasPrefix(trim, "DATA "):
			// DATA sym<>+off(SB)/size, $val
			rest := strings.TrimPrefix(trim, "DATA ")
			lhs, val, _ := strings.Cut(rest, ",")
			name, offs, _ := strings.Cut(lhs, "<>")
			offs = strings.TrimPrefix(offs, "+")
			offStr, sizeStr, _ := strings.Cut(offs, "(SB)/")
			off, _ := strconv.ParseInt(strings.TrimSpace(offStr), 0, 64)
			if offStr == "" {
				off = 0
			}
			size, _ := strconv.ParseInt(sizeStr, 0, 64)
			v, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(val), "$"), 0, 64)
			if err != nil {
				t.Fatalf("emu: line %d: %v", ln, err)
			}
			dataLines[name] = append(dataLines[name], [3]int64{off, size, v})
		case strings.HasPrefix(trim, "GLOBL "):
			rest := strings.TrimPrefix(trim, "GLOBL ")
			name, _, _ := strings.Cut(rest, "<>")
			i := strings.LastIndex(rest, "$")
			size, _ := strconv.ParseInt(rest[i+1:], 0, 64)
			buf := make([]byte, size)
			for _, d := range dataLines[name] {
				for b := int64(0); b < d[1]; b++ {
					buf[d[0]+b] = byte(d[2] >> (8 * b))
				}
			}
			e.symData[name] = buf
		case strings.HasPrefix(trim, "TEXT "):
			if cur != nil {
				finish()
			}
			name := strings.TrimPrefix(trim, "TEXT ·")
			name, _, _ = strings.Cut(name, "(SB)")
			cur = &emuFunc{name: name}
			e.funcs[name] = cur
		case strings.HasSuffix(trim, ":") && !strings.ContainsAny(trim, " \t"):
			labels[strings.TrimSuffix(trim, ":")] = len(cur.insts)
		default:
			opname, rest, _ := strings.Cut(trim, " ")
			in := emuInst{op: opname, line: ln}
			if base, suf, ok := strings.Cut(opname, "."); ok {
				in.op = base
				in.zero = suf == "Z"
				in.bcast = suf == "BCST"
			}
			if strings.HasPrefix(in.op, "J") {
				jumps = append(jumps, pending{cur, len(cur.insts), strings.TrimSpace(rest)})
			} else if rest = strings.TrimSpace(rest); rest != "" {
				for _, a := range strings.Split(rest, ",") {
					in.args = append(in.args, e.parseOpnd(strings.TrimSpace(a), ln))
				}
			}
			cur.insts = append(cur.insts, in)
		}
	}
	if cur != nil {
		finish()
	}
	// Symbols live at made-up addresses far from the Go heap.
	next := uintptr(0x7e0000000000)
	for name, buf := range e.symData {
		e.symBase[name] = next
		e.regions = append(e.regions, emuRegion{next, buf})
		next += 1 << 20
	}
	return e
}

func (e *emu) parseOpnd(s string, ln int) emuOpnd {
	if strings.HasPrefix(s, "$") {
		v, err := strconv.ParseInt(s[1:], 0, 64)
		if err != nil {
			e.t.Fatalf("emu: line %d: immediate %q", ln, s)
		}
		return emuOpnd{kind: oImm, imm: v}
	}
	if r, ok := gpNames[s]; ok {
		return emuOpnd{kind: oReg, class: rGP, reg: r}
	}
	if len(s) >= 2 && strings.IndexByte("XYZK", s[0]) >= 0 {
		if n, err := strconv.Atoi(s[1:]); err == nil {
			return emuOpnd{kind: oReg, class: map[byte]int{'X': rX, 'Y': rY, 'Z': rZ, 'K': rK}[s[0]], reg: n}
		}
	}
	o := emuOpnd{kind: oMem, base: -1, index: -1, scale: 1}
	i := strings.IndexByte(s, '(')
	if i < 0 {
		e.t.Fatalf("emu: line %d: operand %q", ln, s)
	}
	pre, parts := s[:i], s[i:]
	var regs []string
	for parts != "" {
		j := strings.IndexByte(parts, ')')
		regs = append(regs, parts[1:j])
		parts = parts[j+1:]
	}
	switch {
	case len(regs) == 1 && regs[0] == "SB":
		name, off, _ := strings.Cut(pre, "<>")
		o.sym = name
		if off != "" {
			o.symOff, _ = strconv.ParseInt(strings.TrimPrefix(off, "+"), 0, 64)
		}
		return o
	case len(regs) == 1 && regs[0] == "FP":
		_, off, _ := strings.Cut(pre, "+")
		o.base = -2
		o.disp, _ = strconv.ParseInt(off, 0, 64)
		return o
	}
	if pre != "" {
		d, err := strconv.ParseInt(pre, 0, 64)
		if err != nil {
			e.t.Fatalf("emu: line %d: displacement %q", ln, pre)
		}
		o.disp = d
	}
	o.base = gpNames[regs[0]]
	if len(regs) == 2 {
		r, sc, _ := strings.Cut(regs[1], "*")
		o.index = gpNames[r]
		o.scale, _ = strconv.ParseInt(sc, 0, 64)
	}
	return o
}

// addRegion makes b readable and writable by the emulated code.
func (e *emu) addRegion(b []byte) {
	if len(b) > 0 {
		e.regions = append(e.regions, emuRegion{uintptr(unsafe.Pointer(unsafe.SliceData(b))), b})
	}
}

func emuBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// mem returns the n bytes at addr, which must lie inside one region.
func (e *emu) mem(addr uintptr, n int, in *emuInst) []byte {
	for _, r := range e.regions {
		if addr >= r.base && addr+uintptr(n) <= r.base+uintptr(len(r.data)) {
			off := addr - r.base
			return r.data[off : off+uintptr(n)]
		}
	}
	e.t.Fatalf("emu: line %d (%s): %d bytes at %#x are outside every buffer", in.line, in.op, n, addr)
	return nil
}

func (e *emu) addr(o emuOpnd) uintptr {
	if o.sym != "" {
		b, ok := e.symBase[o.sym]
		if !ok {
			e.t.Fatalf("emu: no symbol %s", o.sym)
		}
		return b + uintptr(o.symOff)
	}
	var a uint64
	switch o.base {
	case -2:
		a = uint64(e.frame)
	case -1:
	default:
		a = e.gp[o.base]
	}
	if o.index >= 0 {
		a += e.gp[o.index] * uint64(o.scale)
	}
	return uintptr(a + uint64(o.disp))
}

// vwidth is the byte width of a vector register operand.
func vwidth(o emuOpnd) int {
	switch o.class {
	case rX:
		return 16
	case rY:
		return 32
	case rZ:
		return 64
	}
	return 8
}

// vread returns n bytes of a vector register or memory operand.
func (e *emu) vread(o emuOpnd, n int, in *emuInst) []byte {
	if o.kind == oMem {
		return append([]byte(nil), e.mem(e.addr(o), n, in)...)
	}
	return append([]byte(nil), e.z[o.reg][:n]...)
}

// vwrite writes a vector result; a register write clears the bytes above
// its width (VEX and EVEX forms), a memory write stores len(b) bytes.
func (e *emu) vwrite(o emuOpnd, b []byte, in *emuInst) {
	if o.kind == oMem {
		copy(e.mem(e.addr(o), len(b), in), b)
		return
	}
	var z [64]byte
	copy(z[:], b)
	e.z[o.reg] = z
}

func (e *emu) gpread(o emuOpnd, in *emuInst) uint64 {
	switch o.kind {
	case oImm:
		return uint64(o.imm)
	case oReg:
		return e.gp[o.reg]
	}
	return binary.LittleEndian.Uint64(e.mem(e.addr(o), 8, in))
}

func (e *emu) gpwrite(o emuOpnd, v uint64, in *emuInst) {
	if o.kind == oReg {
		e.gp[o.reg] = v
		return
	}
	binary.LittleEndian.PutUint64(e.mem(e.addr(o), 8, in), v)
}

func (e *emu) flagsSub(a, b uint64) {
	r := a - b
	e.zf, e.sf, e.cf = r == 0, int64(r) < 0, a < b
	e.of = (int64(a) < 0) != (int64(b) < 0) && (int64(r) < 0) != (int64(a) < 0)
}

func (e *emu) flagsLogic(r uint64) { e.zf, e.sf, e.cf, e.of = r == 0, int64(r) < 0, false, false }

func f32at(b []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) }
func setf32(b []byte, i int, v float32) {
	binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
}
func i32at(b []byte, i int) int32     { return int32(binary.LittleEndian.Uint32(b[4*i:])) }
func seti32(b []byte, i int, v int32) { binary.LittleEndian.PutUint32(b[4*i:], uint32(v)) }
func i16at(b []byte, i int) int16     { return int16(binary.LittleEndian.Uint16(b[2*i:])) }
func seti16(b []byte, i int, v int16) { binary.LittleEndian.PutUint16(b[2*i:], uint16(v)) }

// fma32 is a·b + c rounded once to float32, as VFMADD does: the product
// is exact in float64 and the float64 sum's rounding error is recovered
// (TwoSum), so a float64 sum that lands exactly between two float32s is
// resolved the way the exact sum would be.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	r := float32(s)
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return r
	}
	bb := s - p
	err := (p - (s - bb)) + (float64(c) - bb)
	d := s - float64(r)
	if err == 0 || d == 0 {
		return r
	}
	next := math.Nextafter32(r, float32(math.Copysign(math.Inf(1), d)))
	if math.Abs(d) == math.Abs(float64(next)-float64(r))/2 && (err > 0) == (d > 0) {
		return next
	}
	return r
}

// cvtps2dq rounds to nearest even; NaN and out-of-range values give the
// integer indefinite 0x80000000.
func cvtps2dq(v float32) int32 {
	r := math.RoundToEven(float64(v))
	if math.IsNaN(r) || r >= 1<<31 || r < -(1<<31) {
		return math.MinInt32
	}
	return int32(r)
}

func sat16(v int32) int16 { return int16(max(min(v, math.MaxInt16), math.MinInt16)) }

// call runs function name with the argument frame.
func (e *emu) call(name string, frame []byte) {
	fn, ok := e.funcs[name]
	if !ok {
		e.t.Fatalf("emu: no function %s", name)
	}
	e.addRegion(frame)
	e.frame = uintptr(unsafe.Pointer(unsafe.SliceData(frame)))
	for pc := 0; pc < len(fn.insts); {
		in := &fn.insts[pc]
		pc++
		e.steps++
		if e.steps > 1<<28 {
			e.t.Fatalf("emu: %s runs too long", name)
		}
		if strings.HasPrefix(in.op, "J") {
			var take bool
			switch in.op {
			case "JMP":
				take = true
			case "JZ", "JEQ":
				take = e.zf
			case "JNZ", "JNE":
				take = !e.zf
			case "JLT":
				take = e.sf != e.of
			case "JGE":
				take = e.sf == e.of
			case "JGT":
				take = !e.zf && e.sf == e.of
			case "JLE":
				take = e.zf || e.sf != e.of
			case "JAE":
				take = !e.cf
			case "JB":
				take = e.cf
			default:
				e.t.Fatalf("emu: line %d: jump %s", in.line, in.op)
			}
			if take {
				pc = in.target
			}
			continue
		}
		if in.op == "RET" {
			return
		}
		e.exec(in)
	}
	e.t.Fatalf("emu: %s fell off its end", name)
}

func (e *emu) exec(in *emuInst) {
	a := in.args
	last := func() emuOpnd { return a[len(a)-1] }
	switch in.op {
	case "PREFETCHT0", "PREFETCHT1", "VZEROUPPER":
	case "MOVQ":
		e.gpwrite(a[1], e.gpread(a[0], in), in)
	case "ADDQ":
		x, y := e.gpread(a[1], in), e.gpread(a[0], in)
		r := x + y
		e.gpwrite(a[1], r, in)
		e.zf, e.sf, e.cf = r == 0, int64(r) < 0, r < x
	case "SUBQ":
		x, y := e.gpread(a[1], in), e.gpread(a[0], in)
		e.flagsSub(x, y)
		e.gpwrite(a[1], x-y, in)
	case "ANDQ":
		r := e.gpread(a[1], in) & e.gpread(a[0], in)
		e.gpwrite(a[1], r, in)
		e.flagsLogic(r)
	case "XORQ":
		r := e.gpread(a[1], in) ^ e.gpread(a[0], in)
		e.gpwrite(a[1], r, in)
		e.flagsLogic(r)
	case "IMULQ":
		e.gpwrite(a[1], e.gpread(a[1], in)*e.gpread(a[0], in), in)
	case "SHLQ":
		e.gpwrite(a[1], e.gpread(a[1], in)<<e.gpread(a[0], in), in)
	case "SHRQ":
		r := e.gpread(a[1], in) >> e.gpread(a[0], in)
		e.gpwrite(a[1], r, in)
		e.zf = r == 0
	case "INCQ", "DECQ":
		x := e.gpread(a[0], in)
		r := x + 1
		if in.op == "DECQ" {
			r = x - 1
		}
		e.gpwrite(a[0], r, in)
		e.zf, e.sf = r == 0, int64(r) < 0
	case "LEAQ":
		e.gpwrite(a[1], uint64(e.addr(a[0])), in)
	case "CMPQ":
		e.flagsSub(e.gpread(a[0], in), e.gpread(a[1], in))
	case "TESTQ":
		e.flagsLogic(e.gpread(a[0], in) & e.gpread(a[1], in))
	case "KMOVW", "KMOVD":
		n := 2
		if in.op == "KMOVD" {
			n = 4
		}
		var v uint64
		for i, b := range e.mem(e.addr(a[0]), n, in) {
			v |= uint64(b) << (8 * i)
		}
		e.k[a[1].reg] = v
	case "KORTESTW":
		v := (e.k[a[0].reg] | e.k[a[1].reg]) & 0xffff
		e.zf, e.cf = v == 0, v == 0xffff
	case "VMOVDQU64", "VMOVDQA64", "VMOVUPS", "VMOVAPS":
		if in.zero { // VMOVUPS.Z mem, K, dst: masked dword load
			w := vwidth(a[2])
			out := make([]byte, w)
			k := e.k[a[1].reg]
			for i := 0; i < w/4; i++ {
				if k>>i&1 != 0 {
					copy(out[4*i:], e.mem(e.addr(a[0])+uintptr(4*i), 4, in))
				}
			}
			e.vwrite(a[2], out, in)
			return
		}
		w := vwidth(a[0])
		if a[0].kind == oMem {
			w = vwidth(a[1])
		}
		e.vwrite(a[1], e.vread(a[0], w, in), in)
	case "VMOVDQU16": // .Z: masked word load
		w := vwidth(a[2])
		out := make([]byte, w)
		k := e.k[a[1].reg]
		for i := 0; i < w/2; i++ {
			if k>>i&1 != 0 {
				copy(out[2*i:], e.mem(e.addr(a[0])+uintptr(2*i), 2, in))
			}
		}
		e.vwrite(a[2], out, in)
	case "VMOVSS":
		if a[1].kind == oMem {
			e.vwrite(a[1], e.vread(a[0], 4, in), in)
		} else {
			e.vwrite(a[1], e.vread(a[0], 4, in), in) // load: the rest zero
		}
	case "VPANDD", "VPXORD", "VANDPS", "VXORPS":
		w := vwidth(last())
		x, y := e.vread(a[0], w, in), e.vread(a[1], w, in)
		for i := range x {
			if in.op == "VPXORD" || in.op == "VXORPS" {
				x[i] ^= y[i]
			} else {
				x[i] &= y[i]
			}
		}
		e.vwrite(last(), x, in)
	case "VPMADDWD", "VPDPWSSD":
		w := vwidth(last())
		x, y := e.vread(a[0], w, in), e.vread(a[1], w, in)
		out := e.vread(last(), w, in)
		for i := 0; i < w/4; i++ {
			s := int32(i16at(y, 2*i))*int32(i16at(x, 2*i)) + int32(i16at(y, 2*i+1))*int32(i16at(x, 2*i+1))
			if in.op == "VPDPWSSD" {
				s += i32at(out, i)
			}
			seti32(out, i, s)
		}
		e.vwrite(last(), out, in)
	case "VPDPBUSD": // unsigned bytes of src2 times signed bytes of src3, in groups of 4
		w := vwidth(last())
		x, y := e.vread(a[0], w, in), e.vread(a[1], w, in)
		out := e.vread(last(), w, in)
		for i := 0; i < w/4; i++ {
			s := i32at(out, i)
			for k := 0; k < 4; k++ {
				s += int32(y[4*i+k]) * int32(int8(x[4*i+k]))
			}
			seti32(out, i, s)
		}
		e.vwrite(last(), out, in)
	case "VPADDD", "VPSUBD":
		w := vwidth(last())
		x, y := e.vread(a[0], w, in), e.vread(a[1], w, in)
		for i := 0; i < w/4; i++ {
			if in.op == "VPADDD" {
				seti32(y, i, i32at(y, i)+i32at(x, i))
			} else {
				seti32(y, i, i32at(y, i)-i32at(x, i))
			}
		}
		e.vwrite(last(), y, in)
	case "VPSRAD":
		w := vwidth(last())
		x := e.vread(a[1], w, in)
		for i := 0; i < w/4; i++ {
			seti32(x, i, i32at(x, i)>>uint(a[0].imm))
		}
		e.vwrite(last(), x, in)
	case "VPMOVDB": // truncate each dword to its low byte
		x := e.vread(a[0], 64, in)
		out := make([]byte, 16)
		for i := range out {
			out[i] = x[4*i]
		}
		e.vwrite(last(), out, in)
	case "VPSRLW", "VPSLLD", "VPSRLD":
		w := vwidth(last())
		n := uint(a[0].imm)
		x := e.vread(a[1], w, in)
		if in.op == "VPSRLW" {
			for i := 0; i < w/2; i++ {
				seti16(x, i, int16(uint16(i16at(x, i))>>n))
			}
		} else {
			for i := 0; i < w/4; i++ {
				v := uint32(i32at(x, i))
				if in.op == "VPSLLD" {
					v <<= n
				} else {
					v >>= n
				}
				seti32(x, i, int32(v))
			}
		}
		e.vwrite(last(), x, in)
	case "VCVTDQ2PS", "VCVTPS2DQ":
		w := vwidth(last())
		x := e.vread(a[0], w, in)
		for i := 0; i < w/4; i++ {
			if in.op == "VCVTDQ2PS" {
				setf32(x, i, float32(i32at(x, i)))
			} else {
				seti32(x, i, cvtps2dq(f32at(x, i)))
			}
		}
		e.vwrite(last(), x, in)
	case "VCVTPH2PS":
		w := vwidth(last())
		x := e.vread(a[0], w/2, in)
		out := make([]byte, w)
		for i := 0; i < w/4; i++ {
			setf32(out, i, tensor.F16ToF32(uint16(i16at(x, i))))
		}
		e.vwrite(last(), out, in)
	case "VPMOVZXWD", "VPMOVZXBD":
		w := vwidth(last())
		out := make([]byte, w)
		if in.op == "VPMOVZXWD" {
			x := e.vread(a[0], w/2, in)
			for i := 0; i < w/4; i++ {
				seti32(out, i, int32(uint16(i16at(x, i))))
			}
		} else {
			x := e.vread(a[0], w/4, in)
			for i := 0; i < w/4; i++ {
				seti32(out, i, int32(x[i]))
			}
		}
		e.vwrite(last(), out, in)
	case "VPERMPS":
		w := vwidth(last())
		tab, idx := e.vread(a[0], w, in), e.vread(a[1], w, in)
		out := make([]byte, w)
		for i := 0; i < w/4; i++ {
			j := int(i32at(idx, i)) & (w/4 - 1)
			copy(out[4*i:4*i+4], tab[4*j:4*j+4])
		}
		e.vwrite(last(), out, in)
	case "VFMADD231PS", "VFMADD213PS":
		w := vwidth(last())
		var x []byte
		if in.bcast {
			v := e.vread(a[0], 4, in)
			x = make([]byte, w)
			for i := 0; i < w/4; i++ {
				copy(x[4*i:], v)
			}
		} else {
			x = e.vread(a[0], w, in)
		}
		y, d := e.vread(a[1], w, in), e.vread(last(), w, in)
		for i := 0; i < w/4; i++ {
			if in.op == "VFMADD231PS" { // d = y·x + d
				setf32(d, i, fma32(f32at(y, i), f32at(x, i), f32at(d, i)))
			} else { // d = y·d + x
				setf32(d, i, fma32(f32at(y, i), f32at(d, i), f32at(x, i)))
			}
		}
		e.vwrite(last(), d, in)
	case "VMULPS", "VADDPS", "VSUBPS", "VMAXPS":
		w := vwidth(last())
		x, y := e.vread(a[0], w, in), e.vread(a[1], w, in)
		for i := 0; i < w/4; i++ {
			p, q := f32at(y, i), f32at(x, i) // src1, src2
			var r float32
			switch in.op {
			case "VMULPS":
				r = p * q
			case "VADDPS":
				r = p + q
			case "VSUBPS":
				r = p - q
			case "VMAXPS":
				r = q
				if p > q {
					r = p
				}
			}
			setf32(y, i, r)
		}
		e.vwrite(last(), y, in)
	case "VMINSS", "VDIVSS", "VADDSS":
		x, y := e.vread(a[0], 4, in), e.vread(a[1], 16, in)
		p, q := f32at(y, 0), f32at(x, 0)
		var r float32
		switch in.op {
		case "VMINSS":
			r = q
			if p < q {
				r = p
			}
		case "VDIVSS":
			r = p / q
		case "VADDSS":
			r = p + q
		}
		setf32(y, 0, r)
		e.vwrite(last(), y, in)
	case "VHADDPS":
		w := vwidth(last())
		x, y := e.vread(a[0], w, in), e.vread(a[1], w, in)
		out := make([]byte, w)
		for l := 0; l < w/16; l++ {
			setf32(out, 4*l, f32at(y, 4*l)+f32at(y, 4*l+1))
			setf32(out, 4*l+1, f32at(y, 4*l+2)+f32at(y, 4*l+3))
			setf32(out, 4*l+2, f32at(x, 4*l)+f32at(x, 4*l+1))
			setf32(out, 4*l+3, f32at(x, 4*l+2)+f32at(x, 4*l+3))
		}
		e.vwrite(last(), out, in)
	case "VEXTRACTF64X4", "VEXTRACTF128", "VEXTRACTF32X4":
		w := 16 // the destination may be memory
		if in.op == "VEXTRACTF64X4" {
			w = 32
		}
		x := e.vread(a[1], vwidth(a[1]), in)
		off := int(a[0].imm) * w
		e.vwrite(last(), x[off:off+w], in)
	case "VINSERTI64X4":
		x := e.vread(a[2], 64, in)
		copy(x[32*a[0].imm:], e.vread(a[1], 32, in))
		e.vwrite(last(), x, in)
	case "VPERMILPS":
		w := vwidth(last())
		x := e.vread(a[1], w, in)
		out := make([]byte, w)
		imm := a[0].imm
		for i := 0; i < w/4; i++ {
			j := i&^3 + int(imm>>(2*(i&3))&3)
			copy(out[4*i:4*i+4], x[4*j:4*j+4])
		}
		e.vwrite(last(), out, in)
	case "VPBROADCASTW", "VPBROADCASTD", "VBROADCASTSS":
		n := 4
		if in.op == "VPBROADCASTW" {
			n = 2
		}
		v := e.vread(a[0], n, in)
		w := vwidth(last())
		out := make([]byte, w)
		for i := 0; i < w; i += n {
			copy(out[i:], v)
		}
		e.vwrite(last(), out, in)
	case "VSHUFF32X4": // 128-bit lanes: two picked from src1, two from src2
		x2, x1 := e.vread(a[1], 64, in), e.vread(a[2], 64, in)
		imm := a[0].imm
		out := make([]byte, 64)
		for l := 0; l < 4; l++ {
			src := x1
			if l >= 2 {
				src = x2
			}
			j := int(imm>>(2*l)) & 3
			copy(out[16*l:16*l+16], src[16*j:16*j+16])
		}
		e.vwrite(last(), out, in)
	case "VSHUFPS": // per 128-bit lane: two floats picked from src1, two from src2
		w := vwidth(last())
		x2, x1 := e.vread(a[1], w, in), e.vread(a[2], w, in)
		imm := a[0].imm
		out := make([]byte, w)
		for l := 0; l < w/16; l++ {
			for i := 0; i < 4; i++ {
				src := x1
				if i >= 2 {
					src = x2
				}
				j := int(imm>>(2*i)) & 3
				copy(out[16*l+4*i:16*l+4*i+4], src[16*l+4*j:16*l+4*j+4])
			}
		}
		e.vwrite(last(), out, in)
	case "VPACKSSDW":
		w := vwidth(last())
		x, y := e.vread(a[0], w, in), e.vread(a[1], w, in)
		out := make([]byte, w)
		for l := 0; l < w/16; l++ {
			for i := 0; i < 4; i++ {
				seti16(out, 8*l+i, sat16(i32at(y, 4*l+i)))
				seti16(out, 8*l+4+i, sat16(i32at(x, 4*l+i)))
			}
		}
		e.vwrite(last(), out, in)
	case "VPERMI2W", "VPERMI2D": // two-table permute of words or dwords
		size := 2
		if in.op == "VPERMI2D" {
			size = 4
		}
		w := vwidth(last())
		t2, t1, idx := e.vread(a[0], w, in), e.vread(a[1], w, in), e.vread(last(), w, in)
		n := w / size
		out := make([]byte, w)
		for i := 0; i < n; i++ {
			var j int
			for b := size - 1; b >= 0; b-- {
				j = j<<8 | int(idx[size*i+b])
			}
			j &= 2*n - 1
			src := t1
			if j >= n {
				src, j = t2, j-n
			}
			copy(out[size*i:size*(i+1)], src[size*j:size*(j+1)])
		}
		e.vwrite(last(), out, in)
	default:
		e.t.Fatalf("emu: line %d: instruction %s not implemented", in.line, in.op)
	}
}

// frameOf lays out uint64-sized arguments as an ABI0 argument frame.
func frameOf(args ...uint64) []byte {
	b := make([]byte, 8*len(args))
	for i, v := range args {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}

func ptrOf[T any](s []T) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(s)))) }

func (e *emu) String() string { return fmt.Sprintf("emu(%d functions)", len(e.funcs)) }
