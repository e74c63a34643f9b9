package kernels

import (
	"embed"
	"fmt"
)

//go:embed spv/*.spv
var spvFS embed.FS

//go:embed msl/*.metal
var mslFS embed.FS

// QMVRows is the number of output rows each QMV4/QMV8 (and QMVX) workgroup
// computes (ROWS in src/qmv.comp); a dispatch needs ceil(n_out/QMVRows)
// groups in x. QMVWideRows is the same for the wide variants (QMVW4, QMVW8,
// QMVXW4, QMVXW8).
const (
	QMVRows     = 2
	QMVWideRows = 4
)

// ID names one compiled kernel variant.
type ID int

// The kernel variants, one per file in spv/ and msl/.
const (
	QMV4      ID = iota // 4-bit quantized matrix-vector product (decode)
	QMV8                // 8-bit quantized matrix-vector product (decode)
	QMM4                // 4-bit quantized tiled matrix product (prefill)
	QMM8                // 8-bit quantized tiled matrix product (prefill)
	MM                  // dense (F32, F16, BF16 weights) tiled matrix product
	Gather              // embedding rows from a dense or quantized table
	RMSNorm             // RMS or layer normalization with optional weight and bias
	RoPE                // rotary position embedding from a table, half-split or interleaved
	Attn                // attention with a span/window mask
	AttnMerge           // combines split-key attention partials
	Eltwise             // add, mul, scale, softcap, gelu-tanh, copy, silu
	Softmax             // row softmax
	Argmax              // row argmax (one pass, or parts of long rows then their merge)
	RowStat             // Gemma 3n Gaussian top-k and RMS matching
	Streams             // Gemma 3n stream mixing, scaled adds, axis swap
	QMVT4               // fused decode launch: 4-bit matrix-vector segments, then a tail of small ops
	QMVT8               // fused decode launch: 8-bit matrix-vector segments, then a tail of small ops
	VChain              // fused decode launch: a tail of small ops in one workgroup
	AttnD               // decode attention: query heads of one KV head together, keys in many splits
	QMVX4               // qmv4 with an epilogue of elementwise ops on its outputs
	QMVX8               // qmv8 with an epilogue of elementwise ops on its outputs
	NormX               // rmsnorm with an epilogue of elementwise ops and a second RMSNorm of its output
	EltX                // eltwise with an epilogue of further elementwise ops
	MMX                 // dense one-row product (mm) with an epilogue of elementwise ops
	QMVW4               // qmv4 with 4 output rows per workgroup (large matrices)
	QMVW8               // qmv8 with 4 output rows per workgroup (large matrices)
	QMVXW4              // qmvx4 with 4 output rows per workgroup
	QMVXW8              // qmvx8 with 4 output rows per workgroup
	Count               // number of kernels
)

// ParamHeader is the number of 32-bit offset words that open every
// parameter block (ob0..ob7): the element offset of each binding's tensor
// inside the bound range.
const ParamHeader = 8

// Kernel describes how to bind and launch one kernel.
type Kernel struct {
	Name string
	// Local is the workgroup (threadgroup) size along x; y and z are 1.
	Local int
	// Bindings lists the storage-buffer bindings the kernel declares.
	Bindings []int
	// Vec4 marks bindings read as 16-byte vectors: their offsets are
	// counted in 16-byte units and must be multiples of 16 bytes. Other
	// bindings count offsets in elements of the bound tensor's dtype.
	Vec4 [8]bool
	// Params is the number of 32-bit parameter words after the header.
	Params int
	// Program marks the kernels whose parameter block continues after
	// those words with uvec4 arrays: the fused kernels' segment table and
	// tail program (src/fused.comp), whose length varies per launch, and
	// the chained kernels' epilogue ops (src/epi.glsl, always MaxEpi of
	// them, unused ones zero).
	Program bool
	// MaxEpi is the number of epilogue ops (uvec4) a chained kernel's
	// parameter block holds after its Params words.
	MaxEpi int
}

