package cpu

import (
	"math"
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"mlxchat/tensor"
)

// sparseDensity is the largest share of non-zero x values for which
// SparseMatMul takes the column path: past it the fixed cost of the group
// factors (every output once per group that holds a non-zero value) and
// scattered column reads outgrow the whole product.
// BenchmarkSparseDownProj measures where the two cross.
const sparseDensity = 0.15

// colBlock is how many outputs one column-kernel call accumulates in
// registers (16 AVX-512 vectors).
const colBlock = 128

// colMatrix is a quantized matrix stored by columns: for each input j,
// its codes for every output, so that a product with a mostly-zero x reads
// only the columns whose x value is non-zero. Values are exactly the
// MLX affine ones (w = s·q + b); only the order changes. Everything is
// block-major (blocks of colBlock outputs), so a worker's block is one
// contiguous run of memory: few pages, and it stays in L2 over many rows.
type colMatrix struct {
	out, outPad int // outputs, and outputs rounded up to colBlock
	in, gs      int
	groups      int
	bits        int // 4 or 8
	// q holds block ob's codes at ob*in*blockBytes(), then column j of the
	// block at j*blockBytes(). 8 bits: byte r is output r of the block.
	// 4 bits: four runs of 16 bytes, run c's byte t holds output 32c+t in
	// its low nibble and 32c+16+t in its high one, so one zero-extension
	// of 16 bytes yields two vectors of codes.
	q []byte
	// sb holds block ob's factors at ob*groups*2*colBlock: for each group,
	// the block's colBlock scales, then its colBlock biases (zero past
	// out). sb16 holds them instead, as bfloat16, when the matrix's own
	// scales and biases are bfloat16: the same values in half the bytes,
	// which a sparse product reads for nearly every group. One is nil.
	sb   []float32
	sb16 []uint16
}

// blockBytes is the length of one output block of one column.
func (cm *colMatrix) blockBytes() int { return colBlock * cm.bits / 8 }

// blockQ returns block ob's codes.
func (cm *colMatrix) blockQ(ob int) []byte {
	n := cm.in * cm.blockBytes()
	return cm.q[ob*n : (ob+1)*n]
}

// factorIndex is the index in sb (or sb16) of factor i of block ob, i
// counted from the block's first (group g's scales at g*2*colBlock, its
// biases colBlock after them).
func (cm *colMatrix) factorIndex(ob, i int) int { return ob*cm.groups*2*colBlock + i }

// blockFactors is where a column kernel reads one block's factors: p
// points at the first, float32 or (half == 1) bfloat16.
type blockFactors struct {
	p    unsafe.Pointer
	half int
}

// size is the size of one factor.
func (f blockFactors) size() int { return 4 - 2*f.half }

// blockFactors returns block ob's factors in place.
func (cm *colMatrix) blockFactors(ob int) blockFactors {
	if cm.sb16 != nil {
		return blockFactors{unsafe.Pointer(&cm.sb16[cm.factorIndex(ob, 0)]), 1}
	}
	return blockFactors{unsafe.Pointer(&cm.sb[cm.factorIndex(ob, 0)]), 0}
}

// factor returns factor i of block ob.
func (cm *colMatrix) factor(ob, i int) float32 {
	if cm.sb16 != nil {
		return math.Float32frombits(uint32(cm.sb16[cm.factorIndex(ob, i)]) << 16)
	}
	return cm.sb[cm.factorIndex(ob, i)]
}

// setFactor stores factor i of block ob: v must come from the matrix's
// own scales or biases, so it is exact in bfloat16 when those are.
func (cm *colMatrix) setFactor(ob, i int, v float32) {
	if cm.sb16 != nil {
		cm.sb16[cm.factorIndex(ob, i)] = uint16(math.Float32bits(v) >> 16)
		return
	}
	cm.sb[cm.factorIndex(ob, i)] = v
}

// colCache holds the column form of each matrix SparseMatMul has seen,
// built on first use and dropped once the matrix is garbage collected.
type colCache struct {
	mu sync.Mutex
	m  map[weak.Pointer[tensor.Matrix]]*colEntry
}

type colEntry struct {
	once sync.Once
	cm   *colMatrix
}

