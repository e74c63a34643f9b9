package engine

import (
	"errors"
	"io"

	"mlxchat/kvcache"
	"mlxchat/models"
	"mlxchat/models/tokenizer"
	"mlxchat/tensor"
)

// Bundle is a loaded model with its tokenizer, chat template and stop
// tokens: what an Engine runs. LoadBundle builds one from a model
// directory; tests may replace Model with a wrapper.
type Bundle struct {
	Model     models.Model
	Tokenizer Tokenizer
	Template  Template
	// StopTokens end an answer: the model's end-of-sequence ids and the
	// template's end-of-turn token.
	StopTokens []int32
	Info       ModelInfo
	// Backend is what Model runs on (set by LoadBundle; nil for bundles
	// built around a wrapper). Bench reads its launch counts from it when
	// it has them (GPU backends).
	Backend tensor.Backend
}

// Close releases the model's mapped checkpoint when it holds one.
func (b *Bundle) Close() error {
	if c, ok := b.Model.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// LoadBundle loads the model in dir on backend (models.Load) with its
// tokenizer (tokenizer.json, tokenizer_config.json) and chat template
// (models.LoadText); models.Check runs the same checks without the
// weights. name is what the user asked for (shown in ModelInfo).
func LoadBundle(dir string, backend tensor.Backend, name string) (*Bundle, error) {
	m, err := models.Load(dir, backend)
	if err != nil {
		return nil, err
	}
	b, err := bundleFor(m, dir, name, backend.Name())
	if err != nil {
		if c, ok := m.(io.Closer); ok {
			c.Close()
		}
		return nil, err
	}
	b.Backend = backend
	return b, nil
}

// bundleFor loads the tokenizer and chat template of dir for m
// (models.LoadText, whose checks models.Check runs too).
func bundleFor(m models.Model, dir, name, backendName string) (*Bundle, error) {
	text, err := models.LoadText(dir, m.Config())
	if err != nil {
		return nil, err
	}
	return &Bundle{
		Model:      m,
		Tokenizer:  tokAdapter{text.Tokenizer},
		Template:   chatTemplate{text.Template},
		StopTokens: text.StopTokens,
		Info:       modelInfo(m, name, dir, backendName),
	}, nil
}

// modelInfo describes m for the status line: name, dir and backend as
// given, the rest (its load-time notes included) from the model.
func modelInfo(m models.Model, name, dir, backend string) ModelInfo {
	info := m.Config()
	return ModelInfo{
		Name:          name,
		Dir:           dir,
		ModelType:     info.ModelType,
		Backend:       backend,
		VocabSize:     info.VocabSize,
		Layers:        info.NumLayers,
		ContextLength: info.ContextLength,
		SlidingWindow: info.SlidingWindow,
		WeightBytes:   m.WeightBytes(),
		Notes:         append([]string(nil), info.Notes...),
	}
}

// tokAdapter gives a *tokenizer.Tokenizer the engine's Tokenizer shape:
// prompts are encoded without added specials (the template writes BOS).
type tokAdapter struct{ t *tokenizer.Tokenizer }

func (a tokAdapter) Encode(text string) ([]int32, error) { return a.t.Encode(text, false), nil }

func (a tokAdapter) NewStream() StreamDecoder { return tokenizer.NewStreamDecoder(a.t) }

// Decode returns the text of ids, special tokens written out.
func (a tokAdapter) Decode(ids []int32) string { return a.t.Decode(ids) }

// IsSpecial reports the tokenizer.json added tokens marked special.
func (a tokAdapter) IsSpecial(id int32) bool { return a.t.IsSpecial(id) }

// New returns an engine for a loaded model with its tokenizer and chat
// template; stop tokens come from the model (and opts.StopTokens).
func New(model models.Model, tok Tokenizer, tmpl Template, opts Options) (*Engine, error) {
	return FromBundle(&Bundle{
		Model:      model,
		Tokenizer:  tok,
		Template:   tmpl,
		StopTokens: model.Config().StopIDs,
		Info:       modelInfo(model, opts.Info.Name, opts.Info.Dir, opts.Info.Backend),
	}, opts)
}

// newLM makes a model+cache adapter with a fresh cache.
func (b *Bundle) newLM() (lm, error) {
	if b.Model == nil {
		return nil, errors.New("bundle has no model")
	}
	return newModelLM(b.Model, kvcache.DefaultOptions())
}

func newWorker(b *Bundle, opts Options) (*worker, error) {
	m, err := b.newLM()
	if err != nil {
		return nil, err
	}
	return newWorkerLM(m, b.Tokenizer, b.Template, b.StopTokens, b.Info, opts)
}
