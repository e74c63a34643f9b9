package synth

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"mlxchat/tensor"
)

// Families are the model_type values WriteFamily writes (besides gemma3n,
// which WriteGemma3n writes). gemma3 is the multimodal Gemma 3 layout
// (language_model.model.* text weights next to a vision tower).
var Families = []string{"gemma3_text", "gemma3", "llama", "qwen3", "olmo3", "cohere2"}

// SpecialIDs are the token ids config.json (and generation_config.json)
// name.
type SpecialIDs struct {
	BOS int   // bos_token_id; -1: not written
	Pad int   // pad_token_id; -1: not written
	EOS []int // eos_token_id: one id is written as a number, more as a list
}

// GemmaIDs are the ids of the generated Gemma tokenizer (GemmaTokenizer):
// bos 2, pad 0, eos [1, 106] (<eos>, <end_of_turn>).
func GemmaIDs() SpecialIDs {
	return SpecialIDs{BOS: GemmaBOSID, Pad: GemmaPadID, EOS: []int{GemmaEOSID, GemmaEndOfTurnID}}
}

// VisionDims are the sizes of the SigLIP vision tower of a multimodal
// Gemma 3 checkpoint.
type VisionDims struct {
	Hidden       int // hidden_size
	Intermediate int // intermediate_size
	Layers       int // num_hidden_layers
	Heads        int // num_attention_heads
	Patch        int // patch_size
	Image        int // image_size (Image/Patch patches per side)
	Tokens       int // mm_tokens_per_image (a square; its side divides Image/Patch)
}

// FamilyDims are the sizes of a decoder-only checkpoint of one family.
type FamilyDims struct {
	Family       string // model_type: one of Families
	Vocab        int    // vocab_size (embedding rows)
	Hidden       int    // hidden_size
	Intermediate int    // intermediate_size
	Layers       int    // num_hidden_layers
	Heads        int    // num_attention_heads
	KVHeads      int    // num_key_value_heads
	HeadDim      int    // head_dim (cohere2: must be Hidden/Heads)
	Window       int    // sliding_window (gemma3_text, gemma3, olmo3, cohere2)
	Pattern      int    // every Pattern-th layer is global (sliding families)
	Tied         bool   // tie_word_embeddings
	MaxPosition  int    // max_position_embeddings
	// IDs are the special token ids of config.json; they must match the
	// tokenizer the checkpoint gets (GemmaIDs for the generated one, the
	// family's own, FamilyIDs, for its real tokenizer).
	IDs SpecialIDs
	// Vision is the vision tower of the multimodal gemma3 layout (nil for
	// every other family).
	Vision *VisionDims
}

// family is one model_type's checkpoint layout: the real mlx-community
// repository its full size follows, config.json's keys as that repository
// has them, the norms each layer stores and how the converter stored the
// weights. The per-family files (llama.go, qwen3.go, gemma3.go, olmo3.go,
// cohere2.go) fill it in and say where each fact came from.
type family struct {
	// repo is the mlx-community repository the full layout follows.
	repo string
	// full are the repository's sizes and ids.
	full FamilyDims
	// ids are the family's real special token ids (its own tokenizer's).
	ids SpecialIDs
	// config returns config.json for d, without the quantization block.
	config func(d FamilyDims) map[string]any
	// generation returns generation_config.json for d; nil when the
	// repository has none.
	generation func(d FamilyDims) map[string]any
	// layerNorms adds, through norm, the norm weights of the layer whose
	// names start with l (the attention and MLP matrices are common to
	// all).
	layerNorms func(norm func(name string, n int), d FamilyDims, l string)
	// zeroCentred: norm weights are stored as w and applied as 1 + w.
	zeroCentred bool
	// tiedHead: the converter also stores lm_head (a quantized copy of the
	// embedding) when the embedding is tied.
	tiedHead bool
	// stored is the dtype the converter gave unquantized tensors and the
	// quantization scales and biases.
	stored tensor.DType
	// quantMode: the quantization block names "mode": "affine".
	quantMode bool
	// quantConfig: the quantization block is repeated as
	// "quantization_config".
	quantConfig bool
}

