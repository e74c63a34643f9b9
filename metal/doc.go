// Package metal is the GPU backend: portable compute kernels (GLSL compiled
// to SPIR-V, translated to MSL; package metal/kernels), one implementation
// of tensor.Backend over a small driver interface (metal/gpu), the Metal
// host (the driver in metal/mtl over a narrow interface of Metal objects,
// bound to the Objective-C runtime through purego on darwin/arm64 in this
// package, no cgo), and the Vulkan host that runs the same SPIR-V on Linux
// (metal/vulkan). Open picks one by name for the --backend flag.
//
// It may import tensor, metal/gpu, metal/kernels, metal/mtl, metal/vulkan
// and purego.
//
// # The Metal host
//
// metal_darwin_arm64.go only forwards calls to Metal (at most 250 lines of
// code, checked by TestBindingEncodesWithoutReflection, which also keeps
// the per-dispatch calls on purego.SyscallN: no reflection, no allocation).
// Everything that decides lives in metal/mtl and runs on Linux in go test
// against metal/mtlfake, a double of the Metal interface that checks
// Apple's documented contracts on every call and runs each dispatch as the
// kernel's SPIR-V twin on lavapipe: the tiny Gemma 3n's whole host path
// (load, chunked prefill, decode, trims, rewind, a second turn) matches
// tensor/cpu there (TestTinyGemma3nMetalHost). mtl.Open checks the Apple7
// GPU family (M1 or later: the kernels' SIMD-group reductions), compiles
// every kernel's MSL into a pipeline (fast math off, MSL 2.3) and checks
// each pipeline's threadgroup maximum and threadgroup memory, so a
// compiler or device problem shows before the model loads. Weights stay in
// the mapped safetensors files: models.Load offers each file to the
// backend (tensor.WeightMapper), which wraps it in one no-copy buffer (or
// windows below maxBufferLength, overlapping by half) and binds tensors by
// offset; the page size comes from the OS; the buffers are released before
// the file is unmapped. Resident memory stays near the file size (the fake
// counts 3 KB copied for a 1.4 MB tiny checkpoint).
//
// A token is one wait. gpu.Backend records a step and hands it to
// mtl.Driver as plans (gpu.Planner), one per segment of the step that it
// submits while the model is still recording the rest (see metal/gpu),
// each kept for every later step of the same shape: RunPlan encodes the
// cached launch list into one command buffer (commandBufferWithUnretainedReferences, retained past its
// autorelease pool until Flush has waited) with one concurrent compute
// encoder, and a memoryBarrierWithScope:(buffers) only before the launches
// Backend marks, those that read or write what a launch since the last
// barrier wrote, or write what one read. Parameter blocks live in the
// plan's own untracked buffer, bound at index 0 at 256-byte aligned
// offsets (setBufferOffset between dispatches), so a replay changes bytes,
// not commands. Weight buffers are untracked, activations tracked, which
// orders each command buffer after the earlier ones' writes.
// TestTinyGemma3nMetalHost's 17 steps run 6221 launches in 68 command
// buffers (the steps' segments), one Flush each; the fake runs every command buffer again with
// the launches between barriers reversed and compares all bytes, so a
// barrier Backend left out would be a reported violation
// (TestFakeCatchesMissingBarrier removes one and checks it is).
//
// # Out of memory
//
// tensor.Backend's Alloc returns no error. gpu.Backend.Alloc places every
// tensor in a host-visible GPU buffer the kernels bind in place (the
// Vulkan driver prefers device-local host-visible memory and falls back to
// plain host-visible memory); when the driver refuses, it releases its idle
// pooled buffers and tries once more. If that fails as well, the returned
// tensor has zeroed host Data and a Handle recording the failure: every op
// that binds it fails with an error naming the shape and byte count that
// could not be allocated, and the next Sync returns that error too. It
// never degrades to a host tensor that ops would stage, since a KV cache
// whose rows are appended by recorded copies would then let attention read
// stale rows. SetMemoryLimit caps the backend's activation memory (tests
// force the failure with it: metal/vulkan TestAllocFailure,
// TestKVCacheAllocFailure).
//
// # Host uploads
//
// Per decode step of the tiny Gemma 3n, 6312 bytes of host tensors used to
// be uploaded (gpu.Backend.ProfileStaging counts them per dtype and
// shape): each layer's AltUp output scale vector F32[1 hidden] (5120), the
// RoPE inverse frequencies F32[headDim/2] of every RoPE call (1024), the
// AltUp identity F32[1 16] and ones F32[1 4], and what really changes: the
// token id of the two embedding gathers and the key spans of each
// attention. The same mix made the 272 KB per E2B token above (30 scale
// vectors of 8 KB, 60 RoPE tables of 512 bytes). Now RoPE tables are
// computed once per (dims, base) and bound like weights, and a small host
// tensor that ops only read and whose bytes match those at the same
// address in the previous step keeps its upload in a persistent arena;
// every use compares the host bytes with the kept copy, so a tensor
// changed between or within steps is uploaded again, never served stale
// (Stats.ReusedBytes counts what was served). What is uploaded per tiny
// decode step is the 8 bytes of token ids and 8 bytes per key span, 88 to
// 152 bytes (metal/vulkan TestTinyGemma3nDecodeUploads); for E2B that is
// about 250-500 bytes, not yet measured on the device. The spans could
// move into the parameter block, but that changes the attention kernel
// and its committed SPIR-V and MSL.
//
// # Verified where
//
// Linux CI (Mesa lavapipe, subgroup size 8): every kernel runs through the
// Vulkan host and is compared with float64 references (metal/vulkan tests);
// the committed SPIR-V and MSL are regenerated and diffed
// (metal/kernels tests). The darwin/arm64 code builds and vets in CI; Apple's
// MSL compiler, the Objective-C bridge at run time and Metal's numerics and
// speed can only be checked on a Mac (see Figures for what ran elsewhere).
//
// # Figures
//
// Device machine, one NVIDIA H200 through the Vulkan host (driver Vulkan
// 1.4.312, subgroup size 32, 4 GiB binding limit, full-size BAR), 2026-12-02.
// Every test of metal/vulkan passed there, the same suite lavapipe runs in
// CI (tiny Gemma 3n against tensor/cpu included). Final figures (binaries of
// the commit that introduced batched submits):
//
//   - decode matvec (qmv4/qmv8, x first copied to device scratch), weight
//     bytes per second, each shape cycling through enough matrices to defeat
//     the 60 MB L2: E2B lm head 262144x2048 q4 266 us/launch, 1134 GB/s
//     (0.24 of the 4.8 TB/s datasheet, 0.26 of the 4.3 TB/s copy rate
//     measured there); 8192x2048 q4 449 GB/s; 2048x8192 q4 202 GB/s;
//     2048x2048 q4 134 GB/s; 8192x2048 q8 753 GB/s. Small matrices are
//     latency-bound (one 64-thread workgroup per 8 rows).
//   - host cost: 5.3 us to record one op (BenchmarkRecord).
//   - full-size synthetic Gemma 3n E2B, 4-bit (mkmodel -kind e2b
//     -towers=false), with the KV cache in backend memory and K/V appended
//     by recorded copies (one Sync per Forward), 64 decode steps:
//     load and first chunk 1.01 s, prefill 64 tokens 257 ms, decode
//     65.7 tok/s (14.8 ms/token in Forward, 0.4 ms reading logits): 1.36 GB
//     of weights per token, so 90 GB/s, a roofline fraction of 0.02. Per
//     token: 2088 launches (40 of them the K/V row copies), 1 Sync, 1
//     flush, 272 KB of small host tensors staged (no K/V; since cut, see
//     Host uploads). Decode is still bound by per-launch host cost, not by
//     the kernels.
//
// History on the same machine: device-local (BAR) activations gave
// 1.33 tok/s, because the CPU reads logits and new K/V rows through the BAR
// uncached (1 MB of logits took 639 ms); host-cached activations, now the
// default on discrete GPUs, gave 37 tok/s; submitting every 48 launches
// without waiting, 42 tok/s, with the KV cache in Go memory (21 Syncs and
// 7.5 MB of K/V views staged per token); the cache in backend memory with
// one Sync per Forward, 65.7 tok/s. The 2^23-mantissa dequantization in
// qmv took the lm head from 971 to about 1130-1200 GB/s.
//
// 2026-12-03, later: with per-launch GPU timestamps (mlxchat bench
// --profile) the unfused E2B decode step was GPU-bound with attention at
// 36% of its GPU time (8 workgroups streaming every key); attnd (query
// heads of a KV head together, 32-key splits) and rmsnorm at 512
// invocations per row took decode from 56 to 90 tok/s at 512 of context.
// What remains is launch latency: 1383 of 1622 launches wait on a
// barrier at about 3 us each (TestLaunchCost); README.md has the table
// beside llama.cpp.
//
// 2026-12-04: chains (gpu/chain.go: elementwise ops folded into the
// launch whose values they change, a second RMSNorm into the norm whose
// row it reads) take the E2B decode step from 1622 launches and 1383
// barriers to 998 and 820, and decode from 94.7 to 102.6 tok/s at 512 of
// context and 89.4 to 98.9 at 2048 (medians of 3, interleaved with main
// in one device session; mlxchat bench --backend vulkan --prompt-lens
// 512,2048 --decode 128); bench --profile: 9.19 ms per token, GPU 6.81 ms
// (main 10.39 and 7.42). Every metal/vulkan test passed there.
//
// 2026-12-04, later: early submits (gpu/step.go: the step's first
// segments go to the GPU while the model records the rest; Sync waits
// once) took decode from 104.2 to 122.2 tok/s at 512 of context and from
// 96.3 to 119.2 at 2048 (MLXCHAT_GPU_EARLY=0: 99.1 / 96.4), medians of 3
// interleaved with main in one device session (mlxchat bench --backend
// vulkan --prompt-lens 512,2048 --decode 128); bench --profile: 10.19 ->
// 8.19 ms per token, GPU 6.80 -> 6.83 ms in 6 segments. Wide
// matrix-vector kernels (qmvw4 and kin, 4 rows a workgroup, for products
// of 2^23 weights or more) on top, in a second session: 96.6 (main) /
// 116.8 (early submits) -> 122.2 tok/s at 512, 91.5 / 113.5 -> 117.9 at
// 2048; GPU 6.47 ms per token, gate/up 17.4 -> 12.1 us, lm_head 326 ->
// 195 us. The GPU now waits for the host ~1.1 ms per token at 512 of
// context, before a step's first segment and after its last, 0.07 ms
// between segments (TestE2BDecode with MLXCHAT_E2B_PROMPT=512). Every
// metal/vulkan test passed there.
//
// 2026-12-04, evening: greedy decoding takes its token on the GPU (Argmax
// of the logits row in two launches of 4.7 us, 128 workgroups then a
// merge; Sync reads back the index, not the 1 MB of logits) and chains
// order a step's launches by dependency level (gpu/chain.go's schedule:
// an E2B decode step waits at 654 barriers instead of 814, 997 launches).
// Medians of 3 interleaved with main (3743ae5) in one device session
// (mlxchat bench --backend vulkan --prompt-lens 512,2048 --decode 128):
// decode 123.0 -> 144.7 tok/s at 512 of context and 117.7 -> 135.5 at
// 2048, greedy on the GPU alone (MLXCHAT_GPU_SCHEDULE=0) 135.7 / 126.5;
// prefill 1443 -> 1600 and 1669 -> 1889 tok/s. bench --profile at 512:
// 8.06 -> 6.81 ms per token, GPU 6.55 -> 6.06 ms. TestE2BDecode
// (MLXCHAT_E2B_PROMPT=512), schedule off -> on: GPU 6.52 -> 6.06 ms per
// token, 0.14 -> 0.07 ms between segments. Reading back only what the
// launches as run write (a replayed chain rewrite had also copied back an
// older step's logits, 1 MB per token) measured within spread: 123.0 ->
// 123.2 / 117.7 -> 118.4. Every metal/vulkan test passed there.
//
// 2026-12-04, night: the tiled product (qmm.comp, prefill) stages 32
// inputs a step as vec4s (one shared read of x and of W per 16 products
// instead of eight) and dequantizes a word of codes per invocation with
// one scale and bias (three global reads per weight before). Timed on the
// H200 on 2026-12-05 against ccf9713, interleaved, three rounds:
// BenchmarkPrefillMatMul (512 rows) 9.4-9.7 -> 12.6-13.7 TFLOP/s (4-bit
// 2048x8192), 8.8-9.2 -> 15.4-16.4 (8192x2048), 6.1-7.1 -> 9.8-10.1
// (8-bit 2048x2048); mlxchat bench prefill 1633 -> 2168 tok/s at 512 and
// 1908 -> 2491 at 2048. Decode lost 4% (147.1 -> 140.8 at 512): one-row
// dense products (mmx) took 15.8 us instead of 10.2 in the new tile.
//
// 2026-12-05: a dense product of at most 4 rows is a dot per output, one
// subgroup each (qmm.comp's few_rows). Main (2e7abbe) -> f141a16 in one
// device session, three interleaved rounds: decode 139.4 -> 153.0 tok/s
// at 512 of context, 128.7 -> 142.0 at 2048; mmx 15.5 -> 6.1 us a launch
// (bench --profile). Measured in that session and dropped: attnd issuing
// all of a chunk's key, value and query loads before its first barrier
// and normx issuing the loads of four values per invocation together
// (decode 149.2 / 140.4 and 148.9 / 140.3; TestLaunchCost's decode
// attention chain 18.6 -> 18.4 us a launch at 512 keys, normx 9.3 -> 9.5
// us in the profile): neither kernel waits on memory round trips. Every
// metal/vulkan test passed there.
//
// Not measured anywhere: Metal itself (no Mac here).
//
// # First run on a Mac
//
// Nothing here has run on Apple hardware yet. On an Apple silicon Mac
// (macOS 13 or later, Go 1.26), from the repository root, run these in
// order and report the first one whose result differs from what is said,
// with its output, the Mac model and the macOS version:
//
//  1. go build ./... && go vet ./metal/...: the darwin binding builds
//     (CGO_ENABLED=0 works too).
//  2. go test ./metal -run 'Binding|OpenGPU' -v: the binding's source
//     checks; TestOpenGPU opens Metal (device, Apple7 family, every
//     pipeline compiled) and runs one op as a one-launch plan. The Vulkan
//     and mtlfake tests are Linux-only and do not build here.
//  3. go test ./metal -run GoldenMetal -count=3 -v: the transformers
//     fixtures of every family (Gemma 3n, Gemma 3, Llama, Qwen3, OLMo 3,
//     Cohere 2) on the real GPU through recorded plans, concurrent
//     encoders and explicit barriers, every row within 1e-4 of the
//     largest golden logit (each subtest logs its max |Δ|). A failure
//     that changes from run to run is a race between dispatches: a
//     missing barrier. An Objective-C exception or a crash in objc_msgSend
//     means a selector or an argument in metal_darwin_arm64.go is wrong;
//     a compile error quotes Apple's MSL compiler.
//  4. MTL_DEBUG_LAYER=1 MTL_SHADER_VALIDATION=1 go test ./metal -run
//     TestGoldenMetal/tiny_a -v: one fixture under Apple's API and shader
//     validation, which reports offsets, lengths, bindings or hazard
//     modes it rejects (and the fake may have missed).
//  5. go run ./models/cmd/mkmodel -kind e2b -towers=false -out /tmp/e2b (a
//     full-size 4-bit Gemma 3n E2B with random weights; -arch qwen3 -kind
//     full makes a Qwen3-4B layout), then go run . bench /tmp/e2b
//     --backend metal: the first line says "backend metal" and the table
//     gives decode tok/s (mlx-lm: about 125 on an M5 Max for E2B), or the
//     run fails with one line naming why Metal could not start (device,
//     GPU family, a kernel's compile error, a pipeline limit).
//  6. The same bench without --backend: if Metal cannot start it says so
//     in one line, falls back to the CPU backend and runs.
//
// One line to send back: "M? <chip>, macOS <version>: step <n> <what it
// printed>", or "all six passed, E2B decode <n> tok/s at prompt 512".
package metal
