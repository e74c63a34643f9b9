package synth

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Families are the model_type values WriteFamily writes (besides gemma3n,
// which WriteGemma3n writes).
var Families = []string{"gemma3_text", "llama", "qwen3", "olmo3", "cohere2"}

// FamilyDims are the sizes of a decoder-only checkpoint of one family.
type FamilyDims struct {
	Family       string // model_type: one of Families
	Vocab        int    // vocab_size
	Hidden       int    // hidden_size
	Intermediate int    // intermediate_size
	Layers       int    // num_hidden_layers
	Heads        int    // num_attention_heads
	KVHeads      int    // num_key_value_heads
	HeadDim      int    // head_dim (cohere2: must be Hidden/Heads)
	Window       int    // sliding_window (gemma3_text, olmo3, cohere2)
	Pattern      int    // every Pattern-th layer is global (sliding families)
	Tied         bool   // tie_word_embeddings: no lm_head tensor
	MaxPosition  int    // max_position_embeddings
}

// TinyFamily returns a small configuration of family for tests: 512
// tokens (the tiny tokenizer of engine/enginetest), hidden 128, 4 layers,
// 4 heads over 2 KV heads of 32, every matrix input a multiple of 64 so 4-
// and 8-bit quantization applies; sliding families get window 8 with every
// second layer global, so a global layer follows a sliding one.
func TinyFamily(family string) (FamilyDims, error) {
	d := FamilyDims{
		Family: family, Vocab: 512, Hidden: 128, Intermediate: 256, Layers: 4,
		Heads: 4, KVHeads: 2, HeadDim: 32, MaxPosition: 4096,
	}
	switch family {
	case "gemma3_text", "olmo3", "cohere2":
		d.Window, d.Pattern = 8, 2
	case "llama", "qwen3":
	default:
		return d, fmt.Errorf("synth: family %q not supported (want one of %q)", family, Families)
	}
	d.Tied = family != "olmo3"
	return d, d.Validate()
}

// Validate checks that the sizes make a well-formed model of the family.
func (d FamilyDims) Validate() error {
	if !slices.Contains(Families, d.Family) {
		return fmt.Errorf("synth: family %q not supported (want one of %q)", d.Family, Families)
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"vocab", d.Vocab}, {"hidden", d.Hidden}, {"intermediate", d.Intermediate}, {"layers", d.Layers},
		{"heads", d.Heads}, {"kv_heads", d.KVHeads}, {"head_dim", d.HeadDim}, {"max_position", d.MaxPosition}} {
		if v.n <= 0 {
			return fmt.Errorf("synth %s dims: %s must be positive, got %d", d.Family, v.name, v.n)
		}
	}
	if d.Heads%d.KVHeads != 0 || d.HeadDim%2 != 0 {
		return fmt.Errorf("synth %s dims: heads %d / kv_heads %d / head_dim %d", d.Family, d.Heads, d.KVHeads, d.HeadDim)
	}
	if d.Family == "cohere2" && d.HeadDim*d.Heads != d.Hidden {
		return fmt.Errorf("synth cohere2 dims: head_dim %d must be hidden/heads = %d", d.HeadDim, d.Hidden/d.Heads)
	}
	if d.sliding() && (d.Window <= 0 || d.Pattern <= 0) {
		return fmt.Errorf("synth %s dims: window %d and pattern %d must be positive", d.Family, d.Window, d.Pattern)
	}
	return nil
}

func (d FamilyDims) sliding() bool {
	return d.Family == "gemma3_text" || d.Family == "olmo3" || d.Family == "cohere2"
}

// layerTypes lists sliding_attention / full_attention per layer.
func (d FamilyDims) layerTypes() []string {
	out := make([]string, d.Layers)
	for i := range out {
		out[i] = "full_attention"
		if d.sliding() && (i+1)%d.Pattern != 0 {
			out[i] = "sliding_attention"
		}
	}
	return out
}

