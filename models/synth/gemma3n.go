package synth

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"mlxchat/tensor"
)

// Gemma3nDims are the sizes of a Gemma 3n text model.
type Gemma3nDims struct {
	Vocab          int // vocab_size (embed_tokens rows, logits)
	VocabPerLayer  int // vocab_size_per_layer_input
	Hidden         int // hidden_size
	PerLayerHidden int // hidden_size_per_layer_input
	Layers         int // num_hidden_layers
	Heads          int // num_attention_heads
	KVHeads        int // num_key_value_heads
	HeadDim        int // head_dim
	Intermediate   int // intermediate_size of every layer's MLP
	SlidingWindow  int // sliding_window
	KVShared       int // num_kv_shared_layers (the last ones read earlier layers' caches)
	LaurelRank     int // laurel_rank
	AltUpInputs    int // altup_num_inputs
	SparseLayers   int // the first SparseLayers layers have activation sparsity 0.95
	MaxPosition    int // max_position_embeddings
}

// TinyGemma3n returns a small Gemma 3n text configuration for tests: 10
// layers (full attention on layers 4 and 9, the others sliding with window
// 8), the last 4 layers sharing KV (6-8 read layer 5, 9 reads layer 4),
// activation sparsity on layers 0-2, and every matrix input a multiple of
// 64 so 4- and 8-bit quantization with group 32 or 64 applies.
func TinyGemma3n() Gemma3nDims {
	return Gemma3nDims{
		Vocab: 512, VocabPerLayer: 384, Hidden: 128, PerLayerHidden: 64,
		Layers: 10, Heads: 4, KVHeads: 2, HeadDim: 32, Intermediate: 256,
		SlidingWindow: 8, KVShared: 4, LaurelRank: 64, AltUpInputs: 4,
		SparseLayers: 3, MaxPosition: 4096,
	}
}

// E2BGemma3n returns the text configuration of Gemma 3n E2B (the values of
// google/gemma-3n-E2B-it, checked against testdata/gemma3n_e2b_params.json).
func E2BGemma3n() Gemma3nDims {
	return Gemma3nDims{
		Vocab: 262400, VocabPerLayer: 262144, Hidden: 2048, PerLayerHidden: 256,
		Layers: 30, Heads: 8, KVHeads: 2, HeadDim: 256, Intermediate: 8192,
		SlidingWindow: 512, KVShared: 10, LaurelRank: 64, AltUpInputs: 4,
		SparseLayers: 10, MaxPosition: 32768,
	}
}

// Validate checks that the sizes make a well-formed model.
func (d Gemma3nDims) Validate() error {
	for _, v := range []struct {
		name string
		n    int
	}{{"vocab", d.Vocab}, {"vocab_per_layer", d.VocabPerLayer}, {"hidden", d.Hidden}, {"per_layer_hidden", d.PerLayerHidden},
		{"layers", d.Layers}, {"heads", d.Heads}, {"kv_heads", d.KVHeads}, {"head_dim", d.HeadDim},
		{"intermediate", d.Intermediate}, {"sliding_window", d.SlidingWindow}, {"laurel_rank", d.LaurelRank}, {"altup_inputs", d.AltUpInputs}} {
		if v.n <= 0 {
			return fmt.Errorf("gemma3n dims: %s must be positive, got %d", v.name, v.n)
		}
	}
	if d.Heads%d.KVHeads != 0 {
		return fmt.Errorf("gemma3n dims: heads %d not a multiple of kv_heads %d", d.Heads, d.KVHeads)
	}
	if d.KVShared < 0 || d.KVShared >= d.Layers || d.SparseLayers < 0 || d.SparseLayers > d.Layers {
		return fmt.Errorf("gemma3n dims: bad kv_shared %d or sparse_layers %d for %d layers", d.KVShared, d.SparseLayers, d.Layers)
	}
	if d.VocabPerLayer > d.Vocab {
		return fmt.Errorf("gemma3n dims: vocab_per_layer %d exceeds vocab %d", d.VocabPerLayer, d.Vocab)
	}
	// Every layer type with a consumer needs a producer before the shared range.
	first := d.Layers - d.KVShared
	for _, full := range []bool{false, true} {
		prod, cons := false, false
		for i := 0; i < d.Layers; i++ {
			if d.IsFull(i) != full {
				continue
			}
			if i < first {
				prod = true
			} else {
				cons = true
			}
		}
		if cons && !prod {
			return fmt.Errorf("gemma3n dims: KV-shared layers of type full=%v have no earlier layer to read from", full)
		}
	}
	return nil
}

