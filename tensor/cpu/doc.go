// Package cpu is the CPU implementation of tensor.Backend and the reference
// every GPU kernel is tested against.
//
// What lives here:
//   - backend.go, ops.go, attention.go, matmul.go: every Backend op, with
//     shape and dtype checks that return errors (never panics). Attention
//     uses absolute-position masks (tensor.Mask, built by kvcache), grouped
//     query heads and an online softmax, one pass over the keys per
//     (query row, head).
//   - pool.go: the worker pool each Backend owns (no package-level state).
//     Ops split their rows over the caller and whichever helpers are free;
//     a helper that is busy is never waited for. Close stops the helpers;
//     a Backend that is dropped without Close releases them when collected.
//   - kernels_amd64.s, simd_amd64.go: AVX2/FMA/F16C assembly, chosen at run
//     time with golang.org/x/sys/cpu; simd_other.go and the portable Go
//     kernels serve every other machine (and tests compare the two).
//     Quantized products work on the packed MLX weights directly, convert
//     each group's bf16/f16 scale and bias once, and compute
//     Σ_g s_g·(Σ q·x) + b_g·(Σ x); nothing is dequantized in bulk.
//     Decode (one x row, or the rows left after blocks of four) rounds x
//     to int16 per group (x ≈ sx·xq, sx = max|x|/32767) and forms exact
//     integer dots with VPMADDWD: the error this adds is at most
//     max|x_g|/65534 per element, below what bf16 activations in MLX give.
//     Prefill (n > 1) runs four float x rows per pass over tiles of weights
//     sized for L2, so weights come from memory once per tile.
//   - mathf.go: float32 exp and tanh (softmax, GELU, softcap).
//   - bandwidth.go: MeasureReadBandwidth, the roofline denominator.
//
// Figures (AMD EPYC VM, 2 cores, AVX2/FMA; best-of timings because the
// machine is shared; go test -bench . ./tensor/cpu/):
//
//	read bandwidth (1 GiB)            1 core 37 GB/s    2 cores 61 GB/s
//	4-bit g64 matvec kernel, L2       1 core 21.6 GB/s  (float path was 13.1)
//	8-bit g64 matvec kernel, L2       1 core 36.5 GB/s
//	4-bit 2048x8192 (fits in L3)      1 core 22.9 GB/s  2 cores 25.9 GB/s
//	4-bit 8192x2048                   1 core 20.8 GB/s  2 cores 24.7 GB/s
//	4-bit 2048x262400 (DRAM, 336 MB)  1 core 13.5-17.5  2 cores 23-34 GB/s
//	8-bit 2048x262400 (DRAM)          1 core 21.6 GB/s  2 cores 36.5 GB/s
//	4-bit prefill 64x2048x8192        1 core 87 GFLOP/s 2 cores 153 GFLOP/s
//
// So 4-bit decode reaches about 0.4-0.55 of the 2-core read bandwidth
// (0.6-0.75 of the 1-core one), short of the 0.7 target on 2 cores: one
// core's kernel runs at ~22 GB/s while two cores can read 61 GB/s. 8-bit
// reaches 0.6-0.9.
//
// It may import only the standard library, mlxchat/tensor and
// golang.org/x/sys/cpu.
package cpu