// familyOf returns the layout of model_type name.
func familyOf(name string) (family, error) {
	switch name {
	case "llama":
		return llamaFamily(), nil
	case "qwen3":
		return qwen3Family(), nil
	case "gemma3_text":
		return gemma3TextFamily(), nil
	case "gemma3":
		return gemma3Family(), nil
	case "olmo3":
		return olmo3Family(), nil
	case "cohere2":
		return cohere2Family(), nil
	}
	return family{}, fmt.Errorf("synth: family %q not supported (want one of %q)", name, Families)
}

// FamilyRepo returns the mlx-community repository whose layout FullFamily
// follows.
func FamilyRepo(name string) (string, error) {
	f, err := familyOf(name)
	return f.repo, err
}

// FamilyIDs returns the family's own special token ids (those of its real
// tokenizer), for a checkpoint that gets the family's tokenizer.json.
func FamilyIDs(name string) (SpecialIDs, error) {
	f, err := familyOf(name)
	return f.ids, err
}

// StoredDType returns the dtype in which the converter of the family's
// mlx-community repository stored unquantized tensors and quantization
// scales and biases (F16 for conversions made before mlx-lm started to
// keep the checkpoint's torch_dtype in April 2025).
func StoredDType(name string) (tensor.DType, error) {
	f, err := familyOf(name)
	return f.stored, err
}

// FullFamily returns the sizes of the family's mlx-community 4-bit
// repository (FamilyRepo), with its real special token ids.
func FullFamily(name string) (FamilyDims, error) {
	f, err := familyOf(name)
	if err != nil {
		return FamilyDims{}, err
	}
	d := f.full
	if d.Vision != nil {
		v := *d.Vision
		d.Vision = &v
	}
	d.IDs.EOS = slices.Clone(d.IDs.EOS)
	return d, d.Validate()
}

// TinyFamily returns a small configuration of family for tests: 512
// tokens (the generated tokenizer's ids, GemmaIDs), hidden 128, 4 layers,
// 4 heads over 2 KV heads of 32, every matrix input a multiple of 64 so 4-
// and 8-bit quantization applies; sliding families get window 8 with every
// second layer global, so a global layer follows a sliding one. The
// multimodal gemma3 layout gets a one-layer vision tower whose MLP output
// projection has an input width that is not a multiple of 64 (it stays
// dense, as the real tower's does).
func TinyFamily(name string) (FamilyDims, error) {
	f, err := familyOf(name)
	if err != nil {
		return FamilyDims{}, err
	}
	d := FamilyDims{
		Family: name, Vocab: 512, Hidden: 128, Intermediate: 256, Layers: 4,
		Heads: 4, KVHeads: 2, HeadDim: 32, MaxPosition: 4096, IDs: GemmaIDs(),
		Tied: f.full.Tied,
	}
	if f.full.Window > 0 {
		d.Window, d.Pattern = 8, 2
	}
	if name == "gemma3" {
		d.Vision = &VisionDims{Hidden: 64, Intermediate: 80, Layers: 1, Heads: 2, Patch: 4, Image: 16, Tokens: 4}
	}
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
	for _, id := range append([]int{d.IDs.BOS, d.IDs.Pad}, d.IDs.EOS...) {
		if id >= d.Vocab {
			return fmt.Errorf("synth %s dims: special token id %d is outside the vocabulary of %d", d.Family, id, d.Vocab)
		}
	}
	if len(d.IDs.EOS) == 0 {
		return fmt.Errorf("synth %s dims: no eos_token_id", d.Family)
	}
	if (d.Family == "gemma3") != (d.Vision != nil) {
		return fmt.Errorf("synth %s dims: a vision tower goes with the multimodal gemma3 layout only", d.Family)
	}
	if v := d.Vision; v != nil {
		side := 0
		for side*side < v.Tokens {
			side++
		}
		if v.Hidden <= 0 || v.Intermediate <= 0 || v.Layers <= 0 || v.Heads <= 0 || v.Hidden%v.Heads != 0 ||
			v.Patch <= 0 || v.Image%v.Patch != 0 || side*side != v.Tokens || (v.Image/v.Patch)%side != 0 {
			return fmt.Errorf("synth gemma3 dims: bad vision tower %+v", *v)
		}
	}
	return nil
}