// IsFull reports whether layer i uses full (global) attention: every fifth
// layer, (i+1)%5 == 0, as in Gemma 3n.
func (d Gemma3nDims) IsFull(i int) bool { return (i+1)%5 == 0 }

// LayerTypes returns config.json's layer_types.
func (d Gemma3nDims) LayerTypes() []string {
	out := make([]string, d.Layers)
	for i := range out {
		out[i] = "sliding_attention"
		if d.IsFull(i) {
			out[i] = "full_attention"
		}
	}
	return out
}

// Naming selects the tensor-name prefix of the text model.
type Naming int

const (
	// NamingMLXVLM is mlx-vlm's layout ("language_model.model.*"), used by
	// the mlx-community Gemma 3n uploads; vision/audio towers keep
	// "vision_tower.*", "audio_tower.*", "embed_vision.*", "embed_audio.*".
	NamingMLXVLM Naming = iota
	// NamingMLXLM is mlx-lm's and transformers' layout
	// ("model.language_model.*"), text only.
	NamingMLXLM
)

// TextPrefix returns the tensor-name prefix of the text model.
func (n Naming) TextPrefix() string {
	if n == NamingMLXLM {
		return "model.language_model."
	}
	return "language_model.model."
}

// Options control what a Gemma 3n writer produces.
type Options struct {
	// Bits is the quantization width, 4 or 8; 0 writes a dense model.
	Bits int
	// GroupSize is the quantization group (32, 64 or 128); 0 means 64.
	GroupSize int
	// ScaleDType is the dtype of scales and biases; Invalid means BF16.
	ScaleDType tensor.DType
	// DenseDType is the dtype of unquantized tensors; Invalid means BF16.
	DenseDType tensor.DType
	// Seed makes the random weights reproducible.
	Seed uint64
	// Naming selects mlx-vlm (default) or mlx-lm tensor names.
	Naming Naming
	// OmitSharedKV leaves out k_proj, v_proj and k_norm of KV-shared layers,
	// as transformers >= 5 does; mlx-community uploads carry them (unused).
	OmitSharedKV bool
	// ExactQuant quantizes random float weights with tensor.QuantizeAffine
	// (slow, for small models); otherwise packed words are random bits with
	// scales and biases chosen so weights are uniform in +-sqrt(3/in).
	ExactQuant bool
	// Towers adds the vision and audio towers and their embedders from
	// testdata/gemma3n_e2b_params.json (E2B only; mlx-vlm naming only).
	Towers bool
	// ShardBytes > 0 splits the weights into shards of at most this size
	// with a model.safetensors.index.json.
	ShardBytes int64
	// TokenizerJSON, when set, is copied into the directory as
	// tokenizer.json; TokenizerConfig likewise as tokenizer_config.json.
	TokenizerJSON, TokenizerConfig string
	// ZeroData leaves every tensor's data zero without writing it (the
	// weight files are sparse where the filesystem has holes), for tests
	// that load a full-size layout without generating gigabytes; such a
	// model loads but computes nothing useful.
	ZeroData bool
	// GenerateTokenizer, when TokenizerJSON is empty, writes the generated
	// Gemma tokenizer (GemmaTokenizer, with the model's vocab_size and
	// GemmaChatTemplate) as tokenizer.json and tokenizer_config.json, so
	// the model runs in the chat as it is.
	GenerateTokenizer bool
}

func (o Options) groupSize() int {
	if o.GroupSize == 0 {
		return 64
	}
	return o.GroupSize
}

func (o Options) scaleDType() tensor.DType {
	if o.ScaleDType == tensor.Invalid {
		return tensor.BF16
	}
	return o.ScaleDType
}

func (o Options) denseDType() tensor.DType {
	if o.DenseDType == tensor.Invalid {
		return tensor.BF16
	}
	return o.DenseDType
}

func (o Options) validate() error {
	switch o.Bits {
	case 0, 4, 8:
	default:
		return fmt.Errorf("synth: bits %d not supported (want 0, 4 or 8)", o.Bits)
	}
	switch o.groupSize() {
	case 32, 64, 128:
	default:
		return fmt.Errorf("synth: group size %d not supported (want 32, 64 or 128)", o.GroupSize)
	}
	switch o.scaleDType() {
	case tensor.BF16, tensor.F16, tensor.F32:
	default:
		return fmt.Errorf("synth: scale dtype %s not supported", o.ScaleDType)
	}
	switch o.denseDType() {
	case tensor.BF16, tensor.F16, tensor.F32:
	default:
		return fmt.Errorf("synth: dense dtype %s not supported", o.DenseDType)
	}
	if o.Towers && o.Naming != NamingMLXVLM {
		return fmt.Errorf("synth: towers need mlx-vlm naming")
	}
	return nil
}

