// Package tensor is the backend-neutral tensor layer: dtypes, host tensors,
// weight matrices (dense or MLX affine-quantized), the attention mask that
// only caches build, and the Backend interface every compute backend
// (the CPU reference, Vulkan, Metal) implements, with the optional
// interfaces some of them add (ArgmaxOps, GatedOps, HalfDecoder,
// Int8RowDecoder).
//
// It may import only the standard library.
package tensor
