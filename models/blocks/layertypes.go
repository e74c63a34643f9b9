package blocks

import (
	"fmt"

	"mlxchat/models/checkpoint"
)

// SlidingLayers resolves which of n layers use sliding-window attention:
//
//  1. layer_types, when present: n entries of "sliding_attention" or
//     "full_attention";
//  2. else a pattern p: layer i is global iff (i+1) % p == 0, with p read
//     from patternKey (when not "") or defPattern; p = 1 makes every layer
//     global;
//  3. defPattern 0 (and no key): every layer is global.
func SlidingLayers(c *checkpoint.Config, n int, patternKey string, defPattern int) ([]bool, error) {
	out := make([]bool, n)
	if c.Has("layer_types") {
		types, err := c.Strings("layer_types")
		if err != nil {
			return nil, err
		}
		if len(types) != n {
			return nil, OutOfRange(c, "layer_types", fmt.Sprintf("a list of %d", len(types)), fmt.Sprintf("one entry per layer (num_hidden_layers = %d)", n))
		}
		for i, t := range types {
			switch t {
			case SlidingAttention:
				out[i] = true
			case FullAttention:
			default:
				return nil, OutOfRange(c, fmt.Sprintf("layer_types[%d]", i), fmt.Sprintf("%q", t), `"sliding_attention" or "full_attention"`)
			}
		}
		return out, nil
	}
	p := defPattern
	if patternKey != "" {
		var err error
		if p, err = IntInOr(c, patternKey, defPattern, 1, checkpoint.MaxLayers); err != nil {
			return nil, err
		}
	}
	if p <= 0 {
		return out, nil
	}
	for i := range out {
		out[i] = (i+1)%p != 0
	}
	return out, nil
}

// AnySliding reports whether any layer slides.
func AnySliding(sliding []bool) bool {
	for _, s := range sliding {
		if s {
			return true
		}
	}
	return false
}
