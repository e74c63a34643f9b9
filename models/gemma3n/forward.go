package gemma3n

import (
	"fmt"

	"mlxchat/kvcache"
	"mlxchat/models/blocks"
	"mlxchat/tensor"
)

// Forward runs one chunk of token ids through the model at cache.Offset():
// it opens the chunk (cache.Begin, which trims to MaxKV), runs every layer,
// commits the chunk, and returns F32 logits [len(ids), vocab], or [1, vocab]
// for the last token only when lastOnly is set. On any error the chunk is
// aborted and the cache is as before the call (except for a trim Begin
// made); see blocks.RunChunk. The returned tensor belongs to the caller.
func (m *Model) Forward(cache *kvcache.Cache, ids []int32, lastOnly bool) (*tensor.Tensor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return blocks.RunChunk(m.be, cache, "gemma3n", m.cfg.Layers, m.cfg.Vocab, ids, func() (*tensor.Tensor, error) {
		m.scratch.Reset()
		return m.forward(cache, ids, lastOnly)
	})
}

// ForwardArgmax runs one chunk like Forward and returns the index of the
// largest logit of its last token (greedy decoding's next token), taken on
// the backend where it can (blocks.RunChunkArgmax).
func (m *Model) ForwardArgmax(cache *kvcache.Cache, ids []int32) (int32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return blocks.RunChunkArgmax(m.be, cache, "gemma3n", m.cfg.Layers, m.cfg.Vocab, ids, func() (*tensor.Tensor, error) {
		m.scratch.Reset()
		return m.forward(cache, ids, true)
	})
}

// forward is the body of Forward inside an open chunk.
func (m *Model) forward(cache *kvcache.Cache, ids []int32, lastOnly bool) (*tensor.Tensor, error) {
	c, be, ar := m.cfg, m.be, m.scratch
	n, S, H := len(ids), c.AltUpInputs, c.Hidden

	// Token embeddings, scaled.
	h0 := ar.Get(n, H)
	if err := be.Gather(h0, m.embed, ids); err != nil {
		return nil, fmt.Errorf("gemma3n embed_tokens: %w", err)
	}
	if err := be.Scale(h0, h0, m.c.embedScale); err != nil {
		return nil, err
	}
	ple, err := m.perLayerInputs(ids, h0)
	if err != nil {
		return nil, err
	}

	// AltUp streams: the embedding and its projections at its magnitude.
	x := ar.Get(S, n, H)
	if err := be.Copy(blocks.Stream(x, 0), h0); err != nil {
		return nil, err
	}
	for j := 1; j < S; j++ {
		xj := blocks.Stream(x, j)
		if err := be.MatMul(xj, h0, m.altupProj[j-1]); err != nil {
			return nil, fmt.Errorf("gemma3n altup_projections.%d: %w", j-1, err)
		}
		if err := m.ops.MatchRMS(xj, xj, h0, magnitudeEps); err != nil {
			return nil, err
		}
	}

	// The trailing KV-shared layers write nothing to the cache, so when
	// only the last token's logits are wanted they run on its row alone:
	// the other rows' outputs there would feed nothing. For E2B that skips
	// 10 of 30 layers for all but one token of every prefill chunk. Only
	// on synchronous (CPU) backends for now: on the GPU backend, a step
	// that turns from many rows to one trips the fake Metal's barrier
	// check when chain.go folds the one-row ops (TestTinyGemma3nMetalHost
	// passes with SetChains(false)), so it runs every row there.
	tail := len(m.layers)
	if lastOnly && n > 1 && m.trace == nil && be.Synchronous() {
		tail = m.sharedTail()
	}
	next := ar.Get(S, n, H)
	for i := range m.layers {
		m.perLay.Reset()
		lple := blocks.Stream(ple, i)
		if i >= tail {
			if i == tail {
				last, err := m.lastRow(x)
				if err != nil {
					return nil, err
				}
				x, next = last, ar.Get(S, 1, H)
			}
			lple = blocks.Rows(lple, n-1, 1)
		}
		if err := m.layers[i].forward(m, cache, next, x, lple); err != nil {
			return nil, fmt.Errorf("gemma3n: %w", err)
		}
		x, next = next, x
		if m.trace != nil {
			if err := be.Sync(); err != nil {
				return nil, err
			}
			m.trace(i, x)
		}
	}
	return m.head(x, lastOnly)
}

