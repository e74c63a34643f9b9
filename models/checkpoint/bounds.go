package checkpoint

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Range is an inclusive range of integers, Min <= v <= Max, that a
// configuration value must lie in. Architectures check every size they
// read from config.json against one before sizing anything from it, so a
// hostile or broken file (num_hidden_layers -1 or 4000000000) is a one-line
// error instead of a panic or a 32 GB allocation.
type Range struct{ Min, Max int }

func (r Range) String() string {
	if r.Max == math.MaxInt {
		return fmt.Sprintf("at least %d", r.Min)
	}
	return fmt.Sprintf("%d to %d", r.Min, r.Max)
}

// Contains reports whether v lies in r.
func (r Range) Contains(v int) bool { return v >= r.Min && v <= r.Max }

// Sane upper bounds of model sizes, well above every published model (the
// largest have vocabularies of ~1M tokens, 128 layers, hidden sizes of
// ~25k and 10M-token contexts) and far below what would exhaust memory
// when a slice or table is sized from them.
const (
	MaxVocab        = 1 << 24 // vocab_size and token ids
	MaxHidden       = 1 << 17 // hidden_size and other widths
	MaxIntermediate = 1 << 20 // intermediate_size
	MaxLayers       = 1024    // num_hidden_layers
	MaxHeads        = 1024    // num_attention_heads, num_key_value_heads
	MaxHeadDim      = 4096    // head_dim
	MaxPositions    = 1 << 27 // max_position_embeddings, sliding_window
	MaxExperts      = 1 << 14 // num_experts, num_local_experts
)

// sizeRanges are the sane ranges of the config.json size keys shared by
// model families (the last element of a dotted key is looked up).
func sizeRanges() map[string]Range {
	return map[string]Range{
		"vocab_size":                      {1, MaxVocab},
		"vocab_size_per_layer_input":      {1, MaxVocab},
		"hidden_size":                     {1, MaxHidden},
		"hidden_size_per_layer_input":     {1, MaxHidden},
		"intermediate_size":               {1, MaxIntermediate},
		"moe_intermediate_size":           {1, MaxIntermediate},
		"shared_expert_intermediate_size": {1, MaxIntermediate},
		"num_hidden_layers":               {1, MaxLayers},
		"num_attention_heads":             {1, MaxHeads},
		"num_key_value_heads":             {1, MaxHeads},
		"head_dim":                        {1, MaxHeadDim},
		"global_head_dim":                 {1, MaxHeadDim},
		"max_position_embeddings":         {1, MaxPositions},
		"sliding_window":                  {1, MaxPositions},
		"num_kv_shared_layers":            {0, MaxLayers},
		"laurel_rank":                     {1, MaxHidden},
		"altup_num_inputs":                {1, 64},
		"altup_active_idx":                {0, 63},
		"num_experts":                     {1, MaxExperts},
		"num_local_experts":               {1, MaxExperts},
		"num_experts_per_tok":             {1, MaxExperts},
		"bos_token_id":                    {0, MaxVocab - 1},
		"eos_token_id":                    {0, MaxVocab - 1},
		"pad_token_id":                    {0, MaxVocab - 1},
	}
}

// SizeRange returns the sane range of a well-known config.json size key
// ("num_hidden_layers", "text_config.vocab_size", ...); ok is false for a
// key it does not know.
func SizeRange(key string) (r Range, ok bool) {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		key = key[i+1:]
	}
	r, ok = sizeRanges()[key]
	return r, ok
}

// SizeKeys lists the keys SizeRange knows, sorted.
func SizeKeys() []string {
	m := sizeRanges()
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (c *Config) outOfRange(key string, v any, r Range) error {
	return fmt.Errorf("%s: %s = %s out of range (want %s)", c.Path, c.full(key), describeNumber(v), r)
}

func describeNumber(v any) string {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// IntIn returns the integer at key, which must lie in r; missing, a
// non-integer or out of range is an error naming the file and the key, e.g.
// "m/config.json: text_config.num_hidden_layers = -1 out of range (want 1 to 1024)".
func (c *Config) IntIn(key string, r Range) (int, error) {
	v, err := c.Int(key)
	if err != nil {
		return 0, err
	}
	if !r.Contains(v) {
		return 0, c.outOfRange(key, v, r)
	}
	return v, nil
}

// IntInOr is IntIn, or def when key is missing or null (def is not
// checked).
func (c *Config) IntInOr(key string, def int, r Range) (int, error) {
	if !c.Has(key) {
		return def, nil
	}
	return c.IntIn(key, r)
}

// IntsIn is Ints with every entry in r.
func (c *Config) IntsIn(key string, r Range) ([]int, error) {
	vals, err := c.Ints(key)
	if err != nil {
		return nil, err
	}
	v, _ := c.Get(key)
	_, isList := v.([]any)
	for i, x := range vals {
		if r.Contains(x) {
			continue
		}
		if !isList {
			return nil, c.outOfRange(key, x, r)
		}
		return nil, c.outOfRange(fmt.Sprintf("%s[%d]", key, i), x, r)
	}
	return vals, nil
}

// Size returns the integer at a well-known size key (see SizeRange)
// checked against its sane range; a key SizeRange does not know must be
// read with IntIn.
func (c *Config) Size(key string) (int, error) {
	r, ok := SizeRange(key)
	if !ok {
		return 0, fmt.Errorf("%s: %s: no known range for this size key (read it with IntIn)", c.Path, c.full(key))
	}
	return c.IntIn(key, r)
}

// SizeOr is Size, or def when key is missing or null.
func (c *Config) SizeOr(key string, def int) (int, error) {
	if !c.Has(key) {
		return def, nil
	}
	return c.Size(key)
}

// FloatIn returns the number at key, which must be finite and lie in
// [lo, hi].
func (c *Config) FloatIn(key string, lo, hi float64) (float64, error) {
	v, err := c.Float(key)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		return 0, fmt.Errorf("%s: %s = %s out of range (want %g to %g)", c.Path, c.full(key), describeNumber(v), lo, hi)
	}
	return v, nil
}

// FloatInOr is FloatIn, or def when key is missing or null.
func (c *Config) FloatInOr(key string, def, lo, hi float64) (float64, error) {
	if !c.Has(key) {
		return def, nil
	}
	return c.FloatIn(key, lo, hi)
}
