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

// emuMatvec512 runs matvec512's kernel for one x row in the emulator, over
// two ranges of output rows as two workers would.
func emuMatvec512(t *testing.T, e *emu, w *tensor.Matrix, x []float32) []float32 {
	in, gs, bits := w.In, w.GroupSize, w.Bits
	xq := make([]byte, xzLen(in, bits))
	sxs := make([]float32, sxsLen(in/gs))
	xzQuantize(xq, sxs, x, gs, bits)
	a := qzSetup(w, xq, sxs)
	dst := make([]float32, w.Out)
	for _, b := range [][]byte{w.W.Data, w.Scales.Data, w.Biases.Data, emuBytes(xq), emuBytes(sxs), emuBytes(dst)} {
		e.addRegion(b)
	}
	mid := w.Out / 2 & ^1
	for _, r := range [][2]int{{0, mid}, {mid, w.Out}} {
		if r[0] == r[1] {
			continue
		}
		c := make([]float32, qzScratchLen(a))
		e.addRegion(emuBytes(c))
		args := []qzArgs{qzRange(a, w, r[0], r[1], c, dst)}
		e.addRegion(emuBytes(args))
		e.call(fmt.Sprintf("qz%dg%d", bits, gs), frameOf(uint64(uintptr(unsafe.Pointer(&args[0])))))
	}
	e.regions = e.regions[:len(e.symData)]
	return dst
}

// TestEmu512Decode runs the AVX-512 decode kernels in the emulator on
// every bit width, group size and scale dtype, over rows that end in a
// partial 128-element block, group counts around 16 and row counts with
// 1-3 rows after the 4-row passes, against float64 arithmetic.
func TestEmu512Decode(t *testing.T) {
	e := newEmu(t, "kernels512_amd64.s")
	rng := rand.New(rand.NewPCG(20, 20))
	shapes := []struct{ in, out, gs int }{{96, 37, 32}, {2048, 13, 64}, {2560, 9, 128}, {608, 6, 32}, {1152, 7, 64}, {384, 5, 128}, {32, 3, 32}}
	for _, bits := range []int{4, 8} {
		for _, sd := range []tensor.DType{tensor.BF16, tensor.F16, tensor.F32} {
			for _, sh := range shapes {
				m, err := tensor.QuantizeAffine(randF32(rng, sh.out*sh.in, 0.05), sh.out, sh.in, bits, sh.gs, sd)
				if err != nil {
					t.Fatal(err)
				}
				wd, terms := refDequant(t, m)
				x := testX(rng, 3, sh.in)
				for r := 0; r < 3; r++ {
					xr := x[r*sh.in : (r+1)*sh.in]
					got := emuMatvec512(t, e, m, xr)
					want, mag := refProduct(xr, wd, terms, 1, sh.in, sh.out)
					checkProduct(t, fmt.Sprintf("q%d g%d %s %dx%d row %d", bits, sh.gs, sd, sh.out, sh.in, r), got, want, mag)
				}
			}
		}
	}
}

// TestEmu512Quantizer runs the AVX-512 x splitters in the emulator: they
// must write exactly the limbs and scales xzQuantize writes (both round
// halfway cases to even), and group sums within float rounding.
func TestEmu512Quantizer(t *testing.T) {
	e := newEmu(t, "kernels512_amd64.s")
	rng := rand.New(rand.NewPCG(21, 21))
	for _, bits := range []int{4, 8} {
		for _, c := range []struct{ in, gs int }{{128, 32}, {384, 64}, {2048, 64}, {2560, 128}, {640, 32}} {
			x := testX(rng, 1, c.in)
			for i := 0; i < c.gs; i++ {
				x[i] = 0 // an all-zero group
			}
			blocks := c.in / 128
			wantQ, gotQ := make([]byte, xzLen(c.in, bits)), make([]byte, xzLen(c.in, bits))
			wantS, gotS := make([]float32, sxsLen(c.in/c.gs)), make([]float32, sxsLen(c.in/c.gs))
			for i := range gotQ {
				gotQ[i] = 99
			}
			xzQuantize(wantQ, wantS, x, c.gs, bits)
			for _, b := range [][]byte{emuBytes(x), emuBytes(gotQ), emuBytes(gotS)} {
				e.addRegion(b)
			}
			e.call(fmt.Sprintf("xzq%dg%d", bits, c.gs), frameOf(ptrOf(x), ptrOf(gotQ), ptrOf(gotS), uint64(blocks)))
			e.regions = e.regions[:len(e.symData)]
			for i := range wantQ {
				if gotQ[i] != wantQ[i] {
					t.Fatalf("bits %d in %d gs %d: limb at %d = %d, want %d", bits, c.in, c.gs, i, gotQ[i], wantQ[i])
				}
			}
			for i := range wantS {
				if i%32 < 16 && gotS[i] != wantS[i] || math.Abs(float64(gotS[i]-wantS[i])) > 1e-5*(1+math.Abs(float64(wantS[i]))) {
					t.Fatalf("bits %d in %d gs %d: sxs[%d] = %g, want %g", bits, c.in, c.gs, i, gotS[i], wantS[i])
				}
			}
		}
	}
}

