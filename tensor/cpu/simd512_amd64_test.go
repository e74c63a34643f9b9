//go:build amd64

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"mlxchat/tensor"
)

// TestAttnArgsLayout keeps attnArgs in step with the offsets
// attn512_amd64.s reads.
func TestAttnArgsLayout(t *testing.T) {
	var a attnArgs
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"q", unsafe.Offsetof(a.q), 0},
		{"s", unsafe.Offsetof(a.s), 8},
		{"kv", unsafe.Offsetof(a.kv), 16},
		{"stride", unsafe.Offsetof(a.stride), 24},
		{"keys", unsafe.Offsetof(a.keys), 32},
		{"d", unsafe.Offsetof(a.d), 40},
		{"pf", unsafe.Offsetof(a.pf), 48},
		{"score row stride (floats)", attnBlock, 64},
	} {
		if f.got != f.want {
			t.Errorf("attnArgs.%s at offset %d, the assembly reads %d", f.name, f.got, f.want)
		}
	}
}

// TestQzArgsLayout keeps qzArgs in step with the field offsets the
// generated assembly (gen_kernels512.go) uses.
func TestQzArgsLayout(t *testing.T) {
	var a qzArgs
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"w", unsafe.Offsetof(a.w), 0},
		{"s", unsafe.Offsetof(a.s), 8},
		{"bsoff", unsafe.Offsetof(a.bsoff), 16},
		{"xq", unsafe.Offsetof(a.xq), 24},
		{"sxs", unsafe.Offsetof(a.sxs), 32},
		{"sxsEnd", unsafe.Offsetof(a.sxsEnd), 40},
		{"c", unsafe.Offsetof(a.c), 48},
		{"dst", unsafe.Offsetof(a.dst), 56},
		{"rows", unsafe.Offsetof(a.rows), 64},
		{"wstride", unsafe.Offsetof(a.wstride), 72},
		{"sstride", unsafe.Offsetof(a.sstride), 80},
		{"cstride", unsafe.Offsetof(a.cstride), 88},
		{"blocks", unsafe.Offsetof(a.blocks), 96},
		{"tail", unsafe.Offsetof(a.tail), 104},
		{"gmask", unsafe.Offsetof(a.gmask), 112},
		{"wmask0", unsafe.Offsetof(a.wmask0), 120},
		{"wmask1", unsafe.Offsetof(a.wmask1), 128},
		{"sfmt", unsafe.Offsetof(a.sfmt), 136},
		{"pf4", unsafe.Offsetof(a.pf4), 144},
		{"pf1", unsafe.Offsetof(a.pf1), 152},
		{"wfull", unsafe.Offsetof(a.wfull), 160},
	} {
		if f.got != f.want {
			t.Errorf("qzArgs.%s at offset %d, the assembly reads it at %d", f.name, f.got, f.want)
		}
	}
}

// TestXZQuantize512 compares the AVX-512 x splitters with the Go one on
// this machine's hardware: the same limbs and scales (both round halfway
// cases to even), sums within float rounding. (TestEmu512Quantizer checks
// the same in the emulator on every machine.)
func TestXZQuantize512(t *testing.T) {
	if !haveAVX512() {
		t.Skip("no AVX-512 on this machine")
	}
	rng := rand.New(rand.NewPCG(11, 11))
	for _, bits := range []int{4, 8} {
		for _, c := range []struct{ in, gs int }{{128, 32}, {384, 64}, {2048, 64}, {2560, 128}, {608, 32}, {96, 32}, {8192, 128}} {
			x := testX(rng, 1, c.in)
			for i := 0; i < c.gs; i++ {
				x[i] = 0 // an all-zero group
			}
			wantQ, gotQ := make([]byte, xzLen(c.in, bits)), make([]byte, xzLen(c.in, bits))
			wantS, gotS := make([]float32, sxsLen(c.in/c.gs)), make([]float32, sxsLen(c.in/c.gs))
			for i := range gotQ {
				gotQ[i] = 99
			}
			xzQuantize(wantQ, wantS, x, c.gs, bits)
			xzQuantize512(gotQ, gotS, x, c.gs, bits)
			for i := range wantS {
				if i%32 < 16 && gotS[i] != wantS[i] || math.Abs(float64(gotS[i]-wantS[i])) > 1e-5*(1+math.Abs(float64(wantS[i]))) {
					t.Fatalf("bits %d in %d gs %d: sxs[%d] = %g, want %g", bits, c.in, c.gs, i, gotS[i], wantS[i])
				}
			}
			for i := range wantQ {
				if gotQ[i] != wantQ[i] {
					t.Fatalf("bits %d in %d gs %d: limb at %d = %d, want %d", bits, c.in, c.gs, i, gotQ[i], wantQ[i])
				}
			}
		}
	}
}

