package blocks

import (
	"fmt"
	"sync"

	"mlxchat/kvcache"
	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// Layer is one decoder layer: attention and a gated MLP wired by one of
// two residual templates, with optional norms (nil: absent):
//
//	sequential: h = x + PostAttn(attn(PreAttn(x))); out = h + PostMLP(mlp(PreMLP(h)))
//	parallel:   n = PreAttn(x); out = x + attn(n) + mlp(n)
//
// Pre-norm (Llama, Qwen3) sets PreAttn and PreMLP; the Gemma sandwich sets
// all four; OLMo 3 sets PostAttn and PostMLP only; Cohere2 is parallel with
// one PreAttn LayerNorm.
type Layer struct {
	Attn                               Attention
	MLP                                MLP
	PreAttn, PostAttn, PreMLP, PostMLP *Norm
	Parallel                           bool
}

// Forward writes the layer's output for x [n, hidden] into out.
func (l *Layer) Forward(be tensor.Backend, ar *Arena, cache *kvcache.Cache, out, x *tensor.Tensor) error {
	n, H := x.Rows(), x.Dim(-1)
	in := x
	if l.PreAttn != nil {
		in = ar.Get(n, H)
		if err := l.PreAttn.Forward(be, in, x); err != nil {
			return err
		}
	}
	a := ar.Get(n, H)
	if err := l.Attn.Forward(be, ar, cache, a, in); err != nil {
		return err
	}
	if l.PostAttn != nil {
		if err := l.PostAttn.Forward(be, a, a); err != nil {
			return err
		}
	}
	if l.Parallel {
		m := ar.Get(n, H)
		if err := l.MLP.Forward(be, ar, m, in); err != nil {
			return err
		}
		if err := be.Add(out, x, a); err != nil {
			return err
		}
		return be.Add(out, out, m)
	}
	h := a
	if err := be.Add(h, x, a); err != nil {
		return err
	}
	mIn := h
	if l.PreMLP != nil {
		mIn = ar.Get(n, H)
		if err := l.PreMLP.Forward(be, mIn, h); err != nil {
			return err
		}
	}
	m := ar.Get(n, H)
	if err := l.MLP.Forward(be, ar, m, mIn); err != nil {
		return err
	}
	if l.PostMLP != nil {
		if err := l.PostMLP.Forward(be, m, m); err != nil {
			return err
		}
	}
	return be.Add(out, h, m)
}

// WeightBytes is the number of weight bytes one token reads in the layer.
func (l *Layer) WeightBytes() int64 {
	return l.Attn.WeightBytes() + l.MLP.WeightBytes() + l.PreAttn.Bytes() + l.PostAttn.Bytes() + l.PreMLP.Bytes() + l.PostMLP.Bytes()
}

// Decoder is a decoder-only transformer made of Layers:
//
//	x = embed(ids)·EmbedScale → layers → Final norm → x·Headᵀ → ·LogitScale → softcap
//
// Each family package (gemma3, llama, qwen3, olmo3, cohere2) reads its
// config.json, loads its weights into a Decoder and wraps it. Forward calls
// are serialized; a Decoder may be shared by goroutines but runs one forward
// pass at a time.
type Decoder struct {
	// Family names the model in errors ("gemma3").
	Family string
	// Info describes the model (Config returns it).
	Info Info
	// Embed is embed_tokens [vocab, hidden].
	Embed *tensor.Matrix
	// EmbedScale multiplies the embeddings (0: not scaled).
	EmbedScale float32
	// Layers are the decoder layers in order.
	Layers []Layer
	// Final is the norm before the head.
	Final *Norm
	// Head is lm_head [vocab, hidden]; Embed itself when tied.
	Head *tensor.Matrix
	// LogitScale multiplies the logits (0: not scaled).
	LogitScale float32
	// Softcap caps the logits at ±Softcap via tanh (0: none).
	Softcap float32

	be          tensor.Backend
	ck          *checkpoint.Checkpoint
	weightBytes int64

	mu      sync.Mutex
	scratch *Arena // whole-pass buffers
	perLay  *Arena // one layer's buffers
}

// NewDecoder returns an empty decoder on be that owns ck (Close closes it);
// the family fills in the fields, then calls Finish.
func NewDecoder(family string, ck *checkpoint.Checkpoint, be tensor.Backend) *Decoder {
	return &Decoder{Family: family, be: be, ck: ck, scratch: NewArena(be), perLay: NewArena(be)}
}

// Finish counts the weight bytes a decode token reads once every field is
// set: all layers, the final norm, the head and one embedding row.
func (d *Decoder) Finish() {
	n := int64(d.Head.Bytes()) + RowBytes(d.Embed) + d.Final.Bytes()
	for i := range d.Layers {
		n += d.Layers[i].WeightBytes()
	}
	d.weightBytes = n
}

// Config returns the model's description.
func (d *Decoder) Config() Info { return d.Info }

// WeightBytes is the number of weight bytes one decode token reads.
func (d *Decoder) WeightBytes() int64 { return d.weightBytes }

// Backend is the backend the model runs on.
func (d *Decoder) Backend() tensor.Backend { return d.be }

// NewCache returns an empty cache laid out for the model. On an
// asynchronous backend, unless opts brings its own Alloc or Copy, keys and
// values live in backend memory (see gemma3n.Model.NewCache).
func (d *Decoder) NewCache(opts kvcache.Options) (*kvcache.Cache, error) {
	return NewCache(d.be, d.Info.Layers, opts, d.Family)
}

// NewCache makes a kvcache for layers on be: on an asynchronous backend,
// unless opts brings its own Alloc or Copy, the storage is backend memory
// (Alloc) and Append records its row copies there (Copy), so a forward
// pass needs one Sync, at its end. A backend that is a tensor.HalfDecoder
// or a tensor.Int8RowDecoder decodes a Float16 or Quantized8 cache's views
// (Options.DecodeF16, Options.DecodeInt8Rows).
func NewCache(be tensor.Backend, layers []kvcache.LayerSpec, opts kvcache.Options, family string) (*kvcache.Cache, error) {
	if !be.Synchronous() && opts.Alloc == nil && opts.Copy == nil {
		opts.Alloc, opts.Copy = be.Alloc, be.Copy
	}
	if hd, ok := be.(tensor.HalfDecoder); ok && opts.DecodeF16 == nil {
		opts.DecodeF16 = hd.DecodeF16
	}
	if id, ok := be.(tensor.Int8RowDecoder); ok && opts.DecodeInt8Rows == nil {
		opts.DecodeInt8Rows = id.DecodeInt8Rows
	}
	c, err := kvcache.New(layers, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", family, err)
	}
	return c, nil
}

// Close releases the scratch buffers and unmaps the checkpoint. The model
// must not be used afterwards.
func (d *Decoder) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.scratch.Release()
	d.perLay.Release()
	return d.ck.Close()
}