// builder accumulates tensor specs.
type builder struct {
	opt   Options
	specs []TensorSpec
	// quantized module paths, for the caller's information
	quantized []string
}

// weightSpecs returns the specs to write: as built, or with every
// tensor's data left zero under Options.ZeroData.
func (b *builder) weightSpecs() []TensorSpec {
	if !b.opt.ZeroData {
		return b.specs
	}
	out := make([]TensorSpec, len(b.specs))
	for i, s := range b.specs {
		out[i] = TensorSpec{Name: s.Name, DType: s.DType, Shape: s.Shape, Fill: Fill{Kind: FillZero}}
	}
	return out
}

// uniformBound is the half-width of a uniform distribution with standard
// deviation 1/sqrt(in): weights that keep activations at unit scale.
func uniformBound(in int) float32 { return float32(math.Sqrt(3 / float64(in))) }

// vector adds a dense 1-D or small tensor filled around center.
func (b *builder) vector(name string, center, spread float32, shape ...int) {
	b.specs = append(b.specs, TensorSpec{Name: name, DType: b.opt.denseDType(), Shape: shape,
		Fill: Fill{Kind: FillUniform, Center: center, Spread: spread}})
}

// matrix adds a linear or embedding module's weights at path: quantized
// when the options ask for it and in is a multiple of the group size (the
// rule MLX's quantizer applies), dense otherwise.
func (b *builder) matrix(path string, out, in int) error {
	bound := uniformBound(in)
	if b.opt.Bits == 0 || in%b.opt.groupSize() != 0 {
		b.vector(path+".weight", 0, bound, out, in)
		return nil
	}
	bits, g, sd := b.opt.Bits, b.opt.groupSize(), b.opt.scaleDType()
	b.quantized = append(b.quantized, path)
	if b.opt.ExactQuant {
		r := rng{mix(b.opt.Seed, hashName(path), 0xe4ac7)}
		vals := make([]float32, out*in)
		for i := range vals {
			vals[i] = bound * r.uniform()
		}
		m, err := tensor.QuantizeAffine(vals, out, in, bits, g, sd)
		if err != nil {
			return fmt.Errorf("synth: quantizing %s: %w", path, err)
		}
		b.specs = append(b.specs,
			TensorSpec{Name: path + ".weight", DType: tensor.U32, Shape: m.W.Shape, Data: m.W.Data},
			TensorSpec{Name: path + ".scales", DType: m.Scales.DType, Shape: m.Scales.Shape, Data: m.Scales.Data},
			TensorSpec{Name: path + ".biases", DType: m.Biases.DType, Shape: m.Biases.Shape, Data: m.Biases.Data})
		return nil
	}
	// Fast path: random codes q in 0..n, w = s*q + bias with bias = -s*n/2
	// spans +-bound when s = 2*bound/n; scales jitter by +-5% (so weights
	// stay within about 1.1*bound), biases are constant.
	n := float32(int(1)<<bits - 1)
	s := 2 * bound / n
	b.specs = append(b.specs,
		TensorSpec{Name: path + ".weight", DType: tensor.U32, Shape: []int{out, in * bits / 32}, Fill: Fill{Kind: FillBits}},
		TensorSpec{Name: path + ".scales", DType: sd, Shape: []int{out, in / g}, Fill: Fill{Center: s, Spread: 0.05 * s}},
		TensorSpec{Name: path + ".biases", DType: sd, Shape: []int{out, in / g}, Fill: Fill{Center: -s * n / 2}})
	return nil
}

