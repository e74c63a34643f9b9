package olmo3

import (
	"fmt"
	"math"

	"mlxchat/models/blocks"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// ModelTypes are the config.json model_type values this package loads.
var ModelTypes = []string{"olmo3"}

// Config holds the OLMo 3 settings the model uses.
type Config struct {
	Sizes       blocks.Sizes
	Sliding     []bool
	Window      int
	Eps         float32
	RopeFull    blocks.RopeSpec
	RopeSliding blocks.RopeSpec
	// DroppedSlidingScaling names the scaling the config asked for on
	// sliding layers, which this package never applies ("" when none).
	DroppedSlidingScaling string
	AttnBias              bool
	Tied                  bool
	BOS                   int
}

// ParseConfig reads the OLMo 3 settings of config.json.
//
// RoPE: a legacy rope_scaling or a flat rope_parameters describes the
// global layers only; a rope_parameters keyed by layer type is used as
// given, except that sliding layers are never scaled (YaRN on sliding
// layers measurably hurts; mlx-lm >= 0.28.4, llama.cpp and the OLMo 3
// paper scale the global layers only). Sliding layers use the default
// table at the same base.
func ParseConfig(c *checkpoint.Config) (*Config, error) {
	cfg := &Config{}
	var err error
	if cfg.Sizes, err = blocks.ReadSizes(c, nil, false); err != nil {
		return nil, err
	}
	if cfg.Sliding, err = blocks.SlidingLayers(c, cfg.Sizes.Layers, "", 4); err != nil {
		return nil, err
	}
	if blocks.AnySliding(cfg.Sliding) {
		if cfg.Window, err = blocks.Window(c); err != nil {
			return nil, err
		}
	}
	if cfg.Eps, err = blocks.NormEps(c, "rms_norm_eps", 1e-5); err != nil {
		return nil, err
	}
	if _, err := blocks.OneOf(c, "hidden_act", "silu", "silu"); err != nil {
		return nil, err
	}
	if cfg.AttnBias, err = c.BoolOr("attention_bias", false); err != nil {
		return nil, err
	}
	rope, err := blocks.ReadRope(c, 500000)
	if err != nil {
		return nil, err
	}
	cfg.RopeFull = rope.For(blocks.FullAttention)
	sl := rope.For(blocks.SlidingAttention)
	if ps, ok := rope.PerType[blocks.SlidingAttention]; ok && ps.Scaled() {
		cfg.DroppedSlidingScaling = ps.Scaling.Type
	}
	cfg.RopeSliding = blocks.RopeSpec{Theta: sl.Theta}
	return cfg, nil
}

// Model is a loaded OLMo 3 model.
type Model struct {
	*blocks.Decoder
	cfg *Config
}

// TextConfig returns the parsed settings.
func (m *Model) TextConfig() Config { return *m.cfg }

// Load opens the checkpoint in dir and builds the model on be.
func Load(dir string, be tensor.Backend) (*Model, error) { return blocks.Open(dir, be, New) }

// New builds the model from an opened checkpoint, which it then owns.
func New(ck *checkpoint.Checkpoint, be tensor.Backend) (*Model, error) {
	m, err := build(ck, be)
	if err != nil {
		return nil, fmt.Errorf("olmo3: %w", err)
	}
	return m, nil
}

func build(ck *checkpoint.Checkpoint, be tensor.Backend) (*Model, error) {
	c := ck.Config
	cfg, err := ParseConfig(c)
	if err != nil {
		return nil, err
	}
	s := &cfg.Sizes
	st, err := blocks.StartText("olmo3", ck, be, c, *s, false)
	if err != nil {
		return nil, err
	}
	d, w := st.Decoder, st.Weights
	cfg.Tied = st.Tied
	ropeFull, afFull, err := cfg.RopeFull.Rotary(s.HeadDim, false)
	if err != nil {
		return nil, fmt.Errorf("%s: global-layer rope: %w", c.Path, err)
	}
	ropeSliding, _, err := cfg.RopeSliding.Rotary(s.HeadDim, false)
	if err != nil {
		return nil, fmt.Errorf("%s: sliding-layer rope: %w", c.Path, err)
	}
	base := 1 / math.Sqrt(float64(s.HeadDim))
	d.Layers = make([]blocks.Layer, s.Layers)
	for i := range d.Layers {
		l := &d.Layers[i]
		lw := w.Layer(i)
		if l.Attn, err = blocks.LoadAttention(lw, i, *s, blocks.AttnOptions{Bias: cfg.AttnBias, QKNorm: blocks.FullWidthQKNorm, Eps: cfg.Eps}); err != nil {
			return nil, err
		}
		// YaRN's attention factor scales cos and sin of q and k, so the
		// scores by its square.
		l.Attn.Rope, l.Attn.Scale = ropeFull, float32(base*afFull*afFull)
		if cfg.Sliding[i] {
			l.Attn.Rope, l.Attn.Scale = ropeSliding, float32(base)
		}
		if l.MLP, err = blocks.LoadMLP(lw, i, s.Hidden, s.Intermediate, blocks.SiLU, false); err != nil {
			return nil, err
		}
		if l.PostAttn, err = lw.RMSNorm("post_attention_layernorm", s.Hidden, cfg.Eps, false); err != nil {
			return nil, err
		}
		if l.PostMLP, err = lw.RMSNorm("post_feedforward_layernorm", s.Hidden, cfg.Eps, false); err != nil {
			return nil, err
		}
	}
	if d.Final, err = w.RMSNorm("norm", s.Hidden, cfg.Eps, false); err != nil {
		return nil, err
	}
	if cfg.BOS, err = blocks.BOS(ck, c, -1, s.Vocab); err != nil {
		return nil, err
	}
	if d.Info, err = blocks.NewInfo(ck, c, blocks.InfoOptions{
		ModelType: "olmo3", Sizes: *s, Sliding: cfg.Sliding, Window: cfg.Window,
		BOS: cfg.BOS, Quantization: blocks.Describe(d.Layers[0].MLP.Gate),
	}); err != nil {
		return nil, err
	}
	if t := cfg.DroppedSlidingScaling; t != "" {
		d.Info.Notes = append(d.Info.Notes, fmt.Sprintf("%s: rope_parameters.sliding_attention asks for %s scaling; sliding layers use the unscaled table, as mlx-lm and the OLMo 3 paper do", c.Path, t))
	}
	d.Finish()
	return &Model{Decoder: d, cfg: cfg}, nil
}