// get returns w's column form, building it (over the pool) on first use.
func (c *colCache) get(b *Backend, w *tensor.Matrix) *colMatrix {
	key := weak.Make(w)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[weak.Pointer[tensor.Matrix]]*colEntry)
	}
	e, ok := c.m[key]
	if !ok {
		e = &colEntry{}
		c.m[key] = e
		runtime.AddCleanup(w, func(k weak.Pointer[tensor.Matrix]) {
			c.mu.Lock()
			delete(c.m, k)
			c.mu.Unlock()
		}, key)
	}
	c.mu.Unlock()
	e.once.Do(func() { e.cm = b.buildColumns(w) })
	return e.cm
}

// len reports how many matrices have a column form (tests).
func (c *colCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// buildColumns writes w (4 or 8 bits) in column form, one block of
// colBlock outputs per task.
func (b *Backend) buildColumns(w *tensor.Matrix) *colMatrix {
	cm := &colMatrix{out: w.Out, in: w.In, gs: w.GroupSize, groups: w.In / w.GroupSize, bits: w.Bits}
	cm.outPad = (w.Out + colBlock - 1) / colBlock * colBlock
	blocks := cm.outPad / colBlock
	cm.q = make([]byte, blocks*cm.in*cm.blockBytes())
	if n := blocks * cm.groups * 2 * colBlock; w.Scales.DType == tensor.BF16 && w.Biases.DType == tensor.BF16 {
		cm.sb16 = make([]uint16, n)
	} else {
		cm.sb = make([]float32, n)
	}
	bb := cm.blockBytes()
	b.pool.run(blocks, func(ob int) {
		codesBuf := b.getBuf(2 * cm.in)
		defer b.putBuf(codesBuf)
		codes := *codesBuf
		lo, hi := codes[:cm.in], codes[cm.in:]
		rowBuf := b.getBuf(2 * cm.groups)
		defer b.putBuf(rowBuf)
		row := *rowBuf
		q := cm.blockQ(ob)
		for r := 0; r < colBlock; r++ {
			o := ob*colBlock + r
			if o >= cm.out {
				break
			}
			rowScales(row, w, o)
			for g := 0; g < cm.groups; g++ {
				cm.setFactor(ob, g*2*colBlock+r, row[g])
				cm.setFactor(ob, g*2*colBlock+colBlock+r, row[cm.groups+g])
			}
			if cm.bits == 8 {
				rowCodes(lo, w, o)
				for j := 0; j < cm.in; j++ {
					q[j*bb+r] = byte(lo[j])
				}
				continue
			}
			// 4 bits: outputs 32c+t and 32c+16+t share a byte; write both
			// when the first of the pair comes.
			c, t := r/32, r%32
			if t >= 16 {
				continue
			}
			rowCodes(lo, w, o)
			clear(hi)
			if o+16 < cm.out {
				rowCodes(hi, w, o+16)
			}
			at := c*16 + t
			for j := 0; j < cm.in; j++ {
				q[j*bb+at] = byte(lo[j]) | byte(hi[j])<<4
			}
		}
	})
	return cm
}

// rowCodes writes the codes of row o of w as floats.
func rowCodes(dst []float32, w *tensor.Matrix, o int) {
	for g := 0; g < w.In/w.GroupSize; g++ {
		unpackGroup(dst[g*w.GroupSize:(g+1)*w.GroupSize], w, o, g)
	}
}

// spGroup is one group of input columns that holds non-zero x values, as
// the column kernels read it: the group, how many of its columns follow in
// the index and value lists, and the sum of its x values (for the biases).
type spGroup struct {
	g, n int32
	hs   float32
	_    int32
}

// spIdxPad is how many entries past a list's last index the AVX-512
// kernel reads (it prefetches the column 8 places ahead); they must be
// valid column indices (zero will do).
const spIdxPad = 8

// spList is one row of x as the column kernels take it: the non-zero
// values in column order, grouped.
type spList struct {
	idx []int32
	val []float32
	grp []spGroup
}

// build fills l from x (one row), reusing l's storage.
func (l *spList) build(x []float32, gs int) {
	l.idx, l.val, l.grp = l.idx[:0], l.val[:0], l.grp[:0]
	for g := 0; g < len(x)/gs; g++ {
		var hs float32
		n := 0
		for j, v := range x[g*gs : (g+1)*gs] {
			if v != 0 {
				l.idx = append(l.idx, int32(g*gs+j))
				l.val = append(l.val, v)
				hs += v
				n++
			}
		}
		if n > 0 {
			l.grp = append(l.grp, spGroup{g: int32(g), n: int32(n), hs: hs})
		}
	}
}

// SparseMatMul writes dst [n, w.Out] = x·wᵀ for an x [n, w.In] that is
// mostly zeros (tensor.GatedOps). Where a column kernel pays
// (columnKernel) and at most sparseDensity of x is non-zero it reads only
// the columns of w those values meet, from a column copy of w made on the
// first call (colMatrix): Σ_g s_g·(Σ_j x_j·q_j) + b_g·(Σ_j x_j) over the
// non-zero x_j of each group, in float32. Otherwise it is MatMul.
func (b *Backend) SparseMatMul(dst, x *tensor.Tensor, w *tensor.Matrix) error {
	n, err := checkMatMul("sparse matmul", "dst", dst, x, w)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	// The whole product is MatMul (which reads the resident copy,
	// resident.go); the column path reads its own column form.
	if !w.Quantized() || !b.columnKernel(w) {
		return b.MatMul(dst, x, w)
	}
	xd, yd := x.F32(), dst.F32()
	counts := b.nonZeroCounts(xd, n, w.In)
	if counts[n] > int(sparseDensity*float64(len(xd))) {
		return b.MatMul(dst, x, w)
	}
	b.sparseRows(yd, xd, n, b.cols.get(b, w), counts)
	return nil
}

// nonZeroCounts counts the non-zero values of each of the n rows of x (in
// values each) as running totals: row r's values are counts[r+1]-counts[r],
// counts[n] all of them.
func (b *Backend) nonZeroCounts(x []float32, n, in int) []int {
	counts := make([]int, n+1)
	b.pool.splitParts(n, 1, 4*b.threads, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			c := 0
			for _, v := range x[r*in : (r+1)*in] {
				if v != 0 {
					c++
				}
			}
			counts[r+1] = c
		}
	})
	for r := 0; r < n; r++ {
		counts[r+1] += counts[r]
	}
	return counts
}

