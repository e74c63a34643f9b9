package blocks

import (
	"fmt"
	"math"

	"mlxchat/models/checkpoint"
)

// OutOfRange is the error for a config value outside what a model accepts,
// e.g. `config.json: text_config.num_attention_heads = 0, want 1..1024`.
func OutOfRange(c *checkpoint.Config, key string, v any, want string) error {
	return fmt.Errorf("%s: %s = %v, want %s", c.Path, c.KeyPath(key), v, want)
}

// IntIn reads the required integer at key and checks lo <= v <= hi
// (checkpoint.Config.IntIn).
func IntIn(c *checkpoint.Config, key string, lo, hi int) (int, error) {
	return c.IntIn(key, checkpoint.Range{Min: lo, Max: hi})
}

// IntInOr is IntIn with def for an absent or null key (def is not checked).
func IntInOr(c *checkpoint.Config, key string, def, lo, hi int) (int, error) {
	return c.IntInOr(key, def, checkpoint.Range{Min: lo, Max: hi})
}

// PositiveOr reads a finite number > 0 at key, def when absent or null.
func PositiveOr(c *checkpoint.Config, key string, def float64) (float64, error) {
	if !c.Has(key) {
		return def, nil
	}
	v, err := c.Float(key)
	if err != nil {
		return 0, err
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, OutOfRange(c, key, v, "a finite number > 0")
	}
	return v, nil
}

// NormEps reads a norm epsilon at key (def when absent): finite, in (0, 1).
func NormEps(c *checkpoint.Config, key string, def float64) (float32, error) {
	v, err := PositiveOr(c, key, def)
	if err != nil {
		return 0, err
	}
	if v >= 1 {
		return 0, OutOfRange(c, key, v, "a number in (0, 1)")
	}
	return float32(v), nil
}

// Sizes are the shape settings of a decoder-only transformer.
type Sizes struct {
	Vocab        int // vocab_size
	Hidden       int // hidden_size
	Intermediate int // intermediate_size
	Layers       int // num_hidden_layers
	Heads        int // num_attention_heads
	KVHeads      int // num_key_value_heads (default: Heads)
	HeadDim      int // head_dim (default: Hidden/Heads)
}

// ReadSizes reads and checks the sizes from c. defaults supplies values for
// absent keys (by config key, e.g. "num_attention_heads": 8 for Gemma 3's
// sparse configs); a key without a default is required, except
// num_key_value_heads (default num_attention_heads) and head_dim (default
// hidden_size / num_attention_heads, which must then divide evenly). With
// forceHeadDim the head_dim key is ignored and hidden/heads used (Cohere2,
// as transformers does).
func ReadSizes(c *checkpoint.Config, defaults map[string]int, forceHeadDim bool) (Sizes, error) {
	var s Sizes
	var err error
	get := func(dst *int, key string, lo, hi int) {
		if err != nil {
			return
		}
		if def, ok := defaults[key]; ok {
			*dst, err = IntInOr(c, key, def, lo, hi)
		} else {
			*dst, err = IntIn(c, key, lo, hi)
		}
	}
	get(&s.Vocab, "vocab_size", 1, checkpoint.MaxVocab)
	get(&s.Hidden, "hidden_size", 1, checkpoint.MaxHidden)
	get(&s.Intermediate, "intermediate_size", 1, checkpoint.MaxIntermediate)
	get(&s.Layers, "num_hidden_layers", 1, checkpoint.MaxLayers)
	get(&s.Heads, "num_attention_heads", 1, checkpoint.MaxHeads)
	if err != nil {
		return s, err
	}
	if _, ok := defaults["num_key_value_heads"]; !ok {
		defaults = withDefault(defaults, "num_key_value_heads", s.Heads)
	}
	get(&s.KVHeads, "num_key_value_heads", 1, s.Heads)
	if err != nil {
		return s, err
	}
	if s.Heads%s.KVHeads != 0 {
		return s, OutOfRange(c, "num_key_value_heads", s.KVHeads, fmt.Sprintf("a divisor of num_attention_heads (%d)", s.Heads))
	}
	_, hasDef := defaults["head_dim"]
	if forceHeadDim || (!c.Has("head_dim") && !hasDef) {
		if s.Hidden%s.Heads != 0 {
			return s, OutOfRange(c, "num_attention_heads", s.Heads, fmt.Sprintf("a divisor of hidden_size (%d) when head_dim is not given", s.Hidden))
		}
		s.HeadDim = s.Hidden / s.Heads
	} else {
		get(&s.HeadDim, "head_dim", 2, checkpoint.MaxHeadDim)
		if err != nil {
			return s, err
		}
	}
	if s.HeadDim%2 != 0 {
		return s, OutOfRange(c, "head_dim", s.HeadDim, "an even number (RoPE rotates pairs)")
	}
	return s, nil
}

func withDefault(m map[string]int, key string, v int) map[string]int {
	out := map[string]int{key: v}
	for k, x := range m {
		out[k] = x
	}
	return out
}

// Window reads sliding_window for a model with sliding layers (required,
// 1..checkpoint.MaxPositions).
func Window(c *checkpoint.Config) (int, error) {
	return IntIn(c, "sliding_window", 1, checkpoint.MaxPositions)
}

// TokenID reads an optional token id at key (the first entry of a list),
// def when absent or null; ids must lie in [0, vocab).
func TokenID(c *checkpoint.Config, key string, def, vocab int) (int, error) {
	if !c.Has(key) {
		return def, nil
	}
	ids, err := c.Ints(key)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return def, nil
	}
	if ids[0] < 0 || ids[0] >= vocab {
		return 0, OutOfRange(c, key, ids[0], fmt.Sprintf("a token id in 0..%d", vocab-1))
	}
	return ids[0], nil
}

// RefuseTrue fails when the boolean at key is true, naming why.
func RefuseTrue(c *checkpoint.Config, key, why string) error {
	v, err := c.BoolOr(key, false)
	if err != nil {
		return err
	}
	if v {
		return fmt.Errorf("%s: %s = true is not supported (%s)", c.Path, c.KeyPath(key), why)
	}
	return nil
}

// OneOf checks that the string at key (def when absent) is one of want,
// and returns it.
func OneOf(c *checkpoint.Config, key, def string, want ...string) (string, error) {
	a, err := c.StringOr(key, def)
	if err != nil {
		return "", err
	}
	for _, w := range want {
		if a == w {
			return a, nil
		}
	}
	return "", OutOfRange(c, key, fmt.Sprintf("%q", a), fmt.Sprintf("one of %q", want))
}
