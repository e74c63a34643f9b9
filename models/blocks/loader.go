package blocks

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"mlxchat/kvcache"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// TextPrefixes are the tensor-name prefixes of a language model: transformers
// >= 4.52 multimodal saves, mlx-vlm conversions, text-only models, bare.
var TextPrefixes = []string{"model.language_model.", "language_model.model.", "model.", ""}

// Layer returns the weights of decoder layer i (prefix "layers.i.").
func (w *Weights) Layer(i int) *Weights {
	return &Weights{CK: w.CK, Prefix: fmt.Sprintf("%slayers.%d.", w.Prefix, i)}
}

// QKNorm says how attention normalizes queries and keys.
type QKNorm uint8

const (
	// NoQKNorm: no q/k norm (Llama, Cohere2).
	NoQKNorm QKNorm = iota
	// PerHeadQKNorm: RMSNorm over each head (Gemma 3, Qwen3).
	PerHeadQKNorm
	// FullWidthQKNorm: RMSNorm over the whole projection (OLMo 2/3).
	FullWidthQKNorm
)

// AttnOptions selects the variant of LoadAttention.
type AttnOptions struct {
	// Bias loads q/k/v/o biases (attention_bias).
	Bias bool
	// QKNorm is the q/k norm mode.
	QKNorm QKNorm
	// OnePlus stores q/k norm weights zero-centred (Gemma): 1 + w is
	// precomputed.
	OnePlus bool
	// Eps is the q/k norm epsilon.
	Eps float32
}

// LoadAttention loads self_attn.{q,k,v,o}_proj (and the norms and biases
// opts asks for) of decoder layer i, whose weights are lw. Rope and Scale
// are left for the caller.
func LoadAttention(lw *Weights, i int, s Sizes, o AttnOptions) (Attention, error) {
	a := Attention{Layer: i, Heads: s.Heads, KVHeads: s.KVHeads, HeadDim: s.HeadDim, Eps: o.Eps, FullWidthQKNorm: o.QKNorm == FullWidthQKNorm}
	qw, kw := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	var err error
	lin := func(m **tensor.Matrix, b **tensor.Tensor, path string, out, in int) {
		if err == nil {
			*m, *b, err = lw.Linear(path, out, in, o.Bias)
		}
	}
	lin(&a.Q, &a.QBias, "self_attn.q_proj", qw, s.Hidden)
	lin(&a.K, &a.KBias, "self_attn.k_proj", kw, s.Hidden)
	lin(&a.V, &a.VBias, "self_attn.v_proj", kw, s.Hidden)
	lin(&a.O, &a.OBias, "self_attn.o_proj", s.Hidden, qw)
	if err != nil {
		return a, err
	}
	if o.QKNorm != NoQKNorm {
		qn, kn := s.HeadDim, s.HeadDim
		if o.QKNorm == FullWidthQKNorm {
			qn, kn = qw, kw
		}
		load := lw.Norm
		if o.OnePlus {
			load = lw.OnePlus
		}
		if a.QNorm, err = load("self_attn.q_norm.weight", qn); err != nil {
			return a, err
		}
		if a.KNorm, err = load("self_attn.k_norm.weight", kn); err != nil {
			return a, err
		}
	}
	return a, nil
}

// LoadMLP loads mlp.{gate,up,down}_proj (with biases when bias is set) of
// decoder layer i.
func LoadMLP(lw *Weights, i, hidden, inter int, act Activation, bias bool) (MLP, error) {
	m := MLP{Layer: i, Act: act}
	var err error
	if m.Gate, m.GateBias, err = lw.Linear("mlp.gate_proj", inter, hidden, bias); err != nil {
		return m, err
	}
	if m.Up, m.UpBias, err = lw.Linear("mlp.up_proj", inter, hidden, bias); err != nil {
		return m, err
	}
	if m.Down, m.DownBias, err = lw.Linear("mlp.down_proj", hidden, inter, bias); err != nil {
		return m, err
	}
	return m, nil
}