// textSpecs lists the Gemma 3n text model's tensors.
func (b *builder) textSpecs(d Gemma3nDims) error {
	p := b.opt.Naming.TextPrefix()
	H, A := d.Hidden, d.AltUpInputs
	plAll := d.Layers * d.PerLayerHidden
	type mat struct {
		path    string
		out, in int
	}
	mats := []mat{
		{p + "embed_tokens", d.Vocab, H},
		{p + "embed_tokens_per_layer", d.VocabPerLayer, plAll},
		{p + "per_layer_model_projection", plAll, H},
	}
	for i := 1; i < A; i++ {
		mats = append(mats, mat{fmt.Sprintf("%saltup_projections.%d", p, i-1), H, H},
			mat{fmt.Sprintf("%saltup_unembed_projections.%d", p, i-1), H, H})
	}
	b.vector(p+"norm.weight", 1, 0.1, H)
	b.vector(p+"per_layer_projection_norm.weight", 1, 0.1, d.PerLayerHidden)
	first := d.Layers - d.KVShared
	for i := 0; i < d.Layers; i++ {
		l := fmt.Sprintf("%slayers.%d.", p, i)
		shared := i >= first
		mats = append(mats,
			mat{l + "self_attn.q_proj", d.Heads * d.HeadDim, H},
			mat{l + "self_attn.o_proj", H, d.Heads * d.HeadDim},
			mat{l + "mlp.gate_proj", d.Intermediate, H},
			mat{l + "mlp.up_proj", d.Intermediate, H},
			mat{l + "mlp.down_proj", H, d.Intermediate},
			mat{l + "altup.modality_router", A, H},
			mat{l + "laurel.linear_left", d.LaurelRank, H},
			mat{l + "laurel.linear_right", H, d.LaurelRank},
			mat{l + "per_layer_input_gate", d.PerLayerHidden, H},
			mat{l + "per_layer_projection", H, d.PerLayerHidden},
		)
		b.vector(l+"self_attn.q_norm.weight", 1, 0.1, d.HeadDim)
		if !shared || !b.opt.OmitSharedKV {
			mats = append(mats, mat{l + "self_attn.k_proj", d.KVHeads * d.HeadDim, H}, mat{l + "self_attn.v_proj", d.KVHeads * d.HeadDim, H})
			b.vector(l+"self_attn.k_norm.weight", 1, 0.1, d.HeadDim)
		}
		for _, n := range []string{"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
			"post_feedforward_layernorm", "altup.router_norm", "laurel.post_laurel_norm", "post_per_layer_input_norm"} {
			b.vector(l+n+".weight", 1, 0.1, H)
		}
		b.vector(l+"altup.correct_output_scale", 1, 0.1, H)
		// The AltUp coefficient matrices are tiny (in = 4) and stay dense.
		b.vector(l+"altup.correction_coefs.weight", 0, 0.1, A, A)
		b.vector(l+"altup.prediction_coefs.weight", 0, 0.1, A*A, A)
	}
	for _, m := range mats {
		if err := b.matrix(m.path, m.out, m.in); err != nil {
			return err
		}
	}
	return nil
}

// TextConfig returns the text_config object of config.json for d.
func (d Gemma3nDims) TextConfig() map[string]any {
	sparsity := make([]float64, d.Layers)
	inter := make([]int, d.Layers)
	for i := range sparsity {
		if i < d.SparseLayers {
			sparsity[i] = 0.95
		}
		inter[i] = d.Intermediate
	}
	return map[string]any{
		"model_type":                  "gemma3n_text",
		"vocab_size":                  d.Vocab,
		"vocab_size_per_layer_input":  d.VocabPerLayer,
		"hidden_size":                 d.Hidden,
		"hidden_size_per_layer_input": d.PerLayerHidden,
		"intermediate_size":           inter,
		"num_hidden_layers":           d.Layers,
		"num_attention_heads":         d.Heads,
		"num_key_value_heads":         d.KVHeads,
		"head_dim":                    d.HeadDim,
		"sliding_window":              d.SlidingWindow,
		"layer_types":                 d.LayerTypes(),
		"num_kv_shared_layers":        d.KVShared,
		"laurel_rank":                 d.LaurelRank,
		"altup_num_inputs":            d.AltUpInputs,
		"altup_active_idx":            0,
		"altup_coef_clip":             120.0,
		"altup_correct_scale":         true,
		"activation_sparsity_pattern": sparsity,
		"hidden_activation":           "gelu_pytorch_tanh",
		"rms_norm_eps":                1e-6,
		"rope_theta":                  1000000.0,
		"rope_local_base_freq":        10000.0,
		"rope_parameters": map[string]any{
			"full_attention":    map[string]any{"rope_type": "default", "rope_theta": 1000000.0},
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 10000.0},
		},
		"final_logit_softcapping": 30.0,
		"max_position_embeddings": d.MaxPosition,
		"attention_bias":          false,
		"tie_word_embeddings":     true,
		"pad_token_id":            0,
		"eos_token_id":            1,
		"bos_token_id":            2,
	}
}

// Result describes a written checkpoint.
type Result struct {
	// Dir is the model directory.
	Dir string
	// Files are the weight files written (names inside Dir).
	Files []string
	// Tensors is the number of tensors.
	Tensors int
	// Bytes is the size of all tensor data.
	Bytes int64
	// Quantized lists the module paths written quantized.
	Quantized []string
}