// perLayerInputs returns the per-layer inputs laid out [layers, n, P]:
// (rmsnorm(h0·Wᵀ/sqrt(hidden)) + embed_per_layer(ids)·sqrt(P)) / sqrt(2),
// where ids beyond the per-layer vocabulary use row 0. Only the rows of
// the chunk's tokens are read from the per-layer table.
func (m *Model) perLayerInputs(ids []int32, h0 *tensor.Tensor) (*tensor.Tensor, error) {
	c, be, ar := m.cfg, m.be, m.scratch
	n, L, P := len(ids), c.Layers, c.PerLayerHidden
	pids := make([]int32, n)
	for i, id := range ids {
		if int(id) < c.VocabPerLayer {
			pids[i] = id
		}
	}
	emb := ar.Get(n, L*P)
	if err := be.Gather(emb, m.pleEmbed, pids); err != nil {
		return nil, fmt.Errorf("gemma3n embed_tokens_per_layer: %w", err)
	}
	if err := be.Scale(emb, emb, m.c.pleScale); err != nil {
		return nil, err
	}
	proj := ar.Get(n, L*P)
	if err := be.MatMul(proj, h0, m.pleModel); err != nil {
		return nil, fmt.Errorf("gemma3n per_layer_model_projection: %w", err)
	}
	if err := be.Scale(proj, proj, m.c.pleProjScale); err != nil {
		return nil, err
	}
	rows := blocks.Reshape(proj, n*L, P)
	if err := m.pleProjNorm.Forward(be, rows, rows); err != nil {
		return nil, fmt.Errorf("gemma3n: %w", err)
	}
	if err := be.Add(proj, proj, emb); err != nil {
		return nil, err
	}
	if err := be.Scale(proj, proj, m.c.invSqrt2); err != nil {
		return nil, err
	}
	if n == 1 {
		return blocks.Reshape(proj, L, 1, P), nil
	}
	out := ar.Get(L, n, P)
	if err := m.ops.SwapAxes01(out, blocks.Reshape(proj, n, L, P)); err != nil {
		return nil, err
	}
	return out, nil
}

// sharedTail is the index of the first layer of the trailing run of
// KV-shared layers: len(layers) when the last layer owns its cache.
func (m *Model) sharedTail() int {
	i := len(m.layers)
	for i > 0 && m.layers[i-1].attn.Shared {
		i--
	}
	return i
}

// lastRow copies the last row of every AltUp stream of x [S, n, H] into
// a new [S, 1, H].
func (m *Model) lastRow(x *tensor.Tensor) (*tensor.Tensor, error) {
	S, n, H := x.Shape[0], x.Shape[1], x.Shape[2]
	last := m.scratch.Get(S, 1, H)
	for j := 0; j < S; j++ {
		if err := m.be.Copy(blocks.Stream(last, j), blocks.Rows(blocks.Stream(x, j), n-1, 1)); err != nil {
			return nil, err
		}
	}
	return last, nil
}

// head turns the final AltUp streams into logits: streams 1.. are
// unembedded and matched to stream 0's magnitude, all are averaged, then
// the final norm, the tied lm_head and the softcap.
func (m *Model) head(x *tensor.Tensor, lastOnly bool) (*tensor.Tensor, error) {
	c, be, ar := m.cfg, m.be, m.scratch
	S, H, n := c.AltUpInputs, c.Hidden, x.Shape[1]
	if lastOnly && n > 1 {
		last, err := m.lastRow(x)
		if err != nil {
			return nil, err
		}
		x, n = last, 1
	}
	x0 := blocks.Stream(x, 0)
	sum := ar.Get(n, H)
	if err := be.Copy(sum, x0); err != nil {
		return nil, err
	}
	tmp := ar.Get(n, H)
	for j := 1; j < S; j++ {
		if err := be.MatMul(tmp, blocks.Stream(x, j), m.altupUnemb[j-1]); err != nil {
			return nil, fmt.Errorf("gemma3n altup_unembed_projections.%d: %w", j-1, err)
		}
		if err := m.ops.MatchRMS(tmp, tmp, x0, magnitudeEps); err != nil {
			return nil, err
		}
		if err := be.Add(sum, sum, tmp); err != nil {
			return nil, err
		}
	}
	if err := be.Scale(sum, sum, m.c.streamAverage); err != nil {
		return nil, err
	}
	if err := m.finalNorm.Forward(be, sum, sum); err != nil {
		return nil, fmt.Errorf("gemma3n: %w", err)
	}
	logits := be.Alloc(n, c.Vocab)
	if err := be.MatMul(logits, sum, m.embed); err != nil {
		return nil, fmt.Errorf("gemma3n lm_head: %w", err)
	}
	if c.FinalSoftcap > 0 {
		if err := be.Softcap(logits, logits, float32(c.FinalSoftcap)); err != nil {
			return nil, err
		}
	}
	return logits, nil
}

