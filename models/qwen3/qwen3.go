package qwen3

import (
	"fmt"
	"math"

	"mlxchat/models/blocks"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// ModelTypes are the config.json model_type values this package loads.
var ModelTypes = []string{"qwen3"}

// Config holds the Qwen3 settings the model uses.
type Config struct {
	Sizes    blocks.Sizes
	Eps      float32
	Rope     blocks.RopeSpec
	AttnBias bool
	Tied     bool
	BOS      int
}

// ParseConfig reads the Qwen3 settings of config.json.
func ParseConfig(c *checkpoint.Config) (*Config, error) {
	cfg := &Config{}
	var err error
	// transformers' Qwen3Config defaults head_dim to 128, not hidden/heads
	if cfg.Sizes, err = blocks.ReadSizes(c, map[string]int{"head_dim": 128}, false); err != nil {
		return nil, err
	}
	if err := blocks.RefuseTrue(c, "use_sliding_window", "transformers would window the layers from max_window_layers on; mlx-lm ignores it"); err != nil {
		return nil, err
	}
	if c.Has("layer_types") {
		sl, err := blocks.SlidingLayers(c, cfg.Sizes.Layers, "", 0)
		if err != nil {
			return nil, err
		}
		if blocks.AnySliding(sl) {
			return nil, fmt.Errorf("%s: layer_types names sliding_attention layers, which qwen3 does not support", c.Path)
		}
	}
	if cfg.Eps, err = blocks.NormEps(c, "rms_norm_eps", 1e-6); err != nil {
		return nil, err
	}
	if _, err := blocks.OneOf(c, "hidden_act", "silu", "silu"); err != nil {
		return nil, err
	}
	if cfg.AttnBias, err = c.BoolOr("attention_bias", false); err != nil {
		return nil, err
	}
	rope, err := blocks.ReadRope(c, 10000)
	if err != nil {
		return nil, err
	}
	cfg.Rope = rope.For(blocks.FullAttention)
	return cfg, nil
}

// Model is a loaded Qwen3 model.
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
		return nil, fmt.Errorf("qwen3: %w", err)
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
	st, err := blocks.StartText("qwen3", ck, be, c, *s, true)
	if err != nil {
		return nil, err
	}
	d, w := st.Decoder, st.Weights
	cfg.Tied = st.Tied
	rope, af, err := cfg.Rope.Rotary(s.HeadDim, false)
	if err != nil {
		return nil, fmt.Errorf("%s: rope: %w", c.Path, err)
	}
	scale := float32(af * af / math.Sqrt(float64(s.HeadDim)))
	d.Layers = make([]blocks.Layer, s.Layers)
	for i := range d.Layers {
		l := &d.Layers[i]
		lw := w.Layer(i)
		if l.Attn, err = blocks.LoadAttention(lw, i, *s, blocks.AttnOptions{Bias: cfg.AttnBias, QKNorm: blocks.PerHeadQKNorm, Eps: cfg.Eps}); err != nil {
			return nil, err
		}
		l.Attn.Rope, l.Attn.Scale = rope, scale
		if l.MLP, err = blocks.LoadMLP(lw, i, s.Hidden, s.Intermediate, blocks.SiLU, false); err != nil {
			return nil, err
		}
		if l.PreAttn, err = lw.RMSNorm("input_layernorm", s.Hidden, cfg.Eps, false); err != nil {
			return nil, err
		}
		if l.PreMLP, err = lw.RMSNorm("post_attention_layernorm", s.Hidden, cfg.Eps, false); err != nil {
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
		ModelType: "qwen3", Sizes: *s, Sliding: make([]bool, s.Layers),
		BOS: cfg.BOS, Quantization: blocks.Describe(d.Layers[0].MLP.Gate),
	}); err != nil {
		return nil, err
	}
	d.Finish()
	return &Model{Decoder: d, cfg: cfg}, nil
}