// LoadEmbedding loads embed_tokens (dense or quantized) and checks it is
// [vocab, hidden]; vocab is the config's vocab_size, or 0 when the config
// does not say (the embedding's rows then give it).
func LoadEmbedding(w *Weights, vocab, hidden int) (*tensor.Matrix, error) {
	m, err := w.CK.Matrix(w.Prefix + "embed_tokens")
	if err != nil {
		return nil, err
	}
	if m.In != hidden || (vocab > 0 && m.Out != vocab) {
		want := fmt.Sprintf("%dx%d", vocab, hidden)
		if vocab <= 0 {
			want = fmt.Sprintf("?x%d", hidden)
		}
		return nil, fmt.Errorf("model directory %s: %sembed_tokens is a %dx%d matrix, want %s (vocab_size x hidden_size in %s)", w.CK.Dir, w.Prefix, m.Out, m.In, want, w.CK.Config.Path)
	}
	return m, nil
}

// LoadHead returns lm_head, or embed itself when the model ties them: when
// tie is set, or when the checkpoint has no lm_head (mlx-lm drops a tied
// head when converting). The head is looked up next to the text model
// (prefix without its trailing "model.") and at the top level.
func LoadHead(w *Weights, embed *tensor.Matrix, tie bool) (*tensor.Matrix, error) {
	if tie {
		return embed, nil
	}
	var cands []string
	if base, ok := strings.CutSuffix(w.Prefix, "model."); ok {
		cands = append(cands, base+"lm_head")
	}
	cands = append(cands, "lm_head")
	for _, c := range cands {
		if w.CK.Has(c + ".weight") {
			return w.CK.MatrixShape(c, embed.Out, embed.In)
		}
	}
	return embed, nil
}

// InfoOptions are the settings NewInfo turns into an Info.
type InfoOptions struct {
	// ModelType is config.json's model_type.
	ModelType string
	// Sizes are the model's sizes (Vocab is the embedding's rows).
	Sizes Sizes
	// Sliding marks the sliding-window layers; Window is their window.
	Sliding []bool
	Window  int
	// BOS is the beginning-of-sequence id (-1: none).
	BOS int
	// DefaultStops are used when neither generation_config.json nor
	// config.json names an eos_token_id.
	DefaultStops []int
	// Quantization describes the weights (Describe of a typical matrix).
	Quantization string
}

// NewInfo builds the Info of a decoder: stop ids from
// generation_config.json, else config.json (top level, then text_config),
// else DefaultStops; max_position_embeddings as the context length; one
// cache layer per model layer.
func NewInfo(ck *checkpoint.Checkpoint, text *checkpoint.Config, o InfoOptions) (Info, error) {
	stops, err := ck.StopTokenIDs()
	if err != nil {
		return Info{}, err
	}
	if len(stops) == 0 {
		stops = o.DefaultStops
	}
	ctx, err := IntInOr(text, "max_position_embeddings", 0, 1, checkpoint.MaxPositions)
	if err != nil {
		return Info{}, err
	}
	info := Info{
		ModelType:     o.ModelType,
		VocabSize:     o.Sizes.Vocab,
		HiddenSize:    o.Sizes.Hidden,
		NumLayers:     o.Sizes.Layers,
		ContextLength: ctx,
		BOSID:         int32(o.BOS),
		Quantization:  o.Quantization,
	}
	if AnySliding(o.Sliding) {
		info.SlidingWindow = o.Window
	}
	for _, s := range stops {
		if s < 0 || s > math.MaxInt32 {
			return Info{}, fmt.Errorf("%s: eos_token_id %d is not a token id", ck.Dir, s)
		}
		info.StopIDs = append(info.StopIDs, int32(s))
	}
	for i := 0; i < o.Sizes.Layers; i++ {
		spec := kvcache.LayerSpec{KVHeads: o.Sizes.KVHeads, HeadDim: o.Sizes.HeadDim, SharedFrom: -1}
		if o.Sliding[i] {
			spec.Window = o.Window
		}
		info.Layers = append(info.Layers, spec)
	}
	return info, nil
}