// Config returns the config.json of the checkpoint, as an MLX conversion
// of the family carries it (legacy rope keys, as mlx-lm writes them).
func (d FamilyDims) Config() map[string]any {
	c := map[string]any{
		"model_type":              d.Family,
		"vocab_size":              d.Vocab,
		"hidden_size":             d.Hidden,
		"intermediate_size":       d.Intermediate,
		"num_hidden_layers":       d.Layers,
		"num_attention_heads":     d.Heads,
		"num_key_value_heads":     d.KVHeads,
		"max_position_embeddings": d.MaxPosition,
		"tie_word_embeddings":     d.Tied,
		"bos_token_id":            2,
		"eos_token_id":            []int{1, 106},
		"pad_token_id":            0,
		"torch_dtype":             "bfloat16",
	}
	switch d.Family {
	case "gemma3_text":
		c["head_dim"] = d.HeadDim
		c["query_pre_attn_scalar"] = d.HeadDim
		c["sliding_window"] = d.Window
		c["sliding_window_pattern"] = d.Pattern
		c["rope_theta"] = 1e6
		c["rope_local_base_freq"] = 1e4
		c["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": 8.0}
		c["rms_norm_eps"] = 1e-6
		c["hidden_activation"] = "gelu_pytorch_tanh"
	case "llama":
		c["head_dim"] = d.HeadDim
		c["hidden_act"] = "silu"
		c["rms_norm_eps"] = 1e-5
		c["rope_theta"] = 500000.0
		c["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
			"high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
	case "qwen3":
		c["head_dim"] = d.HeadDim
		c["hidden_act"] = "silu"
		c["rms_norm_eps"] = 1e-6
		c["rope_theta"] = 1e6
		c["use_sliding_window"] = false
	case "olmo3":
		c["head_dim"] = d.HeadDim
		c["hidden_act"] = "silu"
		c["rms_norm_eps"] = 1e-6
		c["rope_theta"] = 500000.0
		c["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
			"beta_fast": 32, "beta_slow": 1, "attention_factor": 1.2079441541679836}
		c["sliding_window"] = d.Window
		c["layer_types"] = d.layerTypes()
	case "cohere2":
		c["hidden_act"] = "silu"
		c["layer_norm_eps"] = 1e-5
		c["rope_theta"] = 50000.0
		c["sliding_window"] = d.Window
		c["sliding_window_pattern"] = d.Pattern
		c["logit_scale"] = 0.25
	}
	return c
}

// familySpecs lists the checkpoint's tensors in mlx-lm naming ("model.").
func (b *builder) familySpecs(d FamilyDims) error {
	const p = "model."
	H := d.Hidden
	qw, kw := d.Heads*d.HeadDim, d.KVHeads*d.HeadDim
	// Gemma stores zero-centred norm weights (applied as 1 + w).
	normCenter := float32(1)
	if d.Family == "gemma3_text" {
		normCenter = 0
	}
	norm := func(name string, n int) { b.vector(name+".weight", normCenter, 0.1, n) }
	if err := b.matrix(p+"embed_tokens", d.Vocab, H); err != nil {
		return err
	}
	if !d.Tied {
		if err := b.matrix("lm_head", d.Vocab, H); err != nil {
			return err
		}
	}
	norm(p+"norm", H)
	for i := 0; i < d.Layers; i++ {
		l := fmt.Sprintf("%slayers.%d.", p, i)
		for _, m := range []struct {
			path    string
			out, in int
		}{
			{"self_attn.q_proj", qw, H}, {"self_attn.k_proj", kw, H}, {"self_attn.v_proj", kw, H}, {"self_attn.o_proj", H, qw},
			{"mlp.gate_proj", d.Intermediate, H}, {"mlp.up_proj", d.Intermediate, H}, {"mlp.down_proj", H, d.Intermediate},
		} {
			if err := b.matrix(l+m.path, m.out, m.in); err != nil {
				return err
			}
		}
		switch d.Family {
		case "gemma3_text":
			for _, n := range []string{"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"} {
				norm(l+n, H)
			}
			norm(l+"self_attn.q_norm", d.HeadDim)
			norm(l+"self_attn.k_norm", d.HeadDim)
		case "llama":
			norm(l+"input_layernorm", H)
			norm(l+"post_attention_layernorm", H)
		case "qwen3":
			norm(l+"input_layernorm", H)
			norm(l+"post_attention_layernorm", H)
			norm(l+"self_attn.q_norm", d.HeadDim)
			norm(l+"self_attn.k_norm", d.HeadDim)
		case "olmo3":
			norm(l+"post_attention_layernorm", H)
			norm(l+"post_feedforward_layernorm", H)
			norm(l+"self_attn.q_norm", qw)
			norm(l+"self_attn.k_norm", kw)
		case "cohere2":
			norm(l+"input_layernorm", H)
		}
	}
	return nil
}

// WriteFamily writes a random checkpoint of d.Family with sizes d into dir
// (created if needed): config.json, generation_config.json (eos [1, 106],
// the tiny tokenizer's), the weights in mlx-lm naming, and the tokenizer
// files named in opt. Naming, OmitSharedKV and Towers do not apply.
func WriteFamily(dir string, d FamilyDims, opt Options) (*Result, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if opt.Towers {
		return nil, fmt.Errorf("synth: %s has no towers", d.Family)
	}
	b := &builder{opt: opt}
	if err := b.familySpecs(d); err != nil {
		return nil, err
	}
	cfg := d.Config()
	if opt.Bits != 0 {
		q := map[string]any{"group_size": opt.groupSize(), "bits": opt.Bits}
		cfg["quantization"] = q
		cfg["quantization_config"] = q
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return nil, err
	}
	gen := map[string]any{"bos_token_id": 2, "eos_token_id": []int{1, 106}, "pad_token_id": 0}
	if err := writeJSON(filepath.Join(dir, "generation_config.json"), gen); err != nil {
		return nil, err
	}
	for _, cp := range []struct{ src, name string }{{opt.TokenizerJSON, "tokenizer.json"}, {opt.TokenizerConfig, "tokenizer_config.json"}} {
		if cp.src == "" {
			continue
		}
		if err := copyFile(cp.src, filepath.Join(dir, cp.name)); err != nil {
			return nil, err
		}
	}
	files, err := WriteWeights(dir, b.specs, opt.ShardBytes, opt.Seed)
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: dir, Files: files, Tensors: len(b.specs), Quantized: b.quantized}
	for _, s := range b.specs {
		res.Bytes += s.Bytes()
	}
	return res, nil
}
