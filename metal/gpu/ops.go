package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"mlxchat/metal/kernels"
	"mlxchat/tensor"
)

// dtypeCode maps a float dtype to the kernels' DT_* codes.
func dtypeCode(what string, d tensor.DType) (uint32, error) {
	switch d {
	case tensor.F32:
		return 0, nil
	case tensor.F16:
		return 1, nil
	case tensor.BF16:
		return 2, nil
	}
	return 0, fmt.Errorf("%s: dtype %s not supported (want F32, F16 or BF16)", what, d)
}

// checkF32 checks that t is a non-empty F32 tensor whose Data holds its
// elements; what+part names it in the error (joined only on failure: this
// runs for every operand of every op).
func checkF32(what, part string, t *tensor.Tensor) error {
	if t == nil || t.DType != tensor.F32 || len(t.Data) != t.Len()*4 || t.Len() == 0 {
		return checkF32Slow(what+part, t)
	}
	return nil
}

func checkF32Slow(what string, t *tensor.Tensor) error {
	if t == nil {
		return fmt.Errorf("%s: missing tensor", what)
	}
	if t.DType != tensor.F32 {
		return fmt.Errorf("%s: got %s, want F32", what, t)
	}
	if len(t.Data) != t.Len()*4 {
		return fmt.Errorf("%s: %s holds %d bytes, want %d", what, t, len(t.Data), t.Len()*4)
	}
	if t.Len() == 0 {
		return fmt.Errorf("%s: empty tensor %s", what, t)
	}
	return nil
}

func lastDim(t *tensor.Tensor) int {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[len(t.Shape)-1]
}

// quantInfo validates a matrix and returns its scale dtype code (or the
// dense dtype code) for the kernels.
//
// A matrix that passed once is remembered (by its address and the fields
// checked), since every decode step multiplies by the same few hundred.
func (b *Backend) quantInfo(what string, w *tensor.Matrix) (uint32, error) {
	if w == nil {
		return 0, fmt.Errorf("%s: missing matrix", what)
	}
	key := matKey{w: w, out: w.Out, in: w.In, bits: w.Bits, gs: w.GroupSize}
	if w.W != nil {
		key.wp, key.wn = dataPtr(w.W.Data), len(w.W.Data)
	}
	if w.Scales != nil && w.Biases != nil {
		key.sp, key.bp = dataPtr(w.Scales.Data), dataPtr(w.Biases.Data)
	}
	if dt, ok := b.validMats[key]; ok {
		return dt, nil
	}
	dt, err := quantInfo(what, w)
	if err == nil {
		if len(b.validMats) > 1<<14 {
			clear(b.validMats)
		}
		b.validMats[key] = dt
	}
	return dt, err
}

// matKey identifies a validated matrix.
type matKey struct {
	w                 *tensor.Matrix
	wp, sp, bp        uintptr
	wn                int
	out, in, bits, gs int
}

func quantInfo(what string, w *tensor.Matrix) (uint32, error) {
	if w == nil {
		return 0, fmt.Errorf("%s: missing matrix", what)
	}
	if err := w.Validate(what); err != nil {
		return 0, err
	}
	if !w.Quantized() {
		return dtypeCode(what+" weight", w.W.DType)
	}
	if w.Scales.DType != w.Biases.DType {
		return 0, fmt.Errorf("%s: scales are %s but biases %s", what, w.Scales.DType, w.Biases.DType)
	}
	return dtypeCode(what+" scales", w.Scales.DType)
}

// MatMul computes dst[n, w.Out] = x[n, w.In] · wᵀ. Up to 4 rows use the
// matrix-vector kernel (decode), more the tiled kernel (prefill). Weights
// larger than one binding are processed in row chunks.
func (b *Backend) MatMul(dst, x *tensor.Tensor, w *tensor.Matrix) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.matmul(dst, x, w))
}

// wideQMV is the size (outputs times inputs) from which a matrix-vector
// product runs the wide kernels, 4 output rows per workgroup: on the
// H200 (E2B 4-bit) they were faster from 2048x8192 and 7680x2048 up and
// slower at 2048x2048 and below.
const wideQMV = 1 << 23

