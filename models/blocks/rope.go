package blocks

import (
	"fmt"
	"math"
	"slices"

	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// Rope scaling kinds (rope_type in config.json).
const (
	RopeDefault = "default"
	RopeLinear  = "linear"
	RopeLlama3  = "llama3"
	RopeYarn    = "yarn"
)

// RopeScaling is how a rotary table departs from base^(-2i/d). The zero
// value (or Type "default") is the unscaled table.
type RopeScaling struct {
	// Type is RopeDefault, RopeLinear, RopeLlama3 or RopeYarn.
	Type string
	// Factor is the context extension factor (linear, llama3, yarn).
	Factor float64
	// LowFreqFactor and HighFreqFactor bound llama3's blended band.
	LowFreqFactor, HighFreqFactor float64
	// OriginalMax is original_max_position_embeddings (llama3, yarn).
	OriginalMax float64
	// BetaFast and BetaSlow bound yarn's ramp (defaults 32 and 1).
	BetaFast, BetaSlow float64
	// AttentionFactor is yarn's cos/sin scale; 0 means 0.1·ln(Factor)+1.
	// Attention scores scale by its square.
	AttentionFactor float64
	// NoTruncate keeps yarn's correction range unrounded (truncate: false).
	NoTruncate bool
}

// RopeSpec is the rotary embedding of one kind of layer: a base and a
// scaling.
type RopeSpec struct {
	Theta   float64
	Scaling RopeScaling
}

// Scaled reports whether the table departs from the default one.
func (s RopeSpec) Scaled() bool { return s.Scaling.Type != "" && s.Scaling.Type != RopeDefault }

// InvFreq returns the spec's F32 inverse frequencies for dims rotated
// values and the attention factor (1 except for yarn): the rules of
// transformers' modeling_rope_utils and mlx-lm's rope_utils.
//
//   - linear: base table / factor;
//   - llama3: wavelength λ = 2π/inv; λ > L/low keeps inv/factor, λ < L/high
//     keeps inv, in between (1-s)·inv/factor + s·inv with
//     s = (L/λ - low)/(high - low);
//   - yarn: correction dims c(r) = d·ln(L/(2πr))/(2·ln base), lo = ⌊c(βfast)⌋
//     ≥ 0, hi = ⌈c(βslow)⌉ ≤ d-1, ramp ρ = clamp((i-lo)/(hi-lo), 0, 1),
//     inv = ρ·inv/factor + (1-ρ)·inv.
func (s RopeSpec) InvFreq(dims int) ([]float32, float64, error) {
	if !(s.Theta > 0) || math.IsInf(s.Theta, 0) {
		return nil, 0, fmt.Errorf("rope: base %g must be positive and finite", s.Theta)
	}
	if dims <= 0 || dims%2 != 0 {
		return nil, 0, fmt.Errorf("rope: dims %d must be even and positive", dims)
	}
	half := dims / 2
	base := make([]float64, half)
	for i := range base {
		base[i] = math.Pow(s.Theta, -float64(2*i)/float64(dims))
	}
	sc := s.Scaling
	out := make([]float32, half)
	af := 1.0
	switch sc.Type {
	case "", RopeDefault:
		return tensor.DefaultInvFreq(dims, s.Theta), 1, nil
	case RopeLinear:
		for i, f := range base {
			out[i] = float32(f / sc.Factor)
		}
	case RopeLlama3:
		L := sc.OriginalMax
		lowWave, highWave := L/sc.LowFreqFactor, L/sc.HighFreqFactor
		for i, f := range base {
			wave := 2 * math.Pi / f
			switch {
			case wave < highWave:
				out[i] = float32(f)
			case wave > lowWave:
				out[i] = float32(f / sc.Factor)
			default:
				sm := (L/wave - sc.LowFreqFactor) / (sc.HighFreqFactor - sc.LowFreqFactor)
				out[i] = float32((1-sm)*f/sc.Factor + sm*f)
			}
		}
	case RopeYarn:
		lo, hi := YarnRange(dims, s.Theta, sc)
		if lo == hi {
			hi += 0.001
		}
		for i, f := range base {
			ramp := min(max((float64(i)-lo)/(hi-lo), 0), 1)
			out[i] = float32(ramp*f/sc.Factor + (1-ramp)*f)
		}
		af = sc.AttentionFactor
		if af == 0 {
			af = yarnMscale(sc.Factor, 1)
		}
	default:
		return nil, 0, fmt.Errorf("rope: scaling type %q not supported", sc.Type)
	}
	return out, af, nil
}

// yarnMscale is yarn's get_mscale: 0.1·m·ln(f)+1, or 1 for f <= 1.
func yarnMscale(f, m float64) float64 {
	if f <= 1 {
		return 1
	}
	return 0.1*m*math.Log(f) + 1
}

// YarnRange is yarn's correction range [lo, hi] over pair indices.
func YarnRange(dims int, theta float64, sc RopeScaling) (lo, hi float64) {
	corr := func(rot float64) float64 {
		return float64(dims) * math.Log(sc.OriginalMax/(rot*2*math.Pi)) / (2 * math.Log(theta))
	}
	lo, hi = corr(sc.BetaFast), corr(sc.BetaSlow)
	if !sc.NoTruncate {
		lo, hi = math.Floor(lo), math.Ceil(hi)
	}
	return max(lo, 0), min(hi, float64(dims-1))
}

// Rotary builds the tensor.Rotary of the spec over dims values (half-split
// pairs, or neighbours when interleaved) and returns the attention factor.
func (s RopeSpec) Rotary(dims int, interleaved bool) (*tensor.Rotary, float64, error) {
	inv, af, err := s.InvFreq(dims)
	if err != nil {
		return nil, 0, err
	}
	r, err := tensor.NewRotary(dims, inv, interleaved)
	if err != nil {
		return nil, 0, err
	}
	return r, af, nil
}

// RopeSettings is what config.json says about rotary embeddings, in the
// legacy spelling (rope_theta, rope_scaling, rope_local_base_freq) or
// transformers 5's rope_parameters (flat, or keyed by layer type).
type RopeSettings struct {
	// Flat is rope_theta with rope_scaling, or a flat rope_parameters;
	// rope_parameters wins when both are present. Its Theta is the
	// family default when no key names a base.
	Flat RopeSpec
	// FlatKey names where Flat came from, for messages.
	FlatKey string
	// PerType holds rope_parameters keyed by layer type
	// ("full_attention", "sliding_attention"); nil when not keyed.
	PerType map[string]RopeSpec
	// LocalTheta is rope_local_base_freq (Gemma 3); 0 when absent.
	LocalTheta float64
}

// For returns the spec of a layer type: its PerType entry when there is
// one, else Flat.
func (r *RopeSettings) For(layerType string) RopeSpec {
	if s, ok := r.PerType[layerType]; ok {
		return s
	}
	return r.Flat
}

// Layer type names of layer_types and rope_parameters.
const (
	FullAttention    = "full_attention"
	SlidingAttention = "sliding_attention"
)

// ReadRope reads the rotary settings of c with defaultTheta as the base
// when none is given. Unsupported scaling kinds are errors naming the key.
func ReadRope(c *checkpoint.Config, defaultTheta float64) (*RopeSettings, error) {
	r := &RopeSettings{}
	theta, err := PositiveOr(c, "rope_theta", defaultTheta)
	if err != nil {
		return nil, err
	}
	if r.LocalTheta, err = PositiveOr(c, "rope_local_base_freq", 0); err != nil {
		return nil, err
	}
	if c.Has("rope_parameters") {
		p, err := c.Sub("rope_parameters")
		if err != nil {
			return nil, err
		}
		typed := false
		for _, lt := range []string{FullAttention, SlidingAttention} {
			if p.Has(lt) {
				typed = true
			}
		}
		if typed {
			r.PerType = map[string]RopeSpec{}
			for _, lt := range []string{FullAttention, SlidingAttention} {
				if !p.Has(lt) {
					continue
				}
				sub, err := p.Sub(lt)
				if err != nil {
					return nil, err
				}
				spec, err := readSpec(sub, theta)
				if err != nil {
					return nil, err
				}
				r.PerType[lt] = spec
			}
			r.Flat = RopeSpec{Theta: theta}
			r.FlatKey = "rope_theta"
			return r, nil
		}
		if r.Flat, err = readSpec(p, theta); err != nil {
			return nil, err
		}
		r.FlatKey = "rope_parameters"
		return r, nil
	}
	r.Flat = RopeSpec{Theta: theta}
	r.FlatKey = "rope_theta"
	if c.Has("rope_scaling") {
		sub, err := c.Sub("rope_scaling")
		if err != nil {
			return nil, err
		}
		if r.Flat.Scaling, err = readScaling(sub); err != nil {
			return nil, err
		}
		r.FlatKey = "rope_scaling"
	}
	return r, nil
}

// readSpec reads one rope_parameters object: rope_theta (def when absent)
// and its scaling.
func readSpec(c *checkpoint.Config, def float64) (RopeSpec, error) {
	theta, err := PositiveOr(c, "rope_theta", def)
	if err != nil {
		return RopeSpec{}, err
	}
	sc, err := readScaling(c)
	if err != nil {
		return RopeSpec{}, err
	}
	return RopeSpec{Theta: theta, Scaling: sc}, nil
}

var ropeTypes = []string{RopeDefault, RopeLinear, RopeLlama3, RopeYarn}

// readScaling reads a scaling object (rope_scaling or one rope_parameters
// entry): rope_type (or the older type) and the parameters its kind needs.
func readScaling(c *checkpoint.Config) (RopeScaling, error) {
	key := "rope_type"
	if !c.Has(key) && c.Has("type") {
		key = "type"
	}
	t, err := c.StringOr(key, RopeDefault)
	if err != nil {
		return RopeScaling{}, err
	}
	if !slices.Contains(ropeTypes, t) {
		return RopeScaling{}, OutOfRange(c, key, fmt.Sprintf("%q", t), fmt.Sprintf("one of %q", ropeTypes))
	}
	sc := RopeScaling{Type: t}
	if t == RopeDefault {
		return sc, nil
	}
	factor, err := c.Float("factor")
	if err != nil {
		return sc, err
	}
	if !(factor >= 1) || math.IsInf(factor, 0) {
		return sc, OutOfRange(c, "factor", factor, "a finite number >= 1")
	}
	sc.Factor = factor
	switch t {
	case RopeLlama3:
		if sc.LowFreqFactor, err = PositiveOr(c, "low_freq_factor", 1); err != nil {
			return sc, err
		}
		if sc.HighFreqFactor, err = PositiveOr(c, "high_freq_factor", 4); err != nil {
			return sc, err
		}
		if !(sc.HighFreqFactor > sc.LowFreqFactor) {
			return sc, OutOfRange(c, "high_freq_factor", sc.HighFreqFactor, fmt.Sprintf("a number above low_freq_factor (%g)", sc.LowFreqFactor))
		}
		if sc.OriginalMax, err = PositiveOr(c, "original_max_position_embeddings", 8192); err != nil {
			return sc, err
		}
	case RopeYarn:
		if sc.OriginalMax, err = PositiveOr(c, "original_max_position_embeddings", 4096); err != nil {
			return sc, err
		}
		if sc.BetaFast, err = PositiveOr(c, "beta_fast", 32); err != nil {
			return sc, err
		}
		if sc.BetaSlow, err = PositiveOr(c, "beta_slow", 1); err != nil {
			return sc, err
		}
		if sc.AttentionFactor, err = PositiveOr(c, "attention_factor", 0); err != nil {
			return sc, err
		}
		if sc.AttentionFactor == 0 {
			// transformers: mscale/mscale_all_dim (DeepSeek) when both are
			// set, else 0.1·ln(factor)+1.
			ms, err := c.FloatOr("mscale", 0)
			if err != nil {
				return sc, err
			}
			msAll, err := c.FloatOr("mscale_all_dim", 0)
			if err != nil {
				return sc, err
			}
			sc.AttentionFactor = yarnMscale(factor, 1)
			if ms != 0 && msAll != 0 {
				sc.AttentionFactor = yarnMscale(factor, ms) / yarnMscale(factor, msAll)
			}
		}
		trunc, err := c.BoolOr("truncate", true)
		if err != nil {
			return sc, err
		}
		sc.NoTruncate = !trunc
	}
	return sc, nil
}
