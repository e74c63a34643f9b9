package gemma3n

import (
	"fmt"
	"math"
	"sync"

	"mlxchat/kvcache"
	"mlxchat/models/blocks"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// ModelTypes are the config.json model_type values this package loads.
var ModelTypes = []string{"gemma3n", "gemma3n_text"}

// prefixes are the tensor-name prefixes of the text model: mlx-lm and
// transformers, mlx-vlm (mlx-community uploads), and a bare text model.
var prefixes = []string{"model.language_model.", "language_model.model.", "model.", ""}

// magnitudeEps is transformers' floor on the mean square in AltUp's
// magnitude matching.
const magnitudeEps = 1e-5

// consts are the scalar multipliers of the forward pass, rounded to the
// checkpoint's compute dtype as MLX rounds Python scalars.
type consts struct {
	embedScale    float32 // sqrt(hidden)
	pleScale      float32 // sqrt(per-layer hidden)
	pleProjScale  float32 // hidden^-0.5
	invSqrt2      float32 // 2^-0.5
	routerScale   float32 // 1/hidden
	sparsityStd   []float32
	streamAverage float32 // 1/streams
}

// layer holds one decoder layer's weights.
type layer struct {
	idx        int
	attn       blocks.Attention
	mlp        blocks.MLP
	inputNorm  *blocks.Norm
	postAttn   *blocks.Norm
	preFF      *blocks.Norm
	postFF     *blocks.Norm
	routerNorm *blocks.Norm
	router     *tensor.Matrix // modality_router [streams, hidden]
	predCoefs  *tensor.Matrix // prediction_coefs, clipped, F32 [S*S, S]
	corrCoefs  *tensor.Matrix // correction_coefs, clipped, F32 [S, S]
	outScale   *tensor.Tensor // correct_output_scale, F32 [1, hidden]; nil when unused
	laurelL    *tensor.Matrix
	laurelR    *tensor.Matrix
	laurelNorm *blocks.Norm
	pleGate    *tensor.Matrix // per_layer_input_gate [P, hidden]
	pleProj    *tensor.Matrix // per_layer_projection [hidden, P]
	pleNorm    *blocks.Norm   // post_per_layer_input_norm
}

// Model is a loaded Gemma 3n text model. Forward calls are serialized; a
// Model may be shared by goroutines but runs one forward pass at a time.
type Model struct {
	cfg  *Config
	info blocks.Info
	be   tensor.Backend
	ops  tensor.StreamOps
	ck   *checkpoint.Checkpoint
	c    consts
	eps  float32

	embed       *tensor.Matrix // embed_tokens [vocab, hidden], also the tied lm_head
	pleEmbed    *tensor.Matrix // embed_tokens_per_layer [vocabPerLayer, layers*P]
	pleModel    *tensor.Matrix // per_layer_model_projection [layers*P, hidden]
	pleProjNorm *blocks.Norm   // per_layer_projection_norm [P]
	altupProj   []*tensor.Matrix
	altupUnemb  []*tensor.Matrix
	finalNorm   *blocks.Norm
	ropeGlobal  *tensor.Rotary // full-attention layers (rope_theta)
	ropeLocal   *tensor.Rotary // sliding layers (rope_local_base_freq)
	layers      []layer
	identity    *tensor.Tensor // [1, S*S] flattened identity, added to prediction coefficients
	ones        *tensor.Tensor // [1, S], added to correction coefficients

	weightBytes int64

	// trace, when set (tests), sees every layer's output streams [S, n, H]
	// after the backend has synced.
	trace func(layer int, x *tensor.Tensor)

	mu      sync.Mutex
	scratch *blocks.Arena // buffers living for a whole forward pass
	perLay  *blocks.Arena // buffers of one layer
}

// Load opens the checkpoint in dir and builds the model on be.
func Load(dir string, be tensor.Backend) (*Model, error) { return blocks.Open(dir, be, New) }

// New builds the model from an opened checkpoint, which it then owns
// (Close closes it). Weights stay in the checkpoint's mapping; only small
// parameters (AltUp coefficients and output scales) are copied.
func New(ck *checkpoint.Checkpoint, be tensor.Backend) (*Model, error) {
	ops, ok := be.(tensor.StreamOps)
	if !ok {
		return nil, fmt.Errorf("gemma3n: backend %s does not implement tensor.StreamOps (AltUp and activation sparsity)", be.Name())
	}
	cfg, err := ParseConfig(ck.Config)
	if err != nil {
		return nil, err
	}
	known := false
	for _, t := range ModelTypes {
		known = known || t == cfg.ModelType
	}
	if !known {
		return nil, checkpoint.UnknownModelType(ck.Config, ModelTypes)
	}
	prefix, err := blocks.FindPrefix(ck, "embed_tokens_per_layer.weight", prefixes...)
	if err != nil {
		return nil, fmt.Errorf("gemma3n: %w", err)
	}
	// Sizes from config.json must agree with the weights before anything
	// is sized from them.
	text := ck.Config.Text()
	if err := ck.CheckCount(text, "num_hidden_layers", cfg.Layers, prefix+"layers."); err != nil {
		return nil, err
	}
	if err := ck.CheckDim(text, "vocab_size", cfg.Vocab, prefix+"embed_tokens.weight", 0); err != nil {
		return nil, err
	}
	if err := ck.CheckDim(text, "vocab_size_per_layer_input", cfg.VocabPerLayer, prefix+"embed_tokens_per_layer.weight", 0); err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, be: be, ops: ops, ck: ck, eps: float32(cfg.Eps)}
	m.scratch, m.perLay = blocks.NewArena(be), blocks.NewArena(be)
	m.setConsts(blocks.ComputeDType(ck.Config))
	w := &blocks.Weights{CK: ck, Prefix: prefix}
	if err := m.loadGlobals(w); err != nil {
		return nil, fmt.Errorf("gemma3n: %w", err)
	}
	if m.ropeGlobal, err = tensor.DefaultRotary(cfg.HeadDim, cfg.RopeGlobal); err != nil {
		return nil, fmt.Errorf("gemma3n: config.json rope_theta: %w", err)
	}
	if m.ropeLocal, err = tensor.DefaultRotary(cfg.HeadDim, cfg.RopeLocal); err != nil {
		return nil, fmt.Errorf("gemma3n: config.json rope_local_base_freq: %w", err)
	}
	m.layers = make([]layer, cfg.Layers)
	shared := cfg.SharedFrom()
	for i := range m.layers {
		if err := m.loadLayer(w, i, shared[i] >= 0); err != nil {
			return nil, fmt.Errorf("gemma3n: %w", err)
		}
	}
	if err := m.buildInfo(ck); err != nil {
		return nil, err
	}
	m.weightBytes = m.countWeightBytes()
	return m, nil
}