func (b *Backend) matmul(dst, x *tensor.Tensor, w *tensor.Matrix) error {
	dt, err := b.quantInfo("matmul", w)
	if err != nil {
		return err
	}
	if err := checkF32("matmul x", "", x); err != nil {
		return err
	}
	if err := checkF32("matmul dst", "", dst); err != nil {
		return err
	}
	n := x.Rows()
	if lastDim(x) != w.In {
		return fmt.Errorf("matmul: x %s has %d columns, weight has In=%d", x, lastDim(x), w.In)
	}
	if dst.Len() != n*w.Out || lastDim(dst) != w.Out {
		return fmt.Errorf("matmul: dst %s, want %d rows of %d", dst, n, w.Out)
	}
	if w.Quantized() && w.Bits != 4 && w.Bits != 8 {
		return fmt.Errorf("matmul: %d-bit weights not supported on %s (want 4 or 8)", w.Bits, b.drv.Name())
	}
	wRow := int64(len(w.W.Data) / w.Out)
	var sRow int64
	if w.Quantized() {
		sRow = int64(len(w.Scales.Data) / w.Out)
	}
	// Output chunk: rows of W whose bytes fit one binding.
	maxOut := int(b.lim.MaxRange / wRow)
	if maxOut < 1 {
		return fmt.Errorf("matmul: one weight row (%d bytes) exceeds the device binding limit", wRow)
	}
	useQMV := w.Quantized() && n <= 4 && w.In%(128/w.Bits) == 0 && w.GroupSize%(128/w.Bits) == 0
	// Large matrices take the wide matrix-vector kernels (4 rows per
	// workgroup), unless fusion is on (fuse.go merges the narrow ones).
	wide := useQMV && b.fusion == FuseOff && int64(w.Out)*int64(w.In) >= wideQMV
	qmvRows := kernels.QMVRows
	if wide {
		qmvRows = kernels.QMVWideRows
	}
	// The grid's x count is at most 65535: QMV covers qmvRows rows per
	// workgroup (the tiled kernels 64, so this bound suits them too).
	if maxOut > 65535*qmvRows {
		maxOut = 65535 * qmvRows
	}
	if maxOut < w.Out && maxOut > 64 {
		maxOut &^= 63
	}
	// Row chunk of x/dst so both fit one binding and the grid.
	rowBytes := int64(w.In) * 4
	if d := int64(w.Out) * 4; d > rowBytes {
		rowBytes = d
	}
	maxRows := int(b.lim.MaxRange / rowBytes)
	if maxRows < 1 {
		return fmt.Errorf("matmul: one activation row exceeds the device binding limit")
	}
	if maxRows > 65535*64 {
		maxRows = 65535 * 64
	}
	for m0 := 0; m0 < n; m0 += maxRows {
		m1 := min(n, m0+maxRows)
		xa, err := b.localize(in(x).sub(int64(m0*w.In*4), int64((m1-m0)*w.In*4)), (m1-m0)*w.In)
		if err != nil {
			return err
		}
		for o0 := 0; o0 < w.Out; o0 += maxOut {
			o1 := min(w.Out, o0+maxOut)
			args := [8]arg{
				1: xa,
				2: weight(w.W).sub(int64(o0)*wRow, int64(o1-o0)*wRow),
				5: out(dst).sub(int64(m0*w.Out*4), int64((m1-m0)*w.Out*4)),
			}
			if w.Quantized() {
				args[3] = weight(w.Scales).sub(int64(o0)*sRow, int64(o1-o0)*sRow)
				args[4] = weight(w.Biases).sub(int64(o0)*sRow, int64(o1-o0)*sRow)
			}
			nout := o1 - o0
			if useQMV {
				id := kernels.QMV4
				switch {
				case wide && w.Bits == 8:
					id = kernels.QMVW8
				case wide:
					id = kernels.QMVW4
				case w.Bits == 8:
					id = kernels.QMV8
				}
				words := []uint32{uint32(w.In), uint32(nout), uint32(w.Out), uint32(o0), uint32(w.GroupSize), dt}
				err := b.launch(id, &args, words, [3]int{ceilDiv(nout, qmvRows), m1 - m0, 1})
				if err == nil {
					continue
				}
				if !errors.Is(err, errMisaligned) {
					return err
				}
			}
			id := kernels.MM
			var gs, sdt, wdt uint32
			if w.Quantized() {
				id = kernels.QMM4
				if w.Bits == 8 {
					id = kernels.QMM8
				}
				gs, sdt = uint32(w.GroupSize), dt
			} else {
				wdt = dt
			}
			words := []uint32{uint32(w.In), uint32(nout), uint32(m1 - m0), uint32(w.Out), uint32(o0), gs, sdt, wdt}
			if err := b.launch(id, &args, words, [3]int{ceilDiv(nout, 64), ceilDiv(m1-m0, 64), 1}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Gather writes rows ids[i] of w, dequantized, into dst[len(ids), w.In].
func (b *Backend) Gather(dst *tensor.Tensor, w *tensor.Matrix, ids []int32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.gather(dst, w, ids))
}

func (b *Backend) gather(dst *tensor.Tensor, w *tensor.Matrix, ids []int32) error {
	dt, err := b.quantInfo("gather", w)
	if err != nil {
		return err
	}
	if err := checkF32("gather dst", "", dst); err != nil {
		return err
	}
	if len(ids) == 0 {
		return errors.New("gather: no ids")
	}
	if dst.Len() != len(ids)*w.In || lastDim(dst) != w.In {
		return fmt.Errorf("gather: dst %s, want %d rows of %d", dst, len(ids), w.In)
	}
	raw := make([]byte, 4*len(ids))
	for i, id := range ids {
		if id < 0 || int(id) >= w.Out {
			return fmt.Errorf("gather: id %d at %d out of range [0, %d)", id, i, w.Out)
		}
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(id))
	}
	var bits, gs, sdt, wdt uint32
	if w.Quantized() {
		bits, gs, sdt = uint32(w.Bits), uint32(w.GroupSize), dt
	} else {
		wdt = dt
	}
	wRow := int64(len(w.W.Data) / w.Out)
	var sRow int64
	args := [8]arg{2: weight(w.W), 5: out(dst)}
	if w.Quantized() {
		sRow = int64(len(w.Scales.Data) / w.Out)
		args[3], args[4] = weight(w.Scales), weight(w.Biases)
	} else {
		// The dense kernel never reads slots 3 and 4, but Vulkan wants
		// every declared binding valid.
		args[3], args[4] = weight(w.W), weight(w.W)
	}
	gx := ceilDiv(w.In, 64)
	rowOut := int64(w.In) * 4
	if int64(len(w.W.Data)) <= b.lim.MaxRange {
		idt := &tensor.Tensor{DType: tensor.U32, Shape: []int{len(ids)}, Data: raw}
		for i0 := 0; i0 < len(ids); i0 += 65535 {
			i1 := min(len(ids), i0+65535)
			a := args
			a[1] = in(idt).sub(int64(4*i0), int64(4*(i1-i0)))
			a[5] = out(dst).sub(int64(i0)*rowOut, int64(i1-i0)*rowOut)
			words := []uint32{uint32(w.In), uint32(i1 - i0), bits, gs, sdt, wdt}
			if err := b.launch(kernels.Gather, &a, words, [3]int{gx, i1 - i0, 1}); err != nil {
				return err
			}
		}
		return nil
	}
	// Table larger than one binding: one launch per id over its row only.
	zero := &tensor.Tensor{DType: tensor.U32, Shape: []int{1}, Data: make([]byte, 4)}
	for i, id := range ids {
		a := args
		a[1] = in(zero)
		a[2] = weight(w.W).sub(int64(id)*wRow, wRow)
		if w.Quantized() {
			a[3] = weight(w.Scales).sub(int64(id)*sRow, sRow)
			a[4] = weight(w.Biases).sub(int64(id)*sRow, sRow)
		} else {
			a[3], a[4] = a[2], a[2]
		}
		a[5] = out(dst).sub(int64(i)*rowOut, rowOut)
		words := []uint32{uint32(w.In), 1, bits, gs, sdt, wdt}
		if err := b.launch(kernels.Gather, &a, words, [3]int{gx, 1, 1}); err != nil {
			return err
		}
	}
	return nil
}

// RMSNorm normalizes each row of x: dst = x / sqrt(mean(x²)+eps) * weight.
func (b *Backend) RMSNorm(dst, x, w *tensor.Tensor, eps float32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.norm("rmsnorm", dst, x, w, nil, eps, false))
}

// LayerNorm normalizes each row of x with its mean and population
// variance: dst = (x - mean) / sqrt(var+eps) * weight + bias.
func (b *Backend) LayerNorm(dst, x, w, bias *tensor.Tensor, eps float32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.norm("layernorm", dst, x, w, bias, eps, true))
}

