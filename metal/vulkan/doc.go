// Package vulkan is the Linux GPU host: it loads libvulkan.so.1 at run time
// through purego (no cgo), creates an instance, a device and a compute
// queue, makes pipelines from the committed SPIR-V of metal/kernels, and
// implements gpu.Driver with host-visible buffers (device-local where the
// device offers it), device-local weights uploaded once, and gpu.Planner:
// a step is recorded once into a command buffer whose parameter blocks are
// bound through dynamic uniform offsets into the plan's own buffer, and
// later steps of the same shape only rewrite that buffer and resubmit. On
// discrete GPUs it also implements gpu.RemoteActivations (device twins of
// the activations, filled and read back by copy commands). Open returns
// the resulting backend ("vulkan").
//
// Its tests run every kernel on whatever Vulkan device is present (Mesa's
// lavapipe in CI, subgroup size 8) and compare it with float64 references
// and with tensor/cpu, then run a whole tiny Gemma 3n on both backends. They
// skip without a device unless CI=true. Benchmarks for a real GPU:
//
//	MLXCHAT_GPU_BENCH=1 go test ./metal/vulkan -run MatVecBandwidth -v
//	go run ./models/cmd/mkmodel -kind e2b -towers=false -out /tmp/e2b
//	MLXCHAT_E2B_DIR=/tmp/e2b go test ./metal/vulkan -run E2BDecode -v
//	MLXCHAT_E2B_DIR=/tmp/e2b MLXCHAT_E2B_PROMPT=512 go test ./metal/vulkan -run E2BDecode -v
//	go test ./metal/vulkan -run '^$' -bench Record
//	go run . bench /tmp/e2b --backend vulkan --prompt-lens 512 --decode 64 --profile
//
// --profile times the decode step with timestamp queries recorded into the
// plan (gpu.LaunchTimer): once only its start and end, then after every
// launch, and prints the GPU time per kernel and product shape.
//
// MLXCHAT_VULKAN_DEVICE=N picks the N-th physical device;
// MLXCHAT_VULKAN_ACTIVATIONS=host|device overrides where activations live
// (host: the discrete-GPU layout with device twins, also on lavapipe);
// MLXCHAT_GPU_FUSION=0|seg|1 picks how much of a decode step is fused
// (gpu.ParseFusion; the default is gpu.DefaultFusion, off);
// MLXCHAT_GPU_CHAINS=0 turns off the folding of norms and elementwise ops
// into the launches beside them (gpu.Backend.SetChains; on by default);
// MLXCHAT_GPU_EARLY=0 turns off the submitting of a step's first segments
// while the model records the rest (gpu.Backend.SetEarlySubmit; on by
// default); MLXCHAT_GPU_SCHEDULE=0 turns off the reordering of a step's
// independent launches so that they share a barrier
// (gpu.Backend.SetSchedule; on by default, with chains).
//
// It may import tensor, metal/gpu, metal/kernels and purego (tests also
// import tensor/cpu, models and kvcache).
package vulkan
