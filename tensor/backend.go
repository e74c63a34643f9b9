package tensor

// Backend is the set of tensor operations a transformer forward pass needs.
// Implementations: the CPU reference (package tensor/cpu), Vulkan and Metal.
//
// Conventions:
//   - activations are F32 tensors; a tensor of shape [..., N] is seen as
//     Rows() rows of N values;
//   - dst may alias an input where an op says so (elementwise ops do);
//   - an op may be recorded and run later; Sync waits for everything
//     recorded and reports the first error. Reading Data before Sync is
//     only valid on backends whose Synchronous method returns true;
//   - shape or dtype disagreements are returned as errors, never panics.
type Backend interface {
	// Name identifies the backend ("cpu", "vulkan", "metal").
	Name() string
	// Synchronous reports whether ops complete before they return.
	Synchronous() bool
	// Alloc returns a zeroed F32 activation tensor owned by the backend.
	Alloc(shape ...int) *Tensor
	// Sync waits for recorded work and returns its first error.
	Sync() error

	// MatMul computes dst[n, w.Out] = x[n, w.In] · wᵀ for dense or
	// quantized w.
	MatMul(dst, x *Tensor, w *Matrix) error
	// Gather writes row ids[i] of w, dequantized to F32, into row i of
	// dst[len(ids), w.In]. It reads only those rows.
	Gather(dst *Tensor, w *Matrix, ids []int32) error

	// RMSNorm normalizes each row of x over its last axis:
	// dst = x / sqrt(mean(x²) + eps) * weight. A nil weight means no scale.
	// weight may be F32, F16 or BF16 of shape [N].
	RMSNorm(dst, x, weight *Tensor, eps float32) error
	// RoPE rotates x[n, heads, headDim] in place at absolute positions
	// pos0, pos0+1, ..., pos0+n-1 with the table r (its Dims, inverse
	// frequencies and pairing; see Rotary). Values of a head beyond
	// r.Dims are unchanged.
	RoPE(x *Tensor, pos0 int, r *Rotary) error
	// Attention computes softmax(scale·q·kᵀ + mask)·v per head with
	// grouped-query sharing: q[nq, hq, d], k and v [nk, hkv, d], hq a
	// multiple of hkv, dst[nq, hq, d]. mask.Rows must equal nq and
	// mask.KeyLen() must equal nk.
	Attention(dst, q, k, v *Tensor, mask Mask, scale float32) error

	// LayerNorm normalizes each row of x over its last axis with its mean
	// and population variance: dst = (x - mean) / sqrt(var + eps) * weight
	// + bias. A nil weight means no scale, a nil bias no shift; weight and
	// bias may be F32, F16 or BF16 of shape [N].
	LayerNorm(dst, x, weight, bias *Tensor, eps float32) error

	// GeluTanh applies the tanh approximation of GELU elementwise.
	GeluTanh(dst, x *Tensor) error
	// SiLU applies x·sigmoid(x) elementwise.
	SiLU(dst, x *Tensor) error
	// Add computes dst = a + b; b may have one row that is broadcast.
	Add(dst, a, b *Tensor) error
	// Mul computes dst = a * b; b may have one row that is broadcast.
	Mul(dst, a, b *Tensor) error
	// Scale computes dst = x * s.
	Scale(dst, x *Tensor, s float32) error
	// Softcap computes dst = tanh(x / c) * c.
	Softcap(dst, x *Tensor, c float32) error
	// Softmax normalizes each row over its last axis.
	Softmax(dst, x *Tensor) error
	// Copy copies src into dst (same element count).
	Copy(dst, src *Tensor) error
}

// StreamOps are the ops Gemma 3n needs beyond Backend: activation sparsity,
// AltUp's per-row stream mixing and magnitude matching, and an axis swap.
// The CPU backend implements them; a model that needs them checks for them
// with a type assertion when it loads and reports a backend without them.
// (They are kept out of Backend until every backend implements them, so
// adding them broke no backend's build.)
type StreamOps interface {
	// GaussianTopK is Gemma 3n's activation sparsity: per row of x, with
	// mean and population standard deviation over the row,
	// dst = max(0, x - (mean + multiplier·std)). dst may alias x.
	GaussianTopK(dst, x *Tensor, multiplier float32) error
	// MatchRMS rescales each row of x to the root-mean-square of the same
	// row of ref: dst = x · sqrt(mean(ref²)) / sqrt(max(mean(x²), eps)).
	// x, ref and dst have the same shape; dst may alias x but not ref.
	MatchRMS(dst, x, ref *Tensor, eps float32) error
	// MixStreams forms per-row linear combinations of S streams: x is
	// [S, n, N], coef [n, R·S] and dst [R, n, N], with
	// dst[r, t, :] = Σ_k coef[t, r·S+k] · x[k, t, :]. dst must not alias x.
	MixStreams(dst, x, coef *Tensor) error
	// AddScaledStreams adds a per-row multiple of b to each of S streams:
	// a and dst are [S, n, N], b [n, N] and coef [n, S], with
	// dst[s, t, :] = a[s, t, :] + coef[t, s] · b[t, :]. dst may alias a.
	AddScaledStreams(dst, a, b, coef *Tensor) error
	// SwapAxes01 transposes the two leading axes: x [A, B, N] into
	// dst [B, A, N]. dst must not alias x.
	SwapAxes01(dst, x *Tensor) error
}

// GatedOps is implemented by backends that can skip the rows of a
// projection whose products a gate zeroes, and the columns of one whose
// input is mostly zeros. Gemma 3n's sparse layers keep about 5% of the
// gate's activations (GaussianTopK), so most of up_proj's rows only ever
// meet a zero and most of down_proj's columns only ever meet one; a
// backend without it computes the whole projections (MatMul, Add, Mul),
// with the same result.
type GatedOps interface {
	// GatedMatMul multiplies each non-zero g[r, j] by x[r]·w[j] + bias[j]
	// and leaves the zeros as they are: g [n, w.Out], x [n, w.In], bias
	// nil or F32 [1, w.Out]. It is MatMul into u, Add of the bias and
	// Mul(g, g, u) wherever g is non-zero, and 0 where g is zero (also when
	// that row's product is not finite).
	GatedMatMul(g, x *Tensor, w *Matrix, bias *Tensor) error
	// SparseMatMul is MatMul (dst [n, w.Out] = x·wᵀ) for an x that is
	// mostly zeros, such as the gated activations down_proj takes in a
	// sparse layer: a backend may read only the columns of w that a
	// non-zero value meets. The result equals MatMul's up to the order of
	// summation.
	SparseMatMul(dst, x *Tensor, w *Matrix) error
}

// WeightMapper is implemented by backends that want to know which weights
// come from memory-mapped checkpoint files, and for how long: the Metal
// backend wraps whole files in no-copy GPU buffers and reads weights in
// place; the CPU backend copies the matrices it multiplies out of the
// mapping into its own memory, which streams faster than the page cache's
// pages. A model loader offers each file's mapping with MapWeights and
// calls UnmapWeights for it before unmapping the file.
type WeightMapper interface {
	// MapWeights registers region, mapped read-only and unchanged until
	// UnmapWeights; weights inside it may then be used in place.
	MapWeights(region []byte) error
	// UnmapWeights waits for work that reads region and releases every
	// use of it; region is unmapped right afterwards.
	UnmapWeights(region []byte) error
}