// norm records the row-normalization kernel: RMSNorm, or LayerNorm when
// center is set.
func (b *Backend) norm(what string, dst, x, w, bias *tensor.Tensor, eps float32, center bool) error {
	if err := checkF32(what, " x", x); err != nil {
		return err
	}
	if err := checkF32(what, " dst", dst); err != nil {
		return err
	}
	n := lastDim(x)
	if dst.Len() != x.Len() || lastDim(dst) != n {
		return fmt.Errorf("%s: dst %s does not match x %s", what, dst, x)
	}
	// param binds a per-column weight or bias, or x as a placeholder the
	// kernel never reads.
	param := func(t *tensor.Tensor, name string) (has, dt uint32, a arg, err error) {
		if t == nil {
			return 0, 0, in(x), nil
		}
		c, err := dtypeCode(what+" "+name, t.DType)
		if err != nil {
			return 0, 0, arg{}, err
		}
		if t.Len() != n || len(t.Data) != n*t.DType.Size() {
			return 0, 0, arg{}, fmt.Errorf("%s: %s %s, want %d values", what, name, t, n)
		}
		return 1, c, weight(t), nil
	}
	hasW, wdt, wa, err := param(w, "weight")
	if err != nil {
		return err
	}
	hasB, bdt, ba, err := param(bias, "bias")
	if err != nil {
		return err
	}
	var c uint32
	if center {
		c = 1
	}
	rows := x.Rows()
	args := [8]arg{1: in(x), 2: wa, 3: out(dst), 4: ba}
	return b.launch(kernels.RMSNorm, &args, []uint32{uint32(n), uint32(rows), hasW, wdt, f32w(eps), c, hasB, bdt}, gridRows(rows))
}