func (m *Model) setConsts(dt tensor.DType) {
	c := m.cfg
	m.c = consts{
		embedScale:    blocks.Round(dt, math.Sqrt(float64(c.Hidden))),
		pleScale:      blocks.Round(dt, math.Sqrt(float64(c.PerLayerHidden))),
		pleProjScale:  blocks.Round(dt, 1/math.Sqrt(float64(c.Hidden))),
		invSqrt2:      blocks.Round(dt, 1/math.Sqrt2),
		routerScale:   blocks.Round(dt, 1/float64(c.Hidden)),
		streamAverage: 1 / float32(c.AltUpInputs),
		sparsityStd:   make([]float32, c.Layers),
	}
	for i, s := range c.Sparsity {
		if s > 0 {
			// the standard normal quantile of s: sqrt(2)·erfinv(2s-1)
			m.c.sparsityStd[i] = blocks.Round(dt, math.Sqrt2*math.Erfinv(2*s-1))
		}
	}
}

func (m *Model) loadGlobals(w *blocks.Weights) error {
	c := m.cfg
	S, H, P, L := c.AltUpInputs, c.Hidden, c.PerLayerHidden, c.Layers
	var err error
	if m.embed, err = w.Matrix("embed_tokens", c.Vocab, H); err != nil {
		return err
	}
	if m.pleEmbed, err = w.Matrix("embed_tokens_per_layer", c.VocabPerLayer, L*P); err != nil {
		return err
	}
	if m.pleModel, err = w.Matrix("per_layer_model_projection", L*P, H); err != nil {
		return err
	}
	if m.pleProjNorm, err = w.RMSNorm("per_layer_projection_norm", P, m.eps, false); err != nil {
		return err
	}
	if m.finalNorm, err = w.RMSNorm("norm", H, m.eps, false); err != nil {
		return err
	}
	for i := 1; i < S; i++ {
		p, err := w.Matrix(fmt.Sprintf("altup_projections.%d", i-1), H, H)
		if err != nil {
			return err
		}
		u, err := w.Matrix(fmt.Sprintf("altup_unembed_projections.%d", i-1), H, H)
		if err != nil {
			return err
		}
		m.altupProj = append(m.altupProj, p)
		m.altupUnemb = append(m.altupUnemb, u)
	}
	id := make([]float32, S*S)
	ones := make([]float32, S)
	for i := 0; i < S; i++ {
		id[i*S+i] = 1
		ones[i] = 1
	}
	if m.identity, err = tensor.FromF32(id, 1, S*S); err != nil {
		return err
	}
	m.ones, err = tensor.FromF32(ones, 1, S)
	return err
}

