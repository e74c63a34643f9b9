package cohere2

import (
	"fmt"
	"math"

	"mlxchat/models/blocks"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// ModelTypes are the config.json model_type values this package loads.
var ModelTypes = []string{"cohere2"}

// Config holds the Cohere2 settings the model uses.
type Config struct {
	Sizes      blocks.Sizes
	Sliding    []bool
	Window     int
	Eps        float32 // layer_norm_eps
	Rope       blocks.RopeSpec
	LogitScale float64
	AttnBias   bool
	Tied       bool
	BOS        int
}

// ParseConfig reads the Cohere2 settings of config.json. head_dim is always
// hidden_size / num_attention_heads (transformers ignores the key).
// cardContext is Command R7B's context length as its model card gives it
// (128K tokens).
const cardContext = 128 << 10

func ParseConfig(c *checkpoint.Config) (*Config, error) {
	cfg := &Config{}
	var err error
	if cfg.Sizes, err = blocks.ReadSizes(c, nil, true); err != nil {
		return nil, err
	}
	if cfg.Sliding, err = blocks.SlidingLayers(c, cfg.Sizes.Layers, "sliding_window_pattern", 4); err != nil {
		return nil, err
	}
	if blocks.AnySliding(cfg.Sliding) {
		if cfg.Window, err = blocks.Window(c); err != nil {
			return nil, err
		}
	}
	if cfg.Eps, err = blocks.NormEps(c, "layer_norm_eps", 1e-5); err != nil {
		return nil, err
	}
	if _, err := blocks.OneOf(c, "hidden_act", "silu", "silu"); err != nil {
		return nil, err
	}
	if err := blocks.RefuseTrue(c, "use_qk_norm", "Cohere2 has no q/k norm"); err != nil {
		return nil, err
	}
	if cfg.AttnBias, err = c.BoolOr("attention_bias", false); err != nil {
		return nil, err
	}
	// transformers' default is 0.0625; R7B says 0.25
	if cfg.LogitScale, err = blocks.PositiveOr(c, "logit_scale", 0.0625); err != nil {
		return nil, err
	}
	rope, err := blocks.ReadRope(c, 10000)
	if err != nil {
		return nil, err
	}
	cfg.Rope = rope.For(blocks.SlidingAttention)
	return cfg, nil
}

// Model is a loaded Cohere2 model.
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
		return nil, fmt.Errorf("cohere2: %w", err)
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
	st, err := blocks.StartText("cohere2", ck, be, c, *s, true)
	if err != nil {
		return nil, err
	}
	d, w := st.Decoder, st.Weights
	cfg.Tied = st.Tied
	d.LogitScale = float32(cfg.LogitScale)
	// Sliding layers rotate interleaved pairs; global layers take no RoPE.
	rope, af, err := cfg.Rope.Rotary(s.HeadDim, true)
	if err != nil {
		return nil, fmt.Errorf("%s: rope: %w", c.Path, err)
	}
	base := 1 / math.Sqrt(float64(s.HeadDim))
	d.Layers = make([]blocks.Layer, s.Layers)
	for i := range d.Layers {
		l := &d.Layers[i]
		lw := w.Layer(i)
		if l.Attn, err = blocks.LoadAttention(lw, i, *s, blocks.AttnOptions{Bias: cfg.AttnBias}); err != nil {
			return nil, err
		}
		l.Attn.Scale = float32(base)
		if cfg.Sliding[i] {
			l.Attn.Rope, l.Attn.Scale = rope, float32(base*af*af)
		}
		if l.MLP, err = blocks.LoadMLP(lw, i, s.Hidden, s.Intermediate, blocks.SiLU, false); err != nil {
			return nil, err
		}
		if l.PreAttn, err = lw.LayerNorm("input_layernorm", s.Hidden, cfg.Eps); err != nil {
			return nil, err
		}
		l.Parallel = true
	}
	if d.Final, err = w.LayerNorm("norm", s.Hidden, cfg.Eps); err != nil {
		return nil, err
	}
	if cfg.BOS, err = blocks.BOS(ck, c, 5, s.Vocab); err != nil {
		return nil, err
	}
	if d.Info, err = blocks.NewInfo(ck, c, blocks.InfoOptions{
		ModelType: "cohere2", Sizes: *s, Sliding: cfg.Sliding, Window: cfg.Window,
		BOS: cfg.BOS, Quantization: blocks.Describe(d.Layers[0].MLP.Gate),
	}); err != nil {
		return nil, err
	}
	if n := d.Info.ContextLength; n < cardContext {
		// The mlx-community mirror says 8192, another copy 132096;
		// the model card says 128K (../shared/FAMILIES.md). The global
		// layers have no RoPE, so nothing in the weights stops at the
		// config's number: take the card's, so that with no
		// --max-kv-size the chat trims at 128K, not at 8K.
		d.Info.Notes = append(d.Info.Notes, fmt.Sprintf("%s: max_position_embeddings %d is below Command R7B's %d-token context (its model card); the context length used is %d",
			c.Path, n, cardContext, cardContext))
		d.Info.ContextLength = cardContext
	}
	d.Finish()
	return &Model{Decoder: d, cfg: cfg}, nil
}