var table = [Count]Kernel{
	QMV4:      {Name: "qmv4", Local: 64, Bindings: []int{1, 2, 3, 4, 5}, Vec4: [8]bool{1: true, 2: true}, Params: 6},
	QMV8:      {Name: "qmv8", Local: 64, Bindings: []int{1, 2, 3, 4, 5}, Vec4: [8]bool{1: true, 2: true}, Params: 6},
	QMM4:      {Name: "qmm4", Local: 256, Bindings: []int{1, 2, 3, 4, 5}, Params: 8},
	QMM8:      {Name: "qmm8", Local: 256, Bindings: []int{1, 2, 3, 4, 5}, Params: 8},
	MM:        {Name: "mm", Local: 256, Bindings: []int{1, 2, 5}, Params: 8},
	Gather:    {Name: "gather", Local: 64, Bindings: []int{1, 2, 3, 4, 5}, Params: 6},
	RMSNorm:   {Name: "rmsnorm", Local: 512, Bindings: []int{1, 2, 3, 4}, Params: 8},
	RoPE:      {Name: "rope", Local: 64, Bindings: []int{1, 2}, Params: 6},
	Attn:      {Name: "attn", Local: 128, Bindings: []int{1, 2, 3, 4, 5, 6}, Params: 10},
	AttnMerge: {Name: "attnmerge", Local: 128, Bindings: []int{1, 2}, Params: 3},
	Eltwise:   {Name: "eltwise", Local: 256, Bindings: []int{1, 2, 3}, Params: 4},
	Softmax:   {Name: "softmax", Local: 128, Bindings: []int{1, 2}, Params: 2},
	Argmax:    {Name: "argmax", Local: 128, Bindings: []int{1, 2}, Params: 4},
	RowStat:   {Name: "rowstat", Local: 128, Bindings: []int{1, 2, 3}, Params: 4},
	Streams:   {Name: "streams", Local: 256, Bindings: []int{1, 2, 3, 4}, Params: 6},
	QMVT4:     {Name: "qmvt4", Local: 256, Bindings: []int{1, 2, 3, 4, 5, 6, 7}, Vec4: [8]bool{2: true}, Params: 8, Program: true},
	QMVT8:     {Name: "qmvt8", Local: 256, Bindings: []int{1, 2, 3, 4, 5, 6, 7}, Vec4: [8]bool{2: true}, Params: 8, Program: true},
	VChain:    {Name: "vchain", Local: 256, Bindings: []int{1, 3, 4, 5, 6, 7}, Params: 8, Program: true},
	AttnD:     {Name: "attnd", Local: 128, Bindings: []int{1, 2, 3, 4, 5, 6}, Params: 10},
	QMVX4:     {Name: "qmvx4", Local: 64, Bindings: []int{1, 2, 3, 4, 5, 6, 7}, Vec4: [8]bool{1: true, 2: true}, Params: 8, Program: true, MaxEpi: 4},
	QMVX8:     {Name: "qmvx8", Local: 64, Bindings: []int{1, 2, 3, 4, 5, 6, 7}, Vec4: [8]bool{1: true, 2: true}, Params: 8, Program: true, MaxEpi: 4},
	NormX:     {Name: "normx", Local: 512, Bindings: []int{1, 2, 3, 4, 5, 6, 7}, Params: 16, Program: true, MaxEpi: 6},
	EltX:      {Name: "eltx", Local: 256, Bindings: []int{1, 2, 3, 4, 5, 6, 7}, Params: 8, Program: true, MaxEpi: 6},
	MMX:       {Name: "mmx", Local: 256, Bindings: []int{1, 2, 5, 6, 7}, Params: 12, Program: true, MaxEpi: 4},
	QMVW4:     {Name: "qmvw4", Local: 64, Bindings: []int{1, 2, 3, 4, 5}, Vec4: [8]bool{1: true, 2: true}, Params: 6},
	QMVW8:     {Name: "qmvw8", Local: 64, Bindings: []int{1, 2, 3, 4, 5}, Vec4: [8]bool{1: true, 2: true}, Params: 6},
	QMVXW4:    {Name: "qmvxw4", Local: 64, Bindings: []int{1, 2, 3, 4, 5, 6, 7}, Vec4: [8]bool{1: true, 2: true}, Params: 8, Program: true, MaxEpi: 4},
	QMVXW8:    {Name: "qmvxw8", Local: 64, Bindings: []int{1, 2, 3, 4, 5, 6, 7}, Vec4: [8]bool{1: true, 2: true}, Params: 8, Program: true, MaxEpi: 4},
}

// Layout of the fused kernels' parameter block after the header: 8
// scalar words, then MaxSegments segments of 2 uvec4 and up to MaxOps tail
// ops of 4 uvec4.
const (
	MaxSegments = 4
	MaxOps      = 16
)

// Info returns the launch description of kernel id.
func (id ID) Info() Kernel {
	if id < 0 || id >= Count {
		return Kernel{}
	}
	return table[id]
}

// String returns the kernel's name.
func (id ID) String() string {
	if id < 0 || id >= Count {
		return fmt.Sprintf("kernel(%d)", int(id))
	}
	return table[id].Name
}

// SPIRV returns the kernel's SPIR-V module (entry point "main").
func SPIRV(id ID) ([]byte, error) {
	b, err := spvFS.ReadFile("spv/" + id.String() + ".spv")
	if err != nil {
		return nil, fmt.Errorf("kernel %s: no SPIR-V: %w", id, err)
	}
	return b, nil
}

// MSL returns the kernel's Metal Shading Language source; its kernel
// function is named after the kernel (Info().Name).
func MSL(id ID) (string, error) {
	b, err := mslFS.ReadFile("msl/" + id.String() + ".metal")
	if err != nil {
		return "", fmt.Errorf("kernel %s: no MSL: %w", id, err)
	}
	return string(b), nil
}