// RoPE rotates x[n, heads, headDim] in place with the table r at
// positions pos0, pos0+1, ... The table is bound like a weight: uploaded
// at its first use and kept.
func (b *Backend) RoPE(x *tensor.Tensor, pos0 int, r *tensor.Rotary) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.rope(x, pos0, r))
}

func (b *Backend) rope(x *tensor.Tensor, pos0 int, r *tensor.Rotary) error {
	if err := checkF32("rope x", "", x); err != nil {
		return err
	}
	n, heads, hd, err := tensor.CheckRoPE(x, pos0, r)
	if err != nil {
		return err
	}
	if pos0+n > math.MaxUint32 {
		return fmt.Errorf("rope: position %d out of range", pos0)
	}
	half := r.Dims / 2
	var inter uint32
	if r.Interleaved {
		inter = 1
	}
	args := [8]arg{1: inout(x), 2: weight(r.InvFreq)}
	words := []uint32{uint32(n), uint32(heads), uint32(hd), uint32(half), uint32(pos0), inter}
	return b.launch(kernels.RoPE, &args, words, grid1D(n*heads*half, 64))
}

// maxHeadDim is the largest head size the attention kernel holds.
const maxHeadDim = 512

// Attention computes softmax(scale·q·kᵀ + mask)·v per head with
// grouped-query sharing; the mask's spans and window go to the kernel as
// positions, never as a matrix.
func (b *Backend) Attention(dst, q, k, v *tensor.Tensor, mask tensor.Mask, scale float32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.attention(dst, q, k, v, mask, scale))
}

