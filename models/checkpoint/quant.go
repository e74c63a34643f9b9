package checkpoint

import (
	"fmt"
	"maps"
	"slices"
)

// QuantParams are the affine quantization parameters of one module.
type QuantParams struct {
	Bits      int // bits per weight code
	GroupSize int // weights sharing one scale and bias
}

// Quantization is the `quantization` (or `quantization_config`) block of an
// MLX config.json: default parameters plus per-module overrides keyed by the
// module path (the tensor-name prefix, e.g.
// "language_model.model.layers.0.mlp.down_proj"). An override is either a
// dict of parameters (that module is quantized with them) or false (that
// module stays dense).
type Quantization struct {
	// Default holds the block's group_size and bits.
	Default QuantParams
	// Mode is the quantization mode; only "affine" (the default) is
	// supported.
	Mode string
	// Overrides maps a module path to its parameters; a nil value means the
	// module is explicitly not quantized (false in the file).
	Overrides map[string]*QuantParams
}

// SupportedBits reports whether the loader and kernels handle this bit
// width.
func SupportedBits(bits int) bool { return bits == 4 || bits == 8 }

// SupportedGroupSize reports whether the loader and kernels handle this
// group size.
func SupportedGroupSize(g int) bool { return g == 32 || g == 64 || g == 128 }

// ParseQuantization reads the quantization block from cfg. It looks at
// "quantization" first and falls back to "quantization_config" (mlx-vlm
// writes both; some uploads only the latter). It returns nil, nil when
// neither is present. Unsupported bits, group sizes or modes are errors,
// e.g. "config.json: quantization bits 3 not supported (want 4 or 8)".
func ParseQuantization(cfg *Config) (*Quantization, error) {
	key := "quantization"
	if !cfg.Has(key) {
		key = "quantization_config"
		if !cfg.Has(key) {
			return nil, nil
		}
	}
	block, err := cfg.Sub(key)
	if err != nil {
		return nil, err
	}
	q := &Quantization{Overrides: map[string]*QuantParams{}}
	if q.Mode, err = block.StringOr("mode", "affine"); err != nil {
		return nil, err
	}
	if q.Mode != "affine" {
		return nil, fmt.Errorf("%s: %s mode %q not supported (want affine)", cfg.Path, key, q.Mode)
	}
	if q.Default, err = parseParams(block, "", QuantParams{}); err != nil {
		return nil, err
	}
	for _, name := range block.Keys() {
		switch name {
		case "group_size", "bits", "mode", "quant_method":
			continue
		}
		switch x := block.Raw[name].(type) {
		case bool:
			if x {
				p := q.Default
				q.Overrides[name] = &p
			} else {
				q.Overrides[name] = nil
			}
		case map[string]any:
			sub := &Config{Path: cfg.Path, Raw: x, prefix: block.full(name)}
			if m, err := sub.StringOr("mode", "affine"); err != nil {
				return nil, err
			} else if m != "affine" {
				return nil, fmt.Errorf("%s: %s mode %q not supported (want affine)", cfg.Path, sub.prefix, m)
			}
			p, err := parseParams(sub, name+" ", q.Default)
			if err != nil {
				return nil, err
			}
			q.Overrides[name] = &p
		default:
			// Other scalar settings (e.g. a transformers-style
			// quant_method string) carry no per-module meaning here.
		}
	}
	return q, nil
}

func parseParams(c *Config, what string, def QuantParams) (QuantParams, error) {
	var p QuantParams
	var err error
	if def.Bits == 0 {
		p.Bits, err = c.Int("bits")
	} else {
		p.Bits, err = c.IntOr("bits", def.Bits)
	}
	if err != nil {
		return p, err
	}
	if def.GroupSize == 0 {
		p.GroupSize, err = c.IntOr("group_size", 64)
	} else {
		p.GroupSize, err = c.IntOr("group_size", def.GroupSize)
	}
	if err != nil {
		return p, err
	}
	if !SupportedBits(p.Bits) {
		return p, fmt.Errorf("%s: quantization %sbits %d not supported (want 4 or 8)", c.Path, what, p.Bits)
	}
	if !SupportedGroupSize(p.GroupSize) {
		return p, fmt.Errorf("%s: quantization %sgroup_size %d not supported (want 32, 64 or 128)", c.Path, what, p.GroupSize)
	}
	return p, nil
}

// For reports how the module at path is quantized according to the config:
// explicit is true when an override names it, quantized whether it is, and
// p its parameters (the defaults when not overridden). Without an override
// the config cannot tell whether a module was quantized; MLX then decides by
// the presence of `<path>.scales`, as Checkpoint.Matrix does.
func (q *Quantization) For(path string) (p QuantParams, quantized, explicit bool) {
	if q == nil {
		return QuantParams{}, false, false
	}
	if o, ok := q.Overrides[path]; ok {
		if o == nil {
			return QuantParams{}, false, true
		}
		return *o, true, true
	}
	return q.Default, true, false
}

// OverridePaths returns the module paths with overrides, sorted.
func (q *Quantization) OverridePaths() []string {
	return slices.Sorted(maps.Keys(q.Overrides))
}