// modalities computes AltUp's router output tanh(router(rmsnorm(x)/hidden))
// as [n, streams].
func (l *layer) modalities(m *Model, x *tensor.Tensor) (*tensor.Tensor, error) {
	be, ar := m.be, m.perLay
	n := x.Rows()
	t := ar.Get(n, m.cfg.Hidden)
	if err := l.routerNorm.Forward(be, t, x); err != nil {
		return nil, err
	}
	if err := be.Scale(t, t, m.c.routerScale); err != nil {
		return nil, err
	}
	mod := ar.Get(n, m.cfg.AltUpInputs)
	if err := be.MatMul(mod, t, l.router); err != nil {
		return nil, fmt.Errorf("layer %d altup.modality_router: %w", l.idx, err)
	}
	if err := be.Softcap(mod, mod, 1); err != nil { // tanh
		return nil, err
	}
	return mod, nil
}

// forward runs decoder layer l on the streams x [S, n, H] and writes the
// corrected streams to out; ple is this layer's per-layer input [n, P].
// Its steps, in order:
//
//	predict       AltUp: out = x + coef(router(x_active))·x
//	normed        input_layernorm of the predicted active stream
//	laurel        normed + post_laurel_norm(normed·Lᵀ·Rᵀ)
//	attend        h = (pred + post_attention_layernorm(attn(normed)) + laurel) / √2
//	feedForward   activated = h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))
//	correct       AltUp: out += (coef(router(activated)) + 1)·(activated - pred)
//	perLayerInput out[1:] += post_per_layer_input_norm(proj(gelu(gate(out_active·scale)) ⊙ ple))
func (l *layer) forward(m *Model, cache *kvcache.Cache, out, x, ple *tensor.Tensor) error {
	pred, err := l.predict(m, out, x)
	if err != nil {
		return err
	}
	normed := m.perLay.Get(pred.Rows(), m.cfg.Hidden)
	if err := l.inputNorm.Forward(m.be, normed, pred); err != nil {
		return err
	}
	laurel, err := l.laurel(m, normed)
	if err != nil {
		return err
	}
	h, err := l.attend(m, cache, normed, pred, laurel)
	if err != nil {
		return err
	}
	activated, err := l.feedForward(m, h)
	if err != nil {
		return err
	}
	if err := l.correct(m, out, pred, activated); err != nil {
		return err
	}
	return l.perLayerInput(m, out, ple)
}

// predict writes AltUp's predicted streams into out (out[j] = x[j] +
// Σ_k coef[j,k]·x[k]) and returns the predicted active stream.
func (l *layer) predict(m *Model, out, x *tensor.Tensor) (*tensor.Tensor, error) {
	be, ar, S, n := m.be, m.perLay, m.cfg.AltUpInputs, x.Shape[1]
	mod, err := l.modalities(m, blocks.Stream(x, m.cfg.AltUpActive))
	if err != nil {
		return nil, err
	}
	coef := ar.Get(n, S*S)
	if err := be.MatMul(coef, mod, l.predCoefs); err != nil {
		return nil, fmt.Errorf("layer %d altup.prediction_coefs: %w", l.idx, err)
	}
	if err := be.Add(coef, coef, m.identity); err != nil {
		return nil, err
	}
	if err := m.ops.MixStreams(out, x, coef); err != nil {
		return nil, fmt.Errorf("layer %d altup predict: %w", l.idx, err)
	}
	return blocks.Stream(out, m.cfg.AltUpActive), nil
}

// laurel is LAuReL's low-rank branch: normed + rmsnorm(normed·Lᵀ·Rᵀ).
func (l *layer) laurel(m *Model, normed *tensor.Tensor) (*tensor.Tensor, error) {
	be, ar, n := m.be, m.perLay, normed.Rows()
	lr := ar.Get(n, m.cfg.LaurelRank)
	if err := be.MatMul(lr, normed, l.laurelL); err != nil {
		return nil, fmt.Errorf("layer %d laurel.linear_left: %w", l.idx, err)
	}
	out := ar.Get(n, m.cfg.Hidden)
	if err := be.MatMul(out, lr, l.laurelR); err != nil {
		return nil, fmt.Errorf("layer %d laurel.linear_right: %w", l.idx, err)
	}
	if err := l.laurelNorm.Forward(be, out, out); err != nil {
		return nil, err
	}
	if err := be.Add(out, out, normed); err != nil {
		return nil, err
	}
	return out, nil
}