// Forward runs one chunk of ids at cache.Offset() and returns F32 logits
// [len(ids), vocab], or [1, vocab] for the last token when lastOnly is
// set; see RunChunk for the cache protocol.
func (d *Decoder) Forward(cache *kvcache.Cache, ids []int32, lastOnly bool) (*tensor.Tensor, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return RunChunk(d.be, cache, d.Family, len(d.Layers), d.Info.VocabSize, ids, func() (*tensor.Tensor, error) {
		d.scratch.Reset()
		return d.forward(cache, ids, lastOnly)
	})
}

// forward is the body of Forward inside an open chunk: the named steps of
// the decoder.
func (d *Decoder) forward(cache *kvcache.Cache, ids []int32, lastOnly bool) (*tensor.Tensor, error) {
	x, err := d.embed(ids)
	if err != nil {
		return nil, err
	}
	next := d.scratch.Get(x.Shape...)
	for i := range d.Layers {
		d.perLay.Reset()
		if err := d.Layers[i].Forward(d.be, d.perLay, cache, next, x); err != nil {
			return nil, fmt.Errorf("%s: %w", d.Family, err)
		}
		x, next = next, x
	}
	return d.head(x, lastOnly)
}

// embed gathers the chunk's embedding rows and scales them.
func (d *Decoder) embed(ids []int32) (*tensor.Tensor, error) {
	x := d.scratch.Get(len(ids), d.Embed.In)
	if err := d.be.Gather(x, d.Embed, ids); err != nil {
		return nil, fmt.Errorf("%s embed_tokens: %w", d.Family, err)
	}
	if d.EmbedScale != 0 {
		if err := d.be.Scale(x, x, d.EmbedScale); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// head applies the final norm, lm_head, the logit scale and the softcap
// to every row of x, or to its last row when lastOnly is set.
func (d *Decoder) head(x *tensor.Tensor, lastOnly bool) (*tensor.Tensor, error) {
	n := x.Rows()
	if lastOnly && n > 1 {
		x, n = Rows(x, n-1, 1), 1
	}
	h := d.scratch.Get(n, x.Dim(-1))
	if err := d.Final.Forward(d.be, h, x); err != nil {
		return nil, fmt.Errorf("%s: %w", d.Family, err)
	}
	logits := d.be.Alloc(n, d.Head.Out)
	if err := d.be.MatMul(logits, h, d.Head); err != nil {
		return nil, fmt.Errorf("%s lm_head: %w", d.Family, err)
	}
	if d.LogitScale != 0 {
		if err := d.be.Scale(logits, logits, d.LogitScale); err != nil {
			return nil, err
		}
	}
	if d.Softcap != 0 {
		if err := d.be.Softcap(logits, logits, d.Softcap); err != nil {
			return nil, err
		}
	}
	return logits, nil
}

// ForwardArgmax runs one chunk like Forward and returns the index of the
// largest logit of its last token (greedy decoding's next token); see
// RunChunkArgmax.
func (d *Decoder) ForwardArgmax(cache *kvcache.Cache, ids []int32) (int32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return RunChunkArgmax(d.be, cache, d.Family, len(d.Layers), d.Info.VocabSize, ids, func() (*tensor.Tensor, error) {
		d.scratch.Reset()
		return d.forward(cache, ids, true)
	})
}

// RunChunkArgmax is RunChunk for greedy decoding: it returns the index of
// the largest logit of the last row body returns, as tensor.ArgmaxF32
// chooses it, instead of the logits. On a backend with tensor.ArgmaxOps
// the index is taken on the backend before the Sync and the logits are
// discarded, so only the index comes back to the host; elsewhere it is
// taken on the host from the synced row (the same index).
func RunChunkArgmax(be tensor.Backend, cache *kvcache.Cache, family string, layers, vocab int, ids []int32, body func() (*tensor.Tensor, error)) (int32, error) {
	ao, onBackend := be.(tensor.ArgmaxOps)
	var idx *tensor.Tensor
	logits, err := RunChunk(be, cache, family, layers, vocab, ids, func() (*tensor.Tensor, error) {
		l, err := body()
		if err != nil {
			return nil, err
		}
		if err := checkLogits(family, l, vocab); err != nil {
			return nil, err
		}
		if onBackend {
			idx = tensor.New(tensor.U32, 1)
			if err := ao.Argmax(idx, Rows(l, l.Rows()-1, 1)); err != nil {
				return nil, fmt.Errorf("%s: argmax of the logits: %w", family, err)
			}
			ao.Discard(l)
		}
		return l, nil
	})
	if err != nil {
		return 0, err
	}
	if idx != nil {
		i := idx.U32()[0]
		if int64(i) >= int64(vocab) {
			return 0, fmt.Errorf("%s: argmax of the logits gave %d for a vocabulary of %d", family, i, vocab)
		}
		return int32(i), nil
	}
	row := logits.F32()
	return int32(tensor.ArgmaxF32(row[len(row)-vocab:])), nil
}

// checkLogits reports logits that are not F32 rows of vocab values.
func checkLogits(family string, l *tensor.Tensor, vocab int) error {
	if l == nil || l.DType != tensor.F32 || len(l.Shape) == 0 || l.Dim(-1) != vocab || l.Rows() < 1 || len(l.Data) != 4*l.Len() {
		return fmt.Errorf("%s: logits %v, want F32 rows of %d", family, l, vocab)
	}
	return nil
}

// RunChunk runs body, the forward pass of ids, inside one chunk of cache:
// it checks the arguments (a cache of the model's layer count, a non-empty
// chunk of ids in [0, vocab)), opens the chunk (cache.Begin, which trims to
// MaxKV), and after body commits it, or on an error or a panic in body
// syncs the backend and aborts the chunk, leaving the cache as before the
// call (except for a trim Begin made). It syncs the backend before
// returning the logits, which then belong to the caller.
func RunChunk(be tensor.Backend, cache *kvcache.Cache, family string, layers, vocab int, ids []int32, body func() (*tensor.Tensor, error)) (logits *tensor.Tensor, err error) {
	if cache == nil {
		return nil, fmt.Errorf("%s: forward without a cache", family)
	}
	if cache.NumLayers() != layers {
		return nil, fmt.Errorf("%s: cache has %d layers, model %d; make it with NewCache", family, cache.NumLayers(), layers)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s: forward of an empty chunk", family)
	}
	for i, id := range ids {
		if id < 0 || int(id) >= vocab {
			return nil, fmt.Errorf("%s: token %d at position %d is outside the vocabulary [0, %d)", family, id, i, vocab)
		}
	}
	if _, err := cache.Begin(len(ids)); err != nil {
		return nil, fmt.Errorf("%s: %w", family, err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: internal error in the forward pass: %v", family, r)
		}
		if err != nil {
			// Let recorded work (row copies into the cache among it)
			// finish before the cache moves rows on the host again.
			_ = be.Sync()
			cache.Abort()
			logits = nil
			return
		}
		if cerr := cache.Commit(); cerr != nil {
			logits, err = nil, fmt.Errorf("%s: %w", family, cerr)
		}
	}()
	logits, err = body()
	if err == nil {
		if serr := be.Sync(); serr != nil {
			err = fmt.Errorf("%s: %w", family, serr)
		}
	}
	return logits, err
}