// WriteGemma3n writes a random Gemma 3n checkpoint with sizes d into dir
// (created if needed): config.json, generation_config.json, the weights,
// and the tokenizer files named in opt.
func WriteGemma3n(dir string, d Gemma3nDims, opt Options) (*Result, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	b := &builder{opt: opt}
	if err := b.textSpecs(d); err != nil {
		return nil, err
	}
	cfg := map[string]any{
		"model_type":          "gemma3n",
		"architectures":       []string{"Gemma3nForConditionalGeneration"},
		"text_config":         d.TextConfig(),
		"eos_token_id":        []int{1, 106},
		"pad_token_id":        0,
		"bos_token_id":        2,
		"tie_word_embeddings": true,
	}
	if opt.Towers {
		if err := b.towerSpecs(cfg); err != nil {
			return nil, err
		}
	}
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
	gen := map[string]any{"bos_token_id": 2, "eos_token_id": []int{1, 106}, "pad_token_id": 0,
		"do_sample": true, "top_k": 64, "top_p": 0.95}
	if err := writeJSON(filepath.Join(dir, "generation_config.json"), gen); err != nil {
		return nil, err
	}
	if err := writeTokenizer(dir, opt, d.Vocab); err != nil {
		return nil, err
	}
	files, err := WriteWeights(dir, b.weightSpecs(), opt.ShardBytes, opt.Seed)
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: dir, Files: files, Tensors: len(b.specs), Quantized: b.quantized}
	for _, s := range b.specs {
		res.Bytes += s.Bytes()
	}
	return res, nil
}

// Specs returns the tensors WriteGemma3n would write, without data, for
// tests that compare layouts.
func Specs(d Gemma3nDims, opt Options) ([]TensorSpec, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	opt.ExactQuant = false
	if err := opt.validate(); err != nil {
		return nil, err
	}
	b := &builder{opt: opt}
	if err := b.textSpecs(d); err != nil {
		return nil, err
	}
	if opt.Towers {
		if err := b.towerSpecs(map[string]any{}); err != nil {
			return nil, err
		}
	}
	return b.specs, nil
}

// writeTokenizer copies the tokenizer files opt names into dir or, with
// GenerateTokenizer and no TokenizerJSON, writes the generated Gemma
// tokenizer of vocab ids.
func writeTokenizer(dir string, opt Options, vocab int) error {
	for _, cp := range []struct{ src, name string }{{opt.TokenizerJSON, "tokenizer.json"}, {opt.TokenizerConfig, "tokenizer_config.json"}} {
		if cp.src == "" {
			continue
		}
		if err := copyFile(cp.src, filepath.Join(dir, cp.name)); err != nil {
			return err
		}
	}
	if !opt.GenerateTokenizer || opt.TokenizerJSON != "" {
		return nil
	}
	tok, tokCfg, err := GemmaTokenizer(vocab)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"tokenizer.json", tok}, {"tokenizer_config.json", tokCfg}} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("copying to %s: %w", dst, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copying to %s: %w", dst, err)
	}
	return nil
}

// WriteTiny writes TinyGemma3n with exact quantization (bits and group from
// opt; a zero Bits gives a dense model).
func WriteTiny(dir string, opt Options) (*Result, error) {
	opt.ExactQuant = true
	return WriteGemma3n(dir, TinyGemma3n(), opt)
}

// WriteE2B writes a full-size Gemma 3n E2B checkpoint with the layout of
// mlx-community/gemma-3n-E2B-it-4bit (4-bit, group 64, BF16 scales, vision
// and audio towers) unless opt says otherwise. About 4.5 GB with towers.
func WriteE2B(dir string, opt Options) (*Result, error) {
	return WriteGemma3n(dir, E2BGemma3n(), opt)
}

// hfToMLXVLM maps a transformers name of Gemma3nForConditionalGeneration to
// the mlx-vlm checkpoint name: "model.language_model.X" becomes
// "language_model.model.X" and the "model." of the towers and embedders is
// dropped. ok is false for names mlx-vlm does not store (lm_head, tied).
func hfToMLXVLM(name string) (string, bool) {
	switch {
	case strings.HasPrefix(name, "model.language_model."):
		return "language_model.model." + strings.TrimPrefix(name, "model.language_model."), true
	case strings.HasPrefix(name, "model."):
		return strings.TrimPrefix(name, "model."), true
	}
	return "", false
}