// BOS reads bos_token_id from the text config, then the top level, then
// generation_config.json, with def when none names one.
func BOS(ck *checkpoint.Checkpoint, text *checkpoint.Config, def, vocab int) (int, error) {
	for _, c := range []*checkpoint.Config{text, ck.Config} {
		if c.Has("bos_token_id") {
			return TokenID(c, "bos_token_id", def, vocab)
		}
	}
	if g := ck.Generation; g != nil && g.Config.Has("bos_token_id") {
		return TokenID(g.Config, "bos_token_id", def, vocab)
	}
	return def, nil
}

// Tied reads tie_word_embeddings (def when absent) from the text config,
// then the top level.
func Tied(ck *checkpoint.Checkpoint, text *checkpoint.Config, def bool) (bool, error) {
	for _, c := range []*checkpoint.Config{text, ck.Config} {
		if c.Has("tie_word_embeddings") {
			return c.Bool("tie_word_embeddings")
		}
	}
	return def, nil
}

// MapWeights offers ck's file mappings to be when it is a
// tensor.WeightMapper (Metal reads them in place, the CPU backend copies
// the matrices it multiplies out of them) and ck holds more than headers.
func MapWeights(ck *checkpoint.Checkpoint, be tensor.Backend) error {
	wm, ok := be.(tensor.WeightMapper)
	if !ok || ck.HeadersOnly() {
		return nil
	}
	if err := ck.MapWeights(wm); err != nil {
		return fmt.Errorf("loading %s: %w", filepath.Clean(ck.Dir), err)
	}
	return nil
}

// Open opens the checkpoint in dir and builds a model from it with
// newModel, which owns the checkpoint from then on; when newModel fails,
// the checkpoint is closed before the error is returned. Every family's
// Load is this call with its own New.
func Open[M any](dir string, be tensor.Backend, newModel func(*checkpoint.Checkpoint, tensor.Backend) (M, error)) (M, error) {
	ck, err := checkpoint.Open(dir)
	if err != nil {
		var zero M
		return zero, err
	}
	if err := MapWeights(ck, be); err != nil {
		ck.Close()
		var zero M
		return zero, err
	}
	m, err := newModel(ck, be)
	if err != nil {
		ck.Close()
		var zero M
		return zero, err
	}
	return m, nil
}

// TextStart is where a text family's loader begins: its decoder with the
// embedding and head loaded, the weights at the text tensors' prefix, and
// whether the head is tied to the embedding.
type TextStart struct {
	Decoder *Decoder
	Weights *Weights
	Tied    bool
}

// StartText finds the text tensors' prefix (one of TextPrefixes), creates
// family's decoder on be and loads its embedding (vocab x hidden from s)
// and head; tie_word_embeddings (text config, then the top level)
// defaults to tieDefault.
func StartText(family string, ck *checkpoint.Checkpoint, be tensor.Backend, text *checkpoint.Config, s Sizes, tieDefault bool) (TextStart, error) {
	prefix, err := FindPrefix(ck, "embed_tokens.weight", TextPrefixes...)
	if err != nil {
		return TextStart{}, err
	}
	st := TextStart{Weights: &Weights{CK: ck, Prefix: prefix}, Decoder: NewDecoder(family, ck, be)}
	d := st.Decoder
	if d.Embed, err = LoadEmbedding(st.Weights, s.Vocab, s.Hidden); err != nil {
		return TextStart{}, err
	}
	if st.Tied, err = Tied(ck, text, tieDefault); err != nil {
		return TextStart{}, err
	}
	if d.Head, err = LoadHead(st.Weights, d.Embed, st.Tied); err != nil {
		return TextStart{}, err
	}
	return st, nil
}