func (m *Model) loadLayer(w *blocks.Weights, i int, shared bool) error {
	c := m.cfg
	S, H, P, D := c.AltUpInputs, c.Hidden, c.PerLayerHidden, c.HeadDim
	l := &m.layers[i]
	l.idx = i
	lw := w.Layer(i)
	var err error
	mat := func(dst **tensor.Matrix, path string, out, in int) {
		if err == nil {
			*dst, err = lw.Matrix(path, out, in)
		}
	}
	vec := func(dst **tensor.Tensor, path string, n int) {
		if err == nil {
			*dst, err = lw.Norm(path+".weight", n)
		}
	}
	norm := func(dst **blocks.Norm, path string, n int) {
		if err == nil {
			*dst, err = lw.RMSNorm(path, n, m.eps, false)
		}
	}
	a := &l.attn
	*a = blocks.Attention{
		Layer: i, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: D,
		VNorm: true, Eps: m.eps, Scale: 1, Shared: shared,
		Rope: m.ropeGlobal,
	}
	if c.Sliding[i] {
		a.Rope = m.ropeLocal
	}
	mat(&a.Q, "self_attn.q_proj", c.Heads*D, H)
	mat(&a.O, "self_attn.o_proj", H, c.Heads*D)
	vec(&a.QNorm, "self_attn.q_norm", D)
	if !shared { // shared layers' k/v projections, when present, are unused
		mat(&a.K, "self_attn.k_proj", c.KVHeads*D, H)
		mat(&a.V, "self_attn.v_proj", c.KVHeads*D, H)
		vec(&a.KNorm, "self_attn.k_norm", D)
	}
	l.mlp = blocks.MLP{Layer: i, Sparse: c.Sparsity[i] > 0, SparsityStd: m.c.sparsityStd[i]}
	mat(&l.mlp.Gate, "mlp.gate_proj", c.Intermediate[i], H)
	mat(&l.mlp.Up, "mlp.up_proj", c.Intermediate[i], H)
	mat(&l.mlp.Down, "mlp.down_proj", H, c.Intermediate[i])
	norm(&l.inputNorm, "input_layernorm", H)
	norm(&l.postAttn, "post_attention_layernorm", H)
	norm(&l.preFF, "pre_feedforward_layernorm", H)
	norm(&l.postFF, "post_feedforward_layernorm", H)
	norm(&l.routerNorm, "altup.router_norm", H)
	mat(&l.router, "altup.modality_router", S, H)
	mat(&l.laurelL, "laurel.linear_left", c.LaurelRank, H)
	mat(&l.laurelR, "laurel.linear_right", H, c.LaurelRank)
	norm(&l.laurelNorm, "laurel.post_laurel_norm", H)
	mat(&l.pleGate, "per_layer_input_gate", P, H)
	mat(&l.pleProj, "per_layer_projection", H, P)
	norm(&l.pleNorm, "post_per_layer_input_norm", H)
	if err != nil {
		return err
	}
	clip := func(v float32) float32 {
		if lim := float32(c.AltUpCoefClip); lim > 0 {
			return min(max(v, -lim), lim)
		}
		return v
	}
	if l.predCoefs, err = lw.DenseF32("altup.prediction_coefs", S*S, S, clip); err != nil {
		return err
	}
	if l.corrCoefs, err = lw.DenseF32("altup.correction_coefs", S, S, clip); err != nil {
		return err
	}
	if c.AltUpCorrectScale {
		if l.outScale, err = lw.F32("altup.correct_output_scale", H); err != nil {
			return err
		}
		l.outScale = blocks.Reshape(l.outScale, 1, H)
	}
	return nil
}

