package llama

import (
	"fmt"
	"math"

	"mlxchat/models/blocks"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// ModelTypes are the config.json model_type values this package loads.
var ModelTypes = []string{"llama"}

// Config holds the Llama settings the model uses.
type Config struct {
	Sizes    blocks.Sizes
	Sliding  []bool // from layer_types; all false by default
	Window   int    // sliding_window, when a layer slides
	Eps      float32
	Rope     *blocks.RopeSettings
	AttnBias bool // attention_bias
	MLPBias  bool // mlp_bias
	Tied     bool
	BOS      int
}

// ParseConfig reads the Llama settings of config.json.
func ParseConfig(c *checkpoint.Config) (*Config, error) {
	cfg := &Config{}
	var err error
	if cfg.Sizes, err = blocks.ReadSizes(c, nil, false); err != nil {
		return nil, err
	}
	if cfg.Sliding, err = blocks.SlidingLayers(c, cfg.Sizes.Layers, "", 0); err != nil {
		return nil, err
	}
	if blocks.AnySliding(cfg.Sliding) {
		if cfg.Window, err = blocks.Window(c); err != nil {
			return nil, err
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
	if cfg.MLPBias, err = c.BoolOr("mlp_bias", false); err != nil {
		return nil, err
	}
	if cfg.Rope, err = blocks.ReadRope(c, 10000); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Model is a loaded Llama model.
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
		return nil, fmt.Errorf("llama: %w", err)
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
	st, err := blocks.StartText("llama", ck, be, c, *s, false)
	if err != nil {
		return nil, err
	}
	d, w := st.Decoder, st.Weights
	cfg.Tied = st.Tied
	ropes := map[bool]*tensor.Rotary{}
	scales := map[bool]float32{}
	for _, sliding := range []bool{false, true} {
		lt := blocks.FullAttention
		if sliding {
			lt = blocks.SlidingAttention
		}
		r, af, err := cfg.Rope.For(lt).Rotary(s.HeadDim, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", c.Path, cfg.Rope.FlatKey, err)
		}
		ropes[sliding] = r
		scales[sliding] = float32(af * af / math.Sqrt(float64(s.HeadDim)))
	}
	d.Layers = make([]blocks.Layer, s.Layers)
	for i := range d.Layers {
		l := &d.Layers[i]
		lw := w.Layer(i)
		if l.Attn, err = blocks.LoadAttention(lw, i, *s, blocks.AttnOptions{Bias: cfg.AttnBias, Eps: cfg.Eps}); err != nil {
			return nil, err
		}
		l.Attn.Rope, l.Attn.Scale = ropes[cfg.Sliding[i]], scales[cfg.Sliding[i]]
		if l.MLP, err = blocks.LoadMLP(lw, i, s.Hidden, s.Intermediate, blocks.SiLU, cfg.MLPBias); err != nil {
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
		ModelType: "llama", Sizes: *s, Sliding: cfg.Sliding, Window: cfg.Window,
		BOS: cfg.BOS, Quantization: blocks.Describe(d.Layers[0].MLP.Gate),
	}); err != nil {
		return nil, err
	}
	d.Finish()
	return &Model{Decoder: d, cfg: cfg}, nil
}
