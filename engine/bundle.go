package engine

// Bundle is a loaded model with its tokenizer, chat template and stop
// tokens, ready for FromBundle or returned by a Loader.
//
// Interim: it wraps the engine's internal model interface until the models
// package (models.Model, models.Load) lands; LoadBundle then builds it from
// a model directory.
type Bundle struct {
	lm    lm
	Tok   Tokenizer
	Tmpl  Template
	Stops []int32
	Info  ModelInfo
}

func newWorker(b *Bundle, opts Options) (*worker, error) {
	return newWorkerLM(b.lm, b.Tok, b.Tmpl, b.Stops, b.Info, opts)
}

func (b *Bundle) newLM() (lm, error) { return b.lm, nil }