func (b *Backend) attention(dst, q, k, v *tensor.Tensor, mask tensor.Mask, scale float32) error {
	shape, err := tensor.CheckAttention(dst, q, k, v, mask)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		what string
		t    *tensor.Tensor
	}{{"attention q", q}, {"attention k", k}, {"attention v", v}, {"attention dst", dst}} {
		if err := checkF32(c.what, "", c.t); err != nil {
			return err
		}
	}
	nq, hq, d, nk, hkv := shape.Rows, shape.Heads, shape.HeadDim, shape.Keys, shape.KVHeads
	if d > maxHeadDim {
		return fmt.Errorf("attention: head dim %d exceeds the kernel's %d", d, maxHeadDim)
	}
	if nq > 65535 || hq > 65535 {
		return fmt.Errorf("attention: %d rows x %d heads exceeds the grid", nq, hq)
	}
	var spans []byte
	col := 0
	for _, s := range mask.Keys {
		if s.Len == 0 {
			continue
		}
		if s.Start+s.Len > math.MaxUint32 || mask.QueryStart+nq > math.MaxUint32 {
			return fmt.Errorf("attention: positions beyond 2^32")
		}
		spans = binary.LittleEndian.AppendUint32(spans, uint32(s.Start))
		spans = binary.LittleEndian.AppendUint32(spans, uint32(col))
		col += s.Len
	}
	st := &tensor.Tensor{DType: tensor.U32, Shape: []int{len(spans) / 4}, Data: spans}
	args := [8]arg{1: in(q), 2: in(k), 3: in(v), 4: in(st), 5: out(dst)}
	if nq*(hq/hkv) > 1 { // K and V are re-read per query row and head
		var err error
		if args[2], err = b.localize(args[2], k.Len()); err != nil {
			return err
		}
		if args[3], err = b.localize(args[3], v.Len()); err != nil {
			return err
		}
	}
	args[6] = args[5] // declared by the kernel; written only when split
	words := []uint32{uint32(nq), uint32(nk), uint32(hq), uint32(hkv), uint32(d),
		uint32(mask.QueryStart), uint32(mask.Window), uint32(len(spans) / 8), f32w(scale), 0}
	if g := hq / hkv; nq*hq < 256 && g <= attnDMaxGroup && g*d <= attnDMaxQ {
		// Decode-sized: the query heads of a KV head share its rows, and
		// short key splits give the GPU enough workgroups.
		kps, splits := attnDSplit(nk)
		if splits <= 1 {
			return b.launch(kernels.AttnD, &args, words, [3]int{hkv, nq, 1})
		}
		part, err := b.scratch(nq * hq * splits * (d + 2))
		if err != nil {
			return err
		}
		args[6] = part
		words[9] = uint32(kps)
		if err := b.launch(kernels.AttnD, &args, words, [3]int{hkv, nq, splits}); err != nil {
			return err
		}
		margs := [8]arg{1: part, 2: out(dst)}
		return b.launch(kernels.AttnMerge, &margs, []uint32{uint32(hq), uint32(d), uint32(splits)}, [3]int{hq, nq, 1})
	}
	kps, splits := attnSplit(nq, hq, nk)
	if splits <= 1 {
		return b.launch(kernels.Attn, &args, words, [3]int{hq, nq, 1})
	}
	part, err := b.scratch(nq * hq * splits * (d + 2))
	if err != nil {
		return err
	}
	args[6] = part
	words[9] = uint32(kps)
	if err := b.launch(kernels.Attn, &args, words, [3]int{hq, nq, splits}); err != nil {
		return err
	}
	margs := [8]arg{1: part, 2: out(dst)}
	return b.launch(kernels.AttnMerge, &margs, []uint32{uint32(hq), uint32(d), uint32(splits)}, [3]int{hq, nq, 1})
}

