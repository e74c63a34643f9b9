package blocks

import (
	"strings"

	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// ComputeDType is the dtype MLX would run a checkpoint in, from
// config.json's torch_dtype (or dtype), looked up in text_config first and
// then at the top level: BF16, F16, or F32 when absent or anything else.
//
// Our kernels always compute in F32, but MLX multiplies activations by
// Python scalars in the activation dtype, so scalar constants such as
// sqrt(hidden_size) are rounded to it first (sqrt(2048) becomes 45.25 in
// BF16). Round reproduces that.
func ComputeDType(cfg *checkpoint.Config) tensor.DType {
	for _, c := range []*checkpoint.Config{cfg.Text(), cfg} {
		for _, key := range []string{"torch_dtype", "dtype"} {
			s, err := c.StringOr(key, "")
			if err != nil || s == "" {
				continue
			}
			switch strings.TrimPrefix(s, "torch.") {
			case "bfloat16":
				return tensor.BF16
			case "float16":
				return tensor.F16
			default:
				return tensor.F32
			}
		}
	}
	return tensor.F32
}

// Round rounds a scalar constant to dtype (BF16 or F16; anything else
// leaves the float32 value).
func Round(dtype tensor.DType, x float64) float32 {
	f := float32(x)
	switch dtype {
	case tensor.BF16:
		return tensor.BF16ToF32(tensor.F32ToBF16(f))
	case tensor.F16:
		return tensor.F16ToF32(tensor.F32ToF16(f))
	}
	return f
}