// columnKernel reports whether SparseMatMul's column path pays for w: a
// 4- or 8-bit matrix, and either an assembly column kernel (4 bits:
// AVX-512 or AVX2) or no SIMD kernels at all (the Go column kernel against
// the Go product). Against the SIMD products (NEON; 8 bits) the Go column
// kernel loses.
func (b *Backend) columnKernel(w *tensor.Matrix) bool {
	switch {
	case w.Bits != 4 && w.Bits != 8:
		return false
	case b.avx512 || (b.simd && haveColumnAVX2):
		return w.Bits == 4
	}
	return !b.simd
}

// mostlyZero reports whether at most share of x's values are non-zero.
func mostlyZero(x []float32, share float64) bool {
	limit := int(share * float64(len(x)))
	nz := 0
	for _, v := range x {
		if v != 0 {
			if nz++; nz > limit {
				return false
			}
		}
	}
	return true
}

// sparseRows runs the column kernels for n rows of x into y, given the
// rows' non-zero counts (nonZeroCounts). The rows are listed first (their
// non-zero values, grouped); then each task is one block of outputs for a
// run of rows, so the block's codes and factors stay in cache from row to
// row.
func (b *Backend) sparseRows(y, x []float32, n int, cm *colMatrix, counts []int) {
	nnz := counts[n]
	// One pooled arena: indices (and the spIdxPad the kernels read past
	// the last), values, then at most one group entry (4 words) per value.
	buf := b.getBuf(spIdxPad + 6*nnz + 4)
	defer b.putBuf(buf)
	arena := *buf
	idx := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(arena))), nnz+spIdxPad)
	clear(arena[nnz : nnz+spIdxPad])
	val := arena[nnz+spIdxPad : 2*nnz+spIdxPad]
	grp := unsafe.Slice((*spGroup)(unsafe.Pointer(&arena[2*nnz+spIdxPad])), nnz)
	lists := make([]spList, n)
	b.pool.splitParts(n, 1, 4*b.threads, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			a, z := counts[r], counts[r+1]
			l := spList{idx: idx[a:a:z], val: val[a:a:z], grp: grp[a:a:z]}
			l.build(x[r*cm.in:(r+1)*cm.in], cm.gs)
			lists[r] = l
		}
	})
	blocks := cm.outPad / colBlock
	rowsPer := n
	if blocks < 4*b.threads {
		rowsPer = max(1, n*blocks/(4*b.threads))
	}
	runs := (n + rowsPer - 1) / rowsPer
	b.pool.run(blocks*runs, func(t int) {
		ob, r0 := t%blocks, t/blocks*rowsPer
		f := cm.blockFactors(ob)
		if f.half == 1 && rowsPer > 1 && b.simd {
			// Widening bfloat16 in the kernel costs two instructions per
			// vector of factors and row; over many rows the block's
			// factors come from L2 anyway, so widen them once.
			nf := cm.groups * 2 * colBlock
			buf := b.getBuf(nf)
			defer b.putBuf(buf)
			cvtSIMD(*buf, cm.sb16[cm.factorIndex(ob, 0):][:nf], false)
			f = blockFactors{unsafe.Pointer(&(*buf)[0]), 0}
		}
		for r := r0; r < min(n, r0+rowsPer); r++ {
			b.colBlockOut(y[r*cm.out:(r+1)*cm.out], cm, ob, f, &lists[r])
		}
	})
}

