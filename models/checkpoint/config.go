package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"mlxchat/safefile"
	"os"
	"slices"
	"strings"
)

// Config is a parsed JSON configuration file (config.json or a nested
// object of it such as text_config), kept as a generic map with typed
// accessors. Keys may be dotted paths ("text_config.hidden_size"). Errors
// name the file and the full key path.
type Config struct {
	// Path is the file the configuration came from.
	Path string
	// Raw is the decoded JSON object; numbers are json.Number.
	Raw map[string]any
	// prefix is the dotted path of this object inside the file ("" at top).
	prefix string
}

// ParseConfig decodes a JSON object. path is only used in error messages.
func ParseConfig(path string, data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: invalid JSON: %v", path, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%s: want a JSON object, got null", path)
	}
	return &Config{Path: path, Raw: raw}, nil
}

// LoadConfig reads and decodes a JSON object file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, safefile.Unwrap(err))
	}
	return ParseConfig(path, data)
}

// KeyPath is key's full dotted path in its file ("text_config.head_dim"
// for a key of Text()), as error messages name it.
func (c *Config) KeyPath(key string) string { return c.full(key) }

func (c *Config) full(key string) string {
	if c.prefix == "" {
		return key
	}
	return c.prefix + "." + key
}

// Get returns the raw value at a dotted key path.
func (c *Config) Get(key string) (any, bool) {
	var cur any = c.Raw
	for _, part := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[part]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// Has reports whether key is present and not JSON null.
func (c *Config) Has(key string) bool {
	v, ok := c.Get(key)
	return ok && v != nil
}

func (c *Config) missing(key string) error {
	return fmt.Errorf("%s: missing %s", c.Path, c.full(key))
}

func (c *Config) wrongType(key, want string, v any) error {
	return fmt.Errorf("%s: %s: want %s, got %s", c.Path, c.full(key), want, describeJSON(v))
}

func describeJSON(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case json.Number:
		return "number " + x.String()
	case float64:
		return fmt.Sprintf("number %v", x)
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("string %q", x)
	case []any:
		return fmt.Sprintf("list of %d", len(x))
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func asInt(v any) (int, bool) {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i), true
		}
		f, err := x.Float64()
		if err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int(f), true
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int(x), true
		}
	case int:
		return x, true
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

// Int returns the integer at key; missing or non-integer is an error.
func (c *Config) Int(key string) (int, error) { return scalar(c, key, "an integer", asInt) }

// IntOr returns the integer at key, or def when key is missing or null.
func (c *Config) IntOr(key string, def int) (int, error) { return scalarOr(c, key, def, c.Int) }

// Float returns the number at key; missing or non-number is an error.
func (c *Config) Float(key string) (float64, error) { return scalar(c, key, "a number", asFloat) }

// FloatOr returns the number at key, or def when key is missing or null.
func (c *Config) FloatOr(key string, def float64) (float64, error) {
	return scalarOr(c, key, def, c.Float)
}

// String returns the string at key; missing or non-string is an error.
func (c *Config) String(key string) (string, error) {
	return scalar(c, key, "a string", asType[string])
}

// StringOr returns the string at key, or def when key is missing or null.
func (c *Config) StringOr(key, def string) (string, error) { return scalarOr(c, key, def, c.String) }

// Bool returns the boolean at key; missing or non-boolean is an error.
func (c *Config) Bool(key string) (bool, error) { return scalar(c, key, "a boolean", asType[bool]) }

// BoolOr returns the boolean at key, or def when key is missing or null.
func (c *Config) BoolOr(key string, def bool) (bool, error) { return scalarOr(c, key, def, c.Bool) }

// scalar reads the value at key through conv; a missing or null key, or a
// value conv rejects, is an error naming key and want.
func scalar[T any](c *Config, key, want string, conv func(any) (T, bool)) (T, error) {
	var zero T
	v, ok := c.Get(key)
	if !ok || v == nil {
		return zero, c.missing(key)
	}
	x, ok := conv(v)
	if !ok {
		return zero, c.wrongType(key, want, v)
	}
	return x, nil
}

// scalarOr is get(key), or def when key is missing or null.
func scalarOr[T any](c *Config, key string, def T, get func(string) (T, error)) (T, error) {
	if !c.Has(key) {
		return def, nil
	}
	return get(key)
}

// asType is v as a T when it is one.
func asType[T any](v any) (T, bool) {
	x, ok := v.(T)
	return x, ok
}