// Limits of the attnd kernel (src/attnd.comp): query heads per KV head
// (MAXG) and their query values together (MAXQ).
const (
	attnDMaxGroup = 8
	attnDMaxQ     = 2048
)

// attnDSplit cuts nk keys into splits for attnd: 32 keys each (the
// kernel's chunk) up to 128 splits, longer splits (whole chunks) beyond.
// The split count follows nk rounded up to 256 keys, so a growing cache
// changes the launch grid (and makes the step record a new plan) once
// every 256 decoded tokens, not every 32; splits past the last key see
// none and attnmerge skips them.
func attnDSplit(nk int) (kps, splits int) {
	const chunk, maxSplits, bucket = 32, 128, 256
	if nk <= chunk {
		return 0, 1
	}
	kps = (nk + chunk*maxSplits - 1) / (chunk * maxSplits) * chunk
	return kps, ((nk+bucket-1)/bucket*bucket + kps - 1) / kps
}

// attnSplit chooses how to split the keys of a decode-sized attention over
// workgroups: when few (row, head) workgroups would each stream many keys,
// the keys are cut into splits of kps keys (a multiple of the 128-key
// chunk), at most 64 splits, combined afterwards by attnmerge.
func attnSplit(nq, hq, nk int) (kps, splits int) {
	const chunk, minKeys, maxSplits = 128, 256, 64
	if nq*hq >= 256 || nk <= 2*minKeys {
		return 0, 1
	}
	kps = max(minKeys, (nk+maxSplits-1)/maxSplits)
	kps = (kps + chunk - 1) / chunk * chunk
	return kps, (nk + kps - 1) / kps
}

// Elementwise op codes of the eltwise kernel.
const (
	opAdd = iota
	opMul
	opScale
	opSoftcap
	opGelu
	opCopy
	opSiLU
)

func (b *Backend) eltwise(what string, op uint32, dst, a, bt *tensor.Tensor, f float32) error {
	if err := checkF32(what, " dst", dst); err != nil {
		return err
	}
	if err := checkF32(what, " x", a); err != nil {
		return err
	}
	if dst.Len() != a.Len() {
		return fmt.Errorf("%s: dst %s and input %s differ in size", what, dst, a)
	}
	nb := a.Len()
	if bt != nil {
		if err := checkF32(what, " b", bt); err != nil {
			return err
		}
		switch {
		case bt.Len() == a.Len():
		case bt.Rows() == 1 && bt.Len() == lastDim(a):
			nb = bt.Len()
		default:
			return fmt.Errorf("%s: b %s neither matches a %s nor is one row of it", what, bt, a)
		}
	} else {
		bt = a
	}
	args := [8]arg{1: in(a), 2: in(bt), 3: out(dst)}
	return b.launch(kernels.Eltwise, &args, []uint32{uint32(a.Len()), uint32(nb), op, f32w(f)}, grid1D(a.Len(), 256))
}

// GeluTanh applies the tanh approximation of GELU elementwise.
func (b *Backend) GeluTanh(dst, x *tensor.Tensor) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.eltwise("gelu", opGelu, dst, x, nil, 0))
}

// SiLU computes dst = x·sigmoid(x).
func (b *Backend) SiLU(dst, x *tensor.Tensor) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.eltwise("silu", opSiLU, dst, x, nil, 0))
}

// Add computes dst = a + bt; bt may be one row broadcast over a's rows.
func (b *Backend) Add(dst, a, bt *tensor.Tensor) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bt == nil {
		return b.fail(errors.New("add: missing b"))
	}
	return b.fail(b.eltwise("add", opAdd, dst, a, bt, 0))
}

// Mul computes dst = a * bt; bt may be one row broadcast over a's rows.
func (b *Backend) Mul(dst, a, bt *tensor.Tensor) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bt == nil {
		return b.fail(errors.New("mul: missing b"))
	}
	return b.fail(b.eltwise("mul", opMul, dst, a, bt, 0))
}

// Scale computes dst = x * s.
func (b *Backend) Scale(dst, x *tensor.Tensor, s float32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.eltwise("scale", opScale, dst, x, nil, s))
}