// TestMatMulPanelTiles runs the prefill paths (AVX2, and AVX-512 where the
// machine has it) on one thread, where a worker's rows span several L2
// tiles and rows are longer than one slice of the inner dimension, against
// float64 arithmetic with the ordinary float tolerance (prefill does not
// round x).
func TestMatMulPanelTiles(t *testing.T) {
	levels := availableLevels()[1:]
	if len(levels) == 0 {
		t.Skip("no AVX2/FMA/F16C on this machine")
	}
	for _, l := range levels {
		t.Run(l.String(), func(t *testing.T) { testMatMulPanelTiles(t, l) })
	}
}

func testMatMulPanelTiles(t *testing.T, level kernelLevel) {
	rng := rand.New(rand.NewPCG(12, 12))
	be := newBackendLevel(1, level)
	defer be.Close()
	be3 := newBackendLevel(3, level)
	defer be3.Close()
	for _, c := range []struct{ n, in, out, bits, gs int }{
		{7, 8192, 301, 8, 64}, {11, 4224, 133, 4, 32}, {6, 8192, 67, 8, 128},
		{16, 2048, 37, 4, 64}, {45, 4096, 61, 4, 128}, {33, 1024, 25, 8, 32}, {70, 8192, 13, 4, 64},
		{300, 256, 6000, 4, 64},                     // two spans of tiles per worker, the last one partial
		{17, 2048, 40, 8, 64}, {52, 4096, 7, 4, 32}, // one panel partly padding; a block of six partly padding
	} {
		m, err := tensor.QuantizeAffine(randF32(rng, c.out*c.in, 0.05), c.out, c.in, c.bits, c.gs, tensor.BF16)
		if err != nil {
			t.Fatal(err)
		}
		wd, _ := tensor.Dequantize(m)
		xv := randF32(rng, c.n*c.in, 1)
		dst := be.Alloc(c.n, c.out)
		if err := be.MatMul(dst, mustT(t, xv, c.n, c.in), m); err != nil {
			t.Fatal(err)
		}
		compare(t, fmt.Sprintf("%s n=%d in=%d out=%d q%d g%d", level, c.n, c.in, c.out, c.bits, c.gs), dst.F32(), refMatMul(xv, wd, c.n, c.in, c.out), 1e-4, 1e-4)
		// Three threads build the x panels and write the tiles out in
		// parallel; every element is the same sum in the same order. (On
		// AVX2, fewer than minPanelRows rows take the four-row and decode
		// kernels, whose row pairing follows the tiles of each worker.)
		if level == levelAVX2 && c.n < minPanelRows {
			continue
		}
		dst3 := be3.Alloc(c.n, c.out)
		if err := be3.MatMul(dst3, mustT(t, xv, c.n, c.in), m); err != nil {
			t.Fatal(err)
		}
		for i, v := range dst3.F32() {
			if v != dst.F32()[i] {
				t.Fatalf("n=%d in=%d out=%d: element %d is %v on 3 threads, %v on 1", c.n, c.in, c.out, i, v, dst.F32()[i])
			}
		}
	}
}