func (m *Model) buildInfo(ck *checkpoint.Checkpoint) error {
	c := m.cfg
	stops, err := ck.StopTokenIDs()
	if err != nil {
		return fmt.Errorf("gemma3n: %w", err)
	}
	if len(stops) == 0 {
		stops = []int{1, 106} // <eos>, <end_of_turn>
	}
	info := blocks.Info{
		ModelType:     c.ModelType,
		VocabSize:     c.Vocab,
		HiddenSize:    c.Hidden,
		NumLayers:     c.Layers,
		ContextLength: c.MaxPosition,
		SlidingWindow: c.SlidingWindow,
		BOSID:         int32(c.BOS),
		Quantization:  blocks.Describe(m.layers[0].mlp.Gate),
	}
	for _, s := range stops {
		info.StopIDs = append(info.StopIDs, int32(s))
	}
	shared := c.SharedFrom()
	for i := 0; i < c.Layers; i++ {
		spec := kvcache.LayerSpec{KVHeads: c.KVHeads, HeadDim: c.HeadDim, SharedFrom: shared[i]}
		if c.Sliding[i] {
			spec.Window = c.SlidingWindow
		}
		info.Layers = append(info.Layers, spec)
	}
	m.info = info
	return nil
}

// countWeightBytes adds up what one decode token reads: every matrix
// (the whole tied embedding as lm_head included), every norm and one row
// of each embedding table; in a sparse layer on a backend that skips what
// the gate zeroes (tensor.GatedOps), only the kept share of up_proj and
// down_proj (MLP.GatedWeightBytes).
func (m *Model) countWeightBytes() int64 {
	_, gated := m.be.(tensor.GatedOps)
	n := int64(m.embed.Bytes()+m.pleModel.Bytes()) + blocks.RowBytes(m.embed) + blocks.RowBytes(m.pleEmbed)
	n += m.pleProjNorm.Bytes() + m.finalNorm.Bytes()
	for i := range m.altupProj {
		n += int64(m.altupProj[i].Bytes() + m.altupUnemb[i].Bytes())
	}
	for i := range m.layers {
		l := &m.layers[i]
		n += l.attn.WeightBytes()
		if gated {
			n += l.mlp.GatedWeightBytes(1 - m.cfg.Sparsity[i])
		} else {
			n += l.mlp.WeightBytes()
		}
		for _, mt := range []*tensor.Matrix{l.router, l.predCoefs, l.corrCoefs, l.laurelL, l.laurelR, l.pleGate, l.pleProj} {
			n += int64(mt.Bytes())
		}
		for _, nm := range []*blocks.Norm{l.inputNorm, l.postAttn, l.preFF, l.postFF, l.routerNorm, l.laurelNorm, l.pleNorm} {
			n += nm.Bytes()
		}
		if l.outScale != nil {
			n += int64(len(l.outScale.Data))
		}
	}
	return n
}

// Config returns the model's description.
func (m *Model) Config() blocks.Info { return m.info }

// TextConfig returns the parsed Gemma 3n settings.
func (m *Model) TextConfig() Config { return *m.cfg }

// WeightBytes is the number of weight bytes one decode token reads.
func (m *Model) WeightBytes() int64 { return m.weightBytes }

// NewCache returns an empty cache laid out for this model. On an
// asynchronous backend, unless opts brings its own Alloc or Copy, the
// cache's storage is backend memory (Alloc) and Append records its row
// copies there (Copy), so keys and values stay on the GPU and a forward
// pass needs one Sync, at its end.
func (m *Model) NewCache(opts kvcache.Options) (*kvcache.Cache, error) {
	return blocks.NewCache(m.be, m.info.Layers, opts, "gemma3n")
}

// Close releases the scratch buffers and unmaps the checkpoint. The model
// must not be used afterwards.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scratch.Release()
	m.perLay.Release()
	return m.ck.Close()
}