// Softcap computes dst = tanh(x / c) * c.
func (b *Backend) Softcap(dst, x *tensor.Tensor, c float32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c == 0 || c != c {
		return b.fail(fmt.Errorf("softcap: cap %v must be non-zero", c))
	}
	return b.fail(b.eltwise("softcap", opSoftcap, dst, x, nil, c))
}

// Copy copies src into dst (same element count, F32).
func (b *Backend) Copy(dst, src *tensor.Tensor) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.eltwise("copy", opCopy, dst, src, nil, 0))
}

// Softmax normalizes each row of x over its last axis.
func (b *Backend) Softmax(dst, x *tensor.Tensor) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail(b.rowOp("softmax", kernels.Softmax, dst, x))
}

// Argmax writes the index of the largest value of each row of x into
// dst (I32 or U32 of x.Rows() elements), so greedy decoding reads back one
// integer per step: the first index on ties; only values above -Inf count
// (NaN never does), and a row without any gives 0 (tensor.ArgmaxF32).
// Rows of at least argmaxSplit values are read by many workgroups (parts
// of argmaxSpan values each) whose results a second launch merges.
func (b *Backend) Argmax(dst, x *tensor.Tensor) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if dst == nil || x == nil || (dst.DType != tensor.I32 && dst.DType != tensor.U32) || dst.Len() != x.Rows() || len(dst.Data) != 4*dst.Len() {
		return b.fail(fmt.Errorf("argmax: dst %v, want I32 of %d values", dst, x.Rows()))
	}
	return b.fail(b.argmax(dst, x))
}

// Argmax's split: rows of at least argmaxSplit values run as parts of
// argmaxSpan values (16 per invocation; the E2B vocabulary of 262144 in
// 128 workgroups), each writing its best (key, index), then one merge
// launch per row.
const (
	argmaxSpan  = 2048
	argmaxSplit = 4 * argmaxSpan
)

func (b *Backend) argmax(dst, x *tensor.Tensor) error {
	if err := checkF32("argmax", " x", x); err != nil {
		return err
	}
	rows, n := x.Rows(), lastDim(x)
	if n > math.MaxUint32/2 {
		return fmt.Errorf("argmax: rows of %d values", n)
	}
	span := max(argmaxSpan, ceilDiv(ceilDiv(n, 65535), 128)*128)
	parts := ceilDiv(n, span)
	if n < argmaxSplit || rows > 65535 {
		args := [8]arg{1: in(x), 2: out(dst)}
		return b.launch(kernels.Argmax, &args, []uint32{uint32(n), uint32(rows), 0, 0}, gridRows(rows))
	}
	part, err := b.scratch(2 * rows * parts)
	if err != nil {
		return err
	}
	args := [8]arg{1: in(x), 2: part}
	if err := b.launch(kernels.Argmax, &args, []uint32{uint32(n), uint32(rows), uint32(span), 1}, [3]int{parts, rows, 1}); err != nil {
		return err
	}
	part.write = false
	margs := [8]arg{1: part, 2: out(dst)}
	return b.launch(kernels.Argmax, &margs, []uint32{uint32(parts), uint32(rows), 0, 2}, gridRows(rows))
}

func (b *Backend) rowOp(what string, id kernels.ID, dst, x *tensor.Tensor) error {
	if err := checkF32(what, " x", x); err != nil {
		return err
	}
	if id == kernels.Softmax {
		if err := checkF32(what, " dst", dst); err != nil {
			return err
		}
		if dst.Len() != x.Len() {
			return fmt.Errorf("%s: dst %s does not match x %s", what, dst, x)
		}
	}
	rows := x.Rows()
	args := [8]arg{1: in(x), 2: out(dst)}
	return b.launch(id, &args, []uint32{uint32(lastDim(x)), uint32(rows)}, gridRows(rows))
}

var (
	_ tensor.Backend   = (*Backend)(nil)
	_ tensor.ArgmaxOps = (*Backend)(nil)
)