// attend runs attention on normed and merges it with the prediction and
// LAuReL: (pred + post_attention_layernorm(attn) + laurel) / √2.
func (l *layer) attend(m *Model, cache *kvcache.Cache, normed, pred, laurel *tensor.Tensor) (*tensor.Tensor, error) {
	be := m.be
	h := m.perLay.Get(normed.Rows(), m.cfg.Hidden)
	if err := l.attn.Forward(be, m.perLay, cache, h, normed); err != nil {
		return nil, err
	}
	if err := l.postAttn.Forward(be, h, h); err != nil {
		return nil, err
	}
	if err := be.Add(h, h, pred); err != nil {
		return nil, err
	}
	if err := be.Add(h, h, laurel); err != nil {
		return nil, err
	}
	if err := be.Scale(h, h, m.c.invSqrt2); err != nil {
		return nil, err
	}
	return h, nil
}

// feedForward is the MLP with its pre and post norms and the residual.
func (l *layer) feedForward(m *Model, h *tensor.Tensor) (*tensor.Tensor, error) {
	be, ar, n, H := m.be, m.perLay, h.Rows(), m.cfg.Hidden
	ffIn := ar.Get(n, H)
	if err := l.preFF.Forward(be, ffIn, h); err != nil {
		return nil, err
	}
	ff := ar.Get(n, H)
	if err := l.mlp.Forward(be, ar, ff, ffIn); err != nil {
		return nil, err
	}
	if err := l.postFF.Forward(be, ff, ff); err != nil {
		return nil, err
	}
	if err := be.Add(ff, ff, h); err != nil {
		return nil, err
	}
	return ff, nil
}

// correct is AltUp's correction: out[j] += (coef[j]+1)·(activated - pred).
func (l *layer) correct(m *Model, out, pred, activated *tensor.Tensor) error {
	be, ar, n := m.be, m.perLay, activated.Rows()
	mod, err := l.modalities(m, activated)
	if err != nil {
		return err
	}
	cc := ar.Get(n, m.cfg.AltUpInputs)
	if err := be.MatMul(cc, mod, l.corrCoefs); err != nil {
		return fmt.Errorf("layer %d altup.correction_coefs: %w", l.idx, err)
	}
	if err := be.Add(cc, cc, m.ones); err != nil {
		return err
	}
	innov := ar.Get(n, m.cfg.Hidden)
	if err := be.Scale(innov, pred, -1); err != nil {
		return err
	}
	if err := be.Add(innov, innov, activated); err != nil {
		return err
	}
	if err := m.ops.AddScaledStreams(out, out, innov, cc); err != nil {
		return fmt.Errorf("layer %d altup correct: %w", l.idx, err)
	}
	return nil
}

// perLayerInput gates the (scaled) active stream with this layer's
// per-layer input, projects it back to the hidden size and adds it to the
// other streams.
func (l *layer) perLayerInput(m *Model, out, ple *tensor.Tensor) error {
	be, ar, c := m.be, m.perLay, m.cfg
	first := blocks.Stream(out, c.AltUpActive)
	n := first.Rows()
	if l.outScale != nil {
		scaled := ar.Get(n, c.Hidden)
		if err := be.Mul(scaled, first, l.outScale); err != nil {
			return err
		}
		first = scaled
	}
	g := ar.Get(n, c.PerLayerHidden)
	if err := be.MatMul(g, first, l.pleGate); err != nil {
		return fmt.Errorf("layer %d per_layer_input_gate: %w", l.idx, err)
	}
	if err := be.GeluTanh(g, g); err != nil {
		return err
	}
	if err := be.Mul(g, g, ple); err != nil {
		return err
	}
	p := ar.Get(n, c.Hidden)
	if err := be.MatMul(p, g, l.pleProj); err != nil {
		return fmt.Errorf("layer %d per_layer_projection: %w", l.idx, err)
	}
	if err := l.pleNorm.Forward(be, p, p); err != nil {
		return err
	}
	for j := 1; j < c.AltUpInputs; j++ {
		sj := blocks.Stream(out, j)
		if err := be.Add(sj, sj, p); err != nil {
			return err
		}
	}
	return nil
}
