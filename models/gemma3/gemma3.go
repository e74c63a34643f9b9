package gemma3

import (
	"fmt"
	"math"

	"mlxchat/models/blocks"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// ModelTypes are the config.json model_type values this package loads.
var ModelTypes = []string{"gemma3", "gemma3_text"}

// defaults are transformers' Gemma3TextConfig defaults: Google's multimodal
// configs omit every text key equal to them (mlx-lm's gemma3_text defaults
// are the 1B's and would be wrong there).
var defaults = map[string]int{
	"vocab_size":          0, // the embedding's rows
	"hidden_size":         2304,
	"intermediate_size":   9216,
	"num_hidden_layers":   26,
	"num_attention_heads": 8,
	"num_key_value_heads": 4,
	"head_dim":            256,
}

// Config holds the Gemma 3 settings the model uses.
type Config struct {
	ModelType    string
	Sizes        blocks.Sizes
	Window       int     // sliding_window
	Sliding      []bool  // per layer
	QueryScalar  float64 // query_pre_attn_scalar
	Eps          float32 // rms_norm_eps
	RopeFull     blocks.RopeSpec
	RopeSliding  blocks.RopeSpec
	FinalSoftcap float64 // 0: none
	Tied         bool
	BOS          int
}

// ParseConfig reads the Gemma 3 text settings of a checkpoint (text_config
// for gemma3, the top level for gemma3_text).
func ParseConfig(root *checkpoint.Config) (*Config, *checkpoint.Config, error) {
	mt, err := root.ModelType()
	if err != nil {
		return nil, nil, err
	}
	text := root
	if mt == "gemma3" {
		if text, err = root.Sub("text_config"); err != nil {
			return nil, nil, err
		}
	}
	c := &Config{ModelType: mt}
	if c.Sizes, err = blocks.ReadSizes(text, defaults, false); err != nil {
		return nil, nil, err
	}
	if mt == "gemma3" && c.Sizes.Vocab == 0 {
		// mlx-lm reads the multimodal vocabulary at the top level.
		if c.Sizes.Vocab, err = blocks.IntInOr(root, "vocab_size", 0, 1, checkpoint.MaxVocab); err != nil {
			return nil, nil, err
		}
	}
	if !text.Has("sliding_window") {
		// transformers would take 4096, mlx-lm 512: refuse rather than guess
		return nil, nil, fmt.Errorf("%s: missing %s", text.Path, text.KeyPath("sliding_window"))
	}
	if c.Window, err = blocks.Window(text); err != nil {
		return nil, nil, err
	}
	if c.Sliding, err = blocks.SlidingLayers(text, c.Sizes.Layers, "sliding_window_pattern", 6); err != nil {
		return nil, nil, err
	}
	if c.QueryScalar, err = blocks.PositiveOr(text, "query_pre_attn_scalar", 256); err != nil {
		return nil, nil, err
	}
	if c.Eps, err = blocks.NormEps(text, "rms_norm_eps", 1e-6); err != nil {
		return nil, nil, err
	}
	if c.FinalSoftcap, err = blocks.PositiveOr(text, "final_logit_softcapping", 0); err != nil {
		return nil, nil, err
	}
	if text.Has("attn_logit_softcapping") {
		return nil, nil, fmt.Errorf("%s: %s is not supported (attention has no softcap)", text.Path, text.KeyPath("attn_logit_softcapping"))
	}
	if err := blocks.RefuseTrue(text, "use_bidirectional_attention", "an embedding model"); err != nil {
		return nil, nil, err
	}
	if _, err := blocks.OneOf(text, "hidden_activation", "gelu_pytorch_tanh", "gelu_pytorch_tanh"); err != nil {
		return nil, nil, err
	}
	rope, err := blocks.ReadRope(text, 1e6)
	if err != nil {
		return nil, nil, err
	}
	// Legacy keys: rope_theta and rope_scaling describe the global layers,
	// rope_local_base_freq (1e4) the sliding ones, never scaled.
	c.RopeFull = rope.For(blocks.FullAttention)
	c.RopeSliding = blocks.RopeSpec{Theta: 1e4}
	if rope.LocalTheta > 0 {
		c.RopeSliding.Theta = rope.LocalTheta
	}
	if s, ok := rope.PerType[blocks.SlidingAttention]; ok {
		c.RopeSliding = s
	}
	return c, text, nil
}

// Model is a loaded Gemma 3 text model.
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
		return nil, fmt.Errorf("gemma3: %w", err)
	}
	return m, nil
}

func build(ck *checkpoint.Checkpoint, be tensor.Backend) (*Model, error) {
	cfg, text, err := ParseConfig(ck.Config)
	if err != nil {
		return nil, err
	}
	s := &cfg.Sizes
	st, err := blocks.StartText("gemma3", ck, be, text, *s, true)
	if err != nil {
		return nil, err
	}
	d, w := st.Decoder, st.Weights
	cfg.Tied = st.Tied
	s.Vocab = d.Embed.Out
	d.EmbedScale = blocks.Round(blocks.ComputeDType(ck.Config), math.Sqrt(float64(s.Hidden)))
	d.Softcap = float32(cfg.FinalSoftcap)
	ropeFull, _, err := cfg.RopeFull.Rotary(s.HeadDim, false)
	if err != nil {
		return nil, fmt.Errorf("%s: global-layer rope: %w", text.Path, err)
	}
	ropeSliding, _, err := cfg.RopeSliding.Rotary(s.HeadDim, false)
	if err != nil {
		return nil, fmt.Errorf("%s: sliding-layer rope: %w", text.Path, err)
	}
	scale := float32(math.Pow(cfg.QueryScalar, -0.5))
	d.Layers = make([]blocks.Layer, s.Layers)
	for i := range d.Layers {
		l := &d.Layers[i]
		lw := w.Layer(i)
		if l.Attn, err = blocks.LoadAttention(lw, i, *s, blocks.AttnOptions{QKNorm: blocks.PerHeadQKNorm, OnePlus: true, Eps: cfg.Eps}); err != nil {
			return nil, err
		}
		l.Attn.Scale = scale
		l.Attn.Rope = ropeFull
		if cfg.Sliding[i] {
			l.Attn.Rope = ropeSliding
		}
		if l.MLP, err = blocks.LoadMLP(lw, i, s.Hidden, s.Intermediate, blocks.GeluTanh, false); err != nil {
			return nil, err
		}
		for _, n := range []struct {
			dst  **blocks.Norm
			path string
		}{{&l.PreAttn, "input_layernorm"}, {&l.PostAttn, "post_attention_layernorm"}, {&l.PreMLP, "pre_feedforward_layernorm"}, {&l.PostMLP, "post_feedforward_layernorm"}} {
			if *n.dst, err = lw.RMSNorm(n.path, s.Hidden, cfg.Eps, true); err != nil {
				return nil, err
			}
		}
	}
	if d.Final, err = w.RMSNorm("norm", s.Hidden, cfg.Eps, true); err != nil {
		return nil, err
	}
	if cfg.BOS, err = blocks.BOS(ck, text, 2, s.Vocab); err != nil {
		return nil, err
	}
	if d.Info, err = blocks.NewInfo(ck, text, blocks.InfoOptions{
		ModelType: cfg.ModelType, Sizes: *s, Sliding: cfg.Sliding, Window: cfg.Window,
		BOS: cfg.BOS, DefaultStops: []int{1, 106}, Quantization: blocks.Describe(d.Layers[0].MLP.Gate),
	}); err != nil {
		return nil, err
	}
	d.Finish()
	return &Model{Decoder: d, cfg: cfg}, nil
}