// Ints returns the list of integers at key. A single integer is accepted as
// a list of one.
func (c *Config) Ints(key string) ([]int, error) {
	v, ok := c.Get(key)
	if !ok || v == nil {
		return nil, c.missing(key)
	}
	if i, ok := asInt(v); ok {
		return []int{i}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, c.wrongType(key, "a list of integers", v)
	}
	out := make([]int, len(list))
	for j, e := range list {
		i, ok := asInt(e)
		if !ok {
			return nil, c.wrongType(fmt.Sprintf("%s[%d]", key, j), "an integer", e)
		}
		out[j] = i
	}
	return out, nil
}

// IntList returns n integers from key, which may hold one integer (repeated
// n times) or a list of exactly n (as Gemma 3n's intermediate_size does).
func (c *Config) IntList(key string, n int) ([]int, error) {
	if n < 0 {
		return nil, fmt.Errorf("%s: %s: want a count of values, got %d", c.Path, c.full(key), n)
	}
	vals, err := c.Ints(key)
	if err != nil {
		return nil, err
	}
	v, _ := c.Get(key)
	if _, scalar := asInt(v); scalar {
		out := make([]int, n)
		for i := range out {
			out[i] = vals[0]
		}
		return out, nil
	}
	if len(vals) != n {
		return nil, fmt.Errorf("%s: %s: want %d values, got %d", c.Path, c.full(key), n, len(vals))
	}
	return vals, nil
}

// Floats returns the list of numbers at key. A single number is accepted as
// a list of one.
func (c *Config) Floats(key string) ([]float64, error) {
	v, ok := c.Get(key)
	if !ok || v == nil {
		return nil, c.missing(key)
	}
	if f, ok := asFloat(v); ok {
		return []float64{f}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, c.wrongType(key, "a list of numbers", v)
	}
	out := make([]float64, len(list))
	for j, e := range list {
		f, ok := asFloat(e)
		if !ok {
			return nil, c.wrongType(fmt.Sprintf("%s[%d]", key, j), "a number", e)
		}
		out[j] = f
	}
	return out, nil
}

// Strings returns the list of strings at key.
func (c *Config) Strings(key string) ([]string, error) {
	v, ok := c.Get(key)
	if !ok || v == nil {
		return nil, c.missing(key)
	}
	list, ok := v.([]any)
	if !ok {
		return nil, c.wrongType(key, "a list of strings", v)
	}
	out := make([]string, len(list))
	for j, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, c.wrongType(fmt.Sprintf("%s[%d]", key, j), "a string", e)
		}
		out[j] = s
	}
	return out, nil
}

// Sub returns the nested object at key as a Config whose errors carry the
// full key path.
func (c *Config) Sub(key string) (*Config, error) {
	v, ok := c.Get(key)
	if !ok || v == nil {
		return nil, c.missing(key)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, c.wrongType(key, "an object", v)
	}
	return &Config{Path: c.Path, Raw: m, prefix: c.full(key)}, nil
}

// Text returns text_config when present (multimodal checkpoints such as
// Gemma 3n nest the language model's settings there), else c itself.
func (c *Config) Text() *Config {
	if sub, err := c.Sub("text_config"); err == nil {
		return sub
	}
	return c
}

// ModelType returns model_type; a missing or non-string value is an error.
func (c *Config) ModelType() (string, error) {
	return c.String("model_type")
}

// Keys returns the top-level keys of this object, sorted.
func (c *Config) Keys() []string {
	return slices.Sorted(maps.Keys(c.Raw))
}

// UnknownModelType returns the error a model registry reports when
// config.json names a model_type it has no architecture for, e.g.
// `/m/config.json: model_type "llama4" not supported (known: gemma3n, gemma3n_text)`.
// A missing model_type gives the missing-key error instead.
func UnknownModelType(cfg *Config, known []string) error {
	mt, err := cfg.ModelType()
	if err != nil {
		return err
	}
	k := slices.Sorted(slices.Values(known))
	return fmt.Errorf("%s: model_type %q not supported (known: %s)", cfg.Path, mt, strings.Join(k, ", "))
}

// EOSTokenIDs returns the end-of-sequence ids at key (eos_token_id by
// convention), which may be one integer or a list of token ids (0 to
// MaxVocab-1). A missing key gives nil.
func (c *Config) EOSTokenIDs(key string) ([]int, error) {
	if !c.Has(key) {
		return nil, nil
	}
	return c.IntsIn(key, Range{0, MaxVocab - 1})
}