// colBlockOut writes outputs ob*colBlock... of one row (y has cm.out
// values) from its list, with the block's factors read from f.
func (b *Backend) colBlockOut(y []float32, cm *colMatrix, ob int, f blockFactors, l *spList) {
	o0 := ob * colBlock
	var tmp [colBlock]float32
	dst := tmp[:]
	if o0+colBlock <= cm.out {
		dst = y[o0 : o0+colBlock]
	}
	switch {
	case len(l.grp) == 0:
		clear(dst)
	case b.avx512 && cm.bits == 4:
		fb := f.size()
		spcol4AVX512(&dst[0], &cm.blockQ(ob)[0], uintptr(cm.blockBytes()), f.p, unsafe.Add(f.p, colBlock*fb), uintptr(2*colBlock*fb),
			unsafe.SliceData(l.idx), unsafe.SliceData(l.val), unsafe.SliceData(l.grp), len(l.grp), f.half)
	case b.simd && haveColumnAVX2 && cm.bits == 4:
		fb := f.size()
		q := cm.blockQ(ob)
		for h := 0; h < 2; h++ {
			spcol4AVX2(&dst[64*h], &q[32*h], uintptr(cm.blockBytes()), unsafe.Add(f.p, 64*h*fb), unsafe.Add(f.p, (colBlock+64*h)*fb), uintptr(2*colBlock*fb),
				unsafe.SliceData(l.idx), unsafe.SliceData(l.val), unsafe.SliceData(l.grp), len(l.grp), f.half)
		}
	default:
		colBlockGo(dst, cm, ob, l)
	}
	if o0+colBlock > cm.out {
		copy(y[o0:], tmp[:cm.out-o0])
	}
}

// colBlockGo is the column kernel in Go: for each listed group, the codes
// of its non-zero columns weighted by x, then the group's scales and
// biases.
func colBlockGo(y []float32, cm *colMatrix, ob int, l *spList) {
	var yacc, acc [colBlock]float32
	bb := cm.blockBytes()
	q := cm.blockQ(ob)
	p := 0
	for _, e := range l.grp {
		acc = [colBlock]float32{}
		for k := 0; k < int(e.n); k++ {
			j, v := int(l.idx[p]), l.val[p]
			p++
			col := q[j*bb : (j+1)*bb]
			if cm.bits == 8 {
				for r, c := range col {
					acc[r] += v * float32(c)
				}
				continue
			}
			for c := 0; c < 4; c++ {
				for t, u := range col[c*16 : c*16+16] {
					acc[c*32+t] += v * float32(u&15)
					acc[c*32+16+t] += v * float32(u>>4)
				}
			}
		}
		g0 := int(e.g) * 2 * colBlock
		for r := range yacc {
			yacc[r] += cm.factor(ob, g0+r) * acc[r]
			yacc[r] += cm.factor(ob, g0+colBlock+r) * e.hs
		}
	}
	copy(y, yacc[:])
}
