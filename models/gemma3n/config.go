package gemma3n

import (
	"fmt"
	"math"

	"mlxchat/models/checkpoint"
)

// Config holds the text-model settings of a Gemma 3n checkpoint.
type Config struct {
	ModelType         string
	Vocab             int       // vocab_size
	VocabPerLayer     int       // vocab_size_per_layer_input
	Hidden            int       // hidden_size
	PerLayerHidden    int       // hidden_size_per_layer_input
	Intermediate      []int     // intermediate_size, one per layer
	Layers            int       // num_hidden_layers
	Heads, KVHeads    int       // num_attention_heads, num_key_value_heads
	HeadDim           int       // head_dim
	SlidingWindow     int       // sliding_window
	Sliding           []bool    // layer_types: true for sliding_attention
	KVShared          int       // num_kv_shared_layers
	Sparsity          []float64 // activation_sparsity_pattern, one per layer
	LaurelRank        int
	AltUpInputs       int
	AltUpActive       int
	AltUpCoefClip     float64 // 0: no clipping
	AltUpCorrectScale bool
	FinalSoftcap      float64 // 0: none
	Eps               float64 // rms_norm_eps
	RopeGlobal        float64 // RoPE base of full-attention layers
	RopeLocal         float64 // RoPE base of sliding layers
	MaxPosition       int
	BOS               int
}

// SharedFrom returns, for every layer, the layer whose KV cache it reads,
// or -1 for a layer that owns its cache: the last `num_kv_shared_layers`
// layers read the last earlier non-shared layer of the same attention type
// (transformers' rule; for E2B it agrees with mlx-lm's "first shared - 2 for
// sliding, - 1 for full").
func (c *Config) SharedFrom() []int {
	out := make([]int, c.Layers)
	first := c.Layers - c.KVShared
	for i := range out {
		out[i] = -1
		if c.KVShared <= 0 || first <= 0 || i < first {
			continue
		}
		for j := first - 1; j >= 0; j-- {
			if c.Sliding[j] == c.Sliding[i] {
				out[i] = j
				break
			}
		}
	}
	return out
}