func (d FamilyDims) sliding() bool { return d.Window > 0 || d.Pattern > 0 }

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

// setIDs writes d.IDs into c as bos_token_id, pad_token_id, eos_token_id.
func (d FamilyDims) setIDs(c map[string]any) {
	if d.IDs.BOS >= 0 {
		c["bos_token_id"] = d.IDs.BOS
	}
	if d.IDs.Pad >= 0 {
		c["pad_token_id"] = d.IDs.Pad
	}
	if len(d.IDs.EOS) == 1 {
		c["eos_token_id"] = d.IDs.EOS[0]
	} else {
		c["eos_token_id"] = slices.Clone(d.IDs.EOS)
	}
}

// Config returns config.json of a checkpoint with sizes d, with the keys
// the family's mlx-community repository has (without the quantization
// block, which depends on the options).
func (d FamilyDims) Config() (map[string]any, error) {
	f, err := familyOf(d.Family)
	if err != nil {
		return nil, err
	}
	return f.config(d), nil
}

// textPrefix is the prefix of the decoder's tensor names and head the name
// of its output projection.
func (d FamilyDims) textPrefix() (prefix, head string) {
	if d.Vision != nil {
		return "language_model.model.", "language_model.lm_head"
	}
	return "model.", "lm_head"
}

// familySpecs lists the checkpoint's tensors.
func (b *builder) familySpecs(f family, d FamilyDims) error {
	p, head := d.textPrefix()
	H := d.Hidden
	qw, kw := d.Heads*d.HeadDim, d.KVHeads*d.HeadDim
	if err := b.matrix(p+"embed_tokens", d.Vocab, H); err != nil {
		return err
	}
	if !d.Tied || f.tiedHead {
		if err := b.matrix(head, d.Vocab, H); err != nil {
			return err
		}
	}
	norm := func(name string, n int) { b.norm(f, name, n) }
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
		f.layerNorms(norm, d, l)
	}
	if d.Vision != nil {
		return b.siglipSpecs(*d.Vision, H)
	}
	return nil
}

// norm adds a norm weight of n values: around 1, or around 0 for
// zero-centred families.
func (b *builder) norm(f family, name string, n int) {
	center := float32(1)
	if f.zeroCentred {
		center = 0
	}
	b.vector(name+".weight", center, 0.1, n)
}

// FamilySpecs returns the tensors WriteFamily would write, without data,
// for tests that compare layouts.
func FamilySpecs(d FamilyDims, opt Options) ([]TensorSpec, error) {
	f, err := familyOf(d.Family)
	if err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	opt.ExactQuant = false
	if err := opt.validate(); err != nil {
		return nil, err
	}
	b := &builder{opt: opt}
	if err := b.familySpecs(f, d); err != nil {
		return nil, err
	}
	return b.specs, nil
}

// WriteFamily writes a random checkpoint of d.Family with sizes d into dir
// (created if needed): config.json with the quantization block of opt,
// generation_config.json when the family's repository has one, the
// weights, and the tokenizer files named in opt (or, with
// GenerateTokenizer, the generated Gemma tokenizer of d.Vocab ids).
// Naming, OmitSharedKV and Towers do not apply.
func WriteFamily(dir string, d FamilyDims, opt Options) (*Result, error) {
	f, err := familyOf(d.Family)
	if err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if opt.Towers || opt.OmitSharedKV || opt.Naming != NamingMLXVLM {
		return nil, fmt.Errorf("synth: %s takes no -towers, -omit-shared-kv or -naming (its layout is fixed)", d.Family)
	}
	b := &builder{opt: opt}
	if err := b.familySpecs(f, d); err != nil {
		return nil, err
	}
	cfg := f.config(d)
	if opt.Bits != 0 {
		q := map[string]any{"group_size": opt.groupSize(), "bits": opt.Bits}
		if f.quantMode {
			q["mode"] = "affine"
		}
		cfg["quantization"] = q
		if f.quantConfig {
			cfg["quantization_config"] = q
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return nil, err
	}
	if f.generation != nil {
		if err := writeJSON(filepath.Join(dir, "generation_config.json"), f.generation(d)); err != nil {
			return nil, err
		}
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