// TestEmu512Attention runs the AVX-512 attention kernels in the emulator
// against float64 sums: scores of four (two) query vectors against key
// rows stride floats apart (a multiple of 4 (8) keys), and four (two)
// accumulators taking value rows weighted by their score rows, at head
// sizes of one to four chunks.
func TestEmu512Attention(t *testing.T) {
	e := newEmu(t, "attn512_amd64.s")
	rng := rand.New(rand.NewPCG(22, 22))
	for _, c := range []struct{ nv, d, keys, stride int }{
		{4, 16, 4, 16}, {4, 64, 12, 128}, {4, 256, 64, 512}, {4, 192, 9, 200},
		{2, 16, 8, 16}, {2, 128, 24, 256}, {2, 256, 64, 512}, {2, 384, 9, 400},
	} {
		stride, d, nv := c.stride, c.d, c.nv
		kv := randF32(rng, (c.keys-1)*stride+d, 1)
		q, acc := randF32(rng, nv*d, 1), randF32(rng, nv*d, 1)
		s := make([]float32, nv*attnBlock)
		args := make([]attnArgs, 1)
		for _, b := range [][]byte{emuBytes(q), emuBytes(acc), emuBytes(s), emuBytes(kv), emuBytes(args)} {
			e.addRegion(b)
		}
		frame := frameOf(uint64(uintptr(unsafe.Pointer(&args[0]))))
		name := fmt.Sprintf("%d vectors, d %d keys %d stride %d", nv, d, c.keys, stride)
		if d%16 == 0 && c.keys%(16/nv) == 0 {
			args[0] = attnArgs{q: unsafe.Pointer(&q[0]), s: unsafe.Pointer(&s[0]), kv: unsafe.Pointer(&kv[0]),
				stride: 4 * stride, keys: c.keys, d: d, pf: 4 * stride}
			e.call(fmt.Sprintf("attnScores%d", nv), frame)
			for v := range nv {
				for j := range c.keys {
					var want, mag float64
					for i := range d {
						p := float64(q[v*d+i]) * float64(kv[j*stride+i])
						want, mag = want+p, mag+math.Abs(p)
					}
					if got := s[v*attnBlock+j]; math.Abs(float64(got)-want) > 1e-6*mag {
						t.Fatalf("%s: score of vector %d, key %d = %g, want %g", name, v, j, got, want)
					}
				}
			}
		}
		if d%(256/nv) == 0 {
			want := make([]float64, nv*d)
			for v := range nv {
				for j := range c.keys {
					s[v*attnBlock+j] = rng.Float32()
				}
				s[v*attnBlock+c.keys/2] = 0 // a masked key
				for i := range d {
					want[v*d+i] = float64(acc[v*d+i])
					for j := range c.keys {
						want[v*d+i] += float64(s[v*attnBlock+j]) * float64(kv[j*stride+i])
					}
				}
			}
			args[0] = attnArgs{q: unsafe.Pointer(&acc[0]), s: unsafe.Pointer(&s[0]), kv: unsafe.Pointer(&kv[0]),
				stride: 4 * stride, keys: c.keys, d: d, pf: 4 * stride}
			e.call(fmt.Sprintf("attnPV%d", nv), frame)
			for i, w := range want {
				if math.Abs(float64(acc[i])-w) > 1e-5*(1+math.Abs(w)) {
					t.Fatalf("%s: accumulator %d[%d] = %g, want %g", name, i/d, i%d, acc[i], w)
				}
			}
		}
		e.regions = e.regions[:len(e.symData)]
	}
}
