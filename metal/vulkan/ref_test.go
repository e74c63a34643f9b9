//go:build linux

package vulkan

import (
	"math"
	"math/rand/v2"

	"mlxchat/tensor"
)

// Float64 references for every op; the tensors are built so that the
// reference reads exactly the values the GPU reads (weights are generated
// as integers plus representable scales and biases, not quantized).

type qmat struct {
	m *tensor.Matrix
	// deq[o][k] is the dequantized (or dense) weight in float64.
	deq [][]float64
}

func roundTo(dt tensor.DType, v float32) float32 {
	switch dt {
	case tensor.BF16:
		return tensor.BF16ToF32(tensor.F32ToBF16(v))
	case tensor.F16:
		return tensor.F16ToF32(tensor.F32ToF16(v))
	}
	return v
}

func encode(dt tensor.DType, vals []float32, shape ...int) *tensor.Tensor {
	t := tensor.New(dt, shape...)
	if err := tensor.EncodeF32(t.Data, dt, vals); err != nil {
		panic(err)
	}
	return t
}

// newQuant builds a random affine-quantized matrix with scales and biases
// of dtype sdt.
func newQuant(r *rand.Rand, out, in, bits, gs int, sdt tensor.DType) qmat {
	per := 32 / bits
	w := tensor.New(tensor.U32, out, in/per)
	ng := in / gs
	sc := make([]float32, out*ng)
	bi := make([]float32, out*ng)
	for i := range sc {
		sc[i] = roundTo(sdt, float32(0.01+0.05*r.Float64()))
		bi[i] = roundTo(sdt, float32(-0.2*r.Float64()))
	}
	q := make([][]uint32, out)
	words := w.U32()
	for o := range out {
		q[o] = make([]uint32, in)
		for k := range in {
			v := uint32(r.IntN(1 << bits))
			q[o][k] = v
			words[o*(in/per)+k/per] |= v << (bits * (k % per))
		}
	}
	deq := make([][]float64, out)
	for o := range out {
		deq[o] = make([]float64, in)
		for k := range in {
			g := o*ng + k/gs
			deq[o][k] = float64(sc[g])*float64(q[o][k]) + float64(bi[g])
		}
	}
	return qmat{
		m:   &tensor.Matrix{Out: out, In: in, W: w, Scales: encode(sdt, sc, out, ng), Biases: encode(sdt, bi, out, ng), Bits: bits, GroupSize: gs},
		deq: deq,
	}
}

func newDense(r *rand.Rand, out, in int, dt tensor.DType) qmat {
	vals := make([]float32, out*in)
	deq := make([][]float64, out)
	for o := range out {
		deq[o] = make([]float64, in)
		for k := range in {
			v := roundTo(dt, float32(r.NormFloat64()*0.1))
			vals[o*in+k] = v
			deq[o][k] = float64(v)
		}
	}
	return qmat{m: &tensor.Matrix{Out: out, In: in, W: encode(dt, vals, out, in)}, deq: deq}
}

func randVals(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}

func refMatMul(x []float32, n int, w qmat) []float64 {
	out := make([]float64, n*w.m.Out)
	for i := range n {
		for o := range w.m.Out {
			s := 0.0
			for k := range w.m.In {
				s += float64(x[i*w.m.In+k]) * w.deq[o][k]
			}
			out[i*w.m.Out+o] = s
		}
	}
	return out
}

func refRMSNorm(x []float32, n int, w []float64, eps float32) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/n; r++ {
		ss := 0.0
		for i := range n {
			v := float64(x[r*n+i])
			ss += v * v
		}
		inv := 1 / math.Sqrt(ss/float64(n)+float64(eps))
		for i := range n {
			v := float64(x[r*n+i]) * inv
			if w != nil {
				v *= w[i]
			}
			out[r*n+i] = v
		}
	}
	return out
}

func refRoPE(x []float32, n, heads, hd, pos0 int, r *tensor.Rotary) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	half := r.Dims / 2
	invs := r.InvFreq.F32()
	for row := range n {
		for h := range heads {
			b := (row*heads + h) * hd
			for i := range half {
				th := float64(float32(float64(pos0+row)) * invs[i])
				c, s := math.Cos(th), math.Sin(th)
				i1, i2 := b+i, b+i+half
				if r.Interleaved {
					i1, i2 = b+2*i, b+2*i+1
				}
				x1, x2 := float64(x[i1]), float64(x[i2])
				out[i1] = x1*c - x2*s
				out[i2] = x2*c + x1*s
			}
		}
	}
	return out
}

// refLayerNorm normalizes rows of n values around their mean (float64).
func refLayerNorm(x []float32, n int, w, bias []float64, eps float64) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/n; r++ {
		row := x[r*n : (r+1)*n]
		var mean, vr float64
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(n)
		for _, v := range row {
			vr += (float64(v) - mean) * (float64(v) - mean)
		}
		inv := 1 / math.Sqrt(vr/float64(n)+eps)
		for i, v := range row {
			y := (float64(v) - mean) * inv
			if w != nil {
				y *= w[i]
			}
			if bias != nil {
				y += bias[i]
			}
			out[r*n+i] = y
		}
	}
	return out
}

func refAttention(q, k, v []float32, nq, hq, nk, hkv, d int, mask tensor.Mask, scale float64) []float64 {
	out := make([]float64, nq*hq*d)
	kpos := mask.KeyPositions()
	rep := hq / hkv
	for r := range nq {
		qp := mask.QueryStart + r
		for h := range hq {
			kh := h / rep
			sc := make([]float64, nk)
			mx := math.Inf(-1)
			for j := range nk {
				if !mask.Allowed(qp, kpos[j]) {
					sc[j] = math.Inf(-1)
					continue
				}
				s := 0.0
				for i := range d {
					s += float64(q[(r*hq+h)*d+i]) * float64(k[(j*hkv+kh)*d+i])
				}
				sc[j] = s * scale
				mx = math.Max(mx, sc[j])
			}
			sum := 0.0
			for j := range nk {
				sc[j] = math.Exp(sc[j] - mx)
				sum += sc[j]
			}
			for i := range d {
				a := 0.0
				for j := range nk {
					a += sc[j] * float64(v[(j*hkv+kh)*d+i])
				}
				out[(r*hq+h)*d+i] = a / sum
			}
		}
	}
	return out
}

func refGelu(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func refSoftmax(x []float32, n int) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/n; r++ {
		mx := math.Inf(-1)
		for i := range n {
			mx = math.Max(mx, float64(x[r*n+i]))
		}
		s := 0.0
		for i := range n {
			out[r*n+i] = math.Exp(float64(x[r*n+i]) - mx)
			s += out[r*n+i]
		}
		for i := range n {
			out[r*n+i] /= s
		}
	}
	return out
}