// ParseConfig reads the Gemma 3n text settings from config.json (its
// text_config when nested).
func ParseConfig(root *checkpoint.Config) (*Config, error) {
	cfg := root.Text()
	c := &Config{}
	var err error
	get := func(key string, dst *int) {
		if err == nil {
			*dst, err = cfg.Size(key)
		}
	}
	c.ModelType, err = root.ModelType()
	get("vocab_size", &c.Vocab)
	get("hidden_size", &c.Hidden)
	get("hidden_size_per_layer_input", &c.PerLayerHidden)
	get("num_hidden_layers", &c.Layers)
	get("num_attention_heads", &c.Heads)
	get("num_key_value_heads", &c.KVHeads)
	get("sliding_window", &c.SlidingWindow)
	get("num_kv_shared_layers", &c.KVShared)
	get("laurel_rank", &c.LaurelRank)
	if err != nil {
		return nil, err
	}
	if c.VocabPerLayer, err = cfg.SizeOr("vocab_size_per_layer_input", c.Vocab); err != nil {
		return nil, err
	}
	if c.HeadDim, err = cfg.SizeOr("head_dim", 0); err != nil {
		return nil, err
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	if c.AltUpInputs, err = cfg.SizeOr("altup_num_inputs", 4); err != nil {
		return nil, err
	}
	if c.AltUpActive, err = cfg.SizeOr("altup_active_idx", 0); err != nil {
		return nil, err
	}
	if c.AltUpCorrectScale, err = cfg.BoolOr("altup_correct_scale", true); err != nil {
		return nil, err
	}
	if c.MaxPosition, err = cfg.SizeOr("max_position_embeddings", 0); err != nil {
		return nil, err
	}
	if c.BOS, err = cfg.SizeOr("bos_token_id", -1); err != nil {
		return nil, err
	}
	if c.Eps, err = cfg.FloatOr("rms_norm_eps", 1e-6); err != nil {
		return nil, err
	}
	if c.AltUpCoefClip, err = optFloat(cfg, "altup_coef_clip", 0); err != nil {
		return nil, err
	}
	if c.FinalSoftcap, err = optFloat(cfg, "final_logit_softcapping", 0); err != nil {
		return nil, err
	}
	if c.Intermediate, err = intOrList(cfg, "intermediate_size", c.Layers); err != nil {
		return nil, err
	}
	if err := c.parseLayerTypes(cfg); err != nil {
		return nil, err
	}
	if err := c.parseSparsity(cfg); err != nil {
		return nil, err
	}
	if err := c.parseRope(cfg); err != nil {
		return nil, err
	}
	act, err := cfg.StringOr("hidden_activation", "gelu_pytorch_tanh")
	if err != nil {
		return nil, err
	}
	if act != "gelu_pytorch_tanh" && act != "gelu_tanh" && act != "gelu_approx" {
		return nil, fmt.Errorf("%s: hidden_activation %q not supported (want gelu_pytorch_tanh)", cfg.Path, act)
	}
	if err := c.validate(cfg.Path); err != nil {
		return nil, err
	}
	return c, nil
}

// optFloat reads a non-negative number that may be null or absent (def then).
func optFloat(cfg *checkpoint.Config, key string, def float64) (float64, error) {
	if !cfg.Has(key) {
		return def, nil
	}
	return cfg.FloatIn(key, 0, math.MaxFloat64)
}

func intOrList(cfg *checkpoint.Config, key string, n int) ([]int, error) {
	v, ok := cfg.Get(key)
	if !ok || v == nil {
		return nil, fmt.Errorf("%s: missing %s", cfg.Path, key)
	}
	r, _ := checkpoint.SizeRange(key)
	if _, isList := v.([]any); isList {
		out, err := cfg.IntsIn(key, r)
		if err != nil {
			return nil, err
		}
		if len(out) != n {
			return nil, fmt.Errorf("%s: %s has %d entries, want one per layer (%d)", cfg.Path, key, len(out), n)
		}
		return out, nil
	}
	one, err := cfg.IntIn(key, r)
	if err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i := range out {
		out[i] = one
	}
	return out, nil
}

func (c *Config) parseLayerTypes(cfg *checkpoint.Config) error {
	c.Sliding = make([]bool, c.Layers)
	if !cfg.Has("layer_types") {
		for i := range c.Sliding { // Gemma 3n default: every fifth layer is global
			c.Sliding[i] = (i+1)%5 != 0
		}
		return nil
	}
	types, err := cfg.Strings("layer_types")
	if err != nil {
		return err
	}
	if len(types) != c.Layers {
		return fmt.Errorf("%s: layer_types has %d entries, want num_hidden_layers = %d", cfg.Path, len(types), c.Layers)
	}
	for i, t := range types {
		switch t {
		case "sliding_attention":
			c.Sliding[i] = true
		case "full_attention":
		default:
			return fmt.Errorf("%s: layer_types[%d] = %q, want sliding_attention or full_attention", cfg.Path, i, t)
		}
	}
	return nil
}

func (c *Config) parseSparsity(cfg *checkpoint.Config) error {
	c.Sparsity = make([]float64, c.Layers)
	v, ok := cfg.Get("activation_sparsity_pattern")
	if !ok || v == nil {
		return nil
	}
	if _, isList := v.([]any); !isList {
		one, err := cfg.FloatIn("activation_sparsity_pattern", 0, math.Nextafter(1, 0))
		if err != nil {
			return err
		}
		for i := range c.Sparsity {
			c.Sparsity[i] = one
		}
		return nil
	}
	vals, err := cfg.Floats("activation_sparsity_pattern")
	if err != nil {
		return err
	}
	if len(vals) != c.Layers {
		return fmt.Errorf("%s: activation_sparsity_pattern has %d entries, want one per layer (%d)", cfg.Path, len(vals), c.Layers)
	}
	for i, s := range vals {
		if s < 0 || s >= 1 {
			return fmt.Errorf("%s: activation_sparsity_pattern[%d] = %g, want a value in [0, 1)", cfg.Path, i, s)
		}
	}
	copy(c.Sparsity, vals)
	return nil
}

// parseRope reads the RoPE bases: rope_parameters.{full,sliding}_attention
// .rope_theta (transformers >= 5), else rope_theta and rope_local_base_freq,
// else Gemma 3n's defaults 1e6 and 1e4. Scaled RoPE variants are refused.
func (c *Config) parseRope(cfg *checkpoint.Config) error {
	c.RopeGlobal, c.RopeLocal = 1e6, 1e4
	var err error
	if c.RopeGlobal, err = cfg.FloatInOr("rope_theta", c.RopeGlobal, 1, 1e15); err != nil {
		return err
	}
	if c.RopeLocal, err = cfg.FloatInOr("rope_local_base_freq", c.RopeLocal, 1, 1e15); err != nil {
		return err
	}
	for _, lt := range []struct {
		key  string
		base *float64
	}{{"full_attention", &c.RopeGlobal}, {"sliding_attention", &c.RopeLocal}} {
		p := "rope_parameters." + lt.key
		if !cfg.Has(p) {
			continue
		}
		if typ, err := cfg.StringOr(p+".rope_type", "default"); err != nil {
			return err
		} else if typ != "default" {
			return fmt.Errorf("%s: %s.rope_type %q not supported (want default)", cfg.Path, p, typ)
		}
		if *lt.base, err = cfg.FloatInOr(p+".rope_theta", *lt.base, 1, 1e15); err != nil {
			return err
		}
	}
	if v, ok := cfg.Get("rope_scaling"); ok && v != nil {
		return fmt.Errorf("%s: rope_scaling is not supported for gemma3n", cfg.Path)
	}
	return nil
}

func (c *Config) validate(path string) error {
	switch {
	case c.Vocab <= 0 || c.Hidden <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.HeadDim <= 0:
		return fmt.Errorf("%s: bad sizes (vocab %d, hidden %d, layers %d, heads %d/%d, head_dim %d)", path, c.Vocab, c.Hidden, c.Layers, c.Heads, c.KVHeads, c.HeadDim)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("%s: num_attention_heads %d is not a multiple of num_key_value_heads %d", path, c.Heads, c.KVHeads)
	case c.HeadDim%2 != 0:
		return fmt.Errorf("%s: head_dim %d must be even for RoPE", path, c.HeadDim)
	case c.PerLayerHidden <= 0 || c.VocabPerLayer <= 0 || c.LaurelRank <= 0:
		return fmt.Errorf("%s: bad per-layer input or laurel sizes (%d, %d, %d)", path, c.PerLayerHidden, c.VocabPerLayer, c.LaurelRank)
	case c.AltUpInputs < 1 || c.AltUpActive < 0 || c.AltUpActive >= c.AltUpInputs:
		return fmt.Errorf("%s: altup_num_inputs %d / altup_active_idx %d out of range", path, c.AltUpInputs, c.AltUpActive)
	case c.KVShared < 0 || c.KVShared >= c.Layers:
		return fmt.Errorf("%s: num_kv_shared_layers %d out of range for %d layers", path, c.KVShared, c.Layers)
	case c.SlidingWindow <= 0:
		return fmt.Errorf("%s: sliding_window %d must be positive", path, c.SlidingWindow)
	case c.Eps <= 0 || math.IsNaN(c.Eps):
		return fmt.Errorf("%s: rms_norm_eps %g must be positive", path, c.Eps)
	}
	for i, n := range c.Intermediate {
		if n <= 0 {
			return fmt.Errorf("%s: intermediate_size[%d] = %d", path, i, n)
		}
	}
	for i, j := range c.SharedFrom() {
		if i >= c.Layers-c.KVShared && c.KVShared > 0 && j < 0 {
			return fmt.Errorf("%s: KV-shared layer %d has no earlier layer of its attention type to read", path, i)
		}
	}
	return nil
}
