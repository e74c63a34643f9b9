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
// made). The returned tensor belongs to the caller.
func (m *Model) Forward(cache *kvcache.Cache, ids []int32, lastOnly bool) (logits *tensor.Tensor, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cache == nil {
		return nil, fmt.Errorf("gemma3n: forward without a cache")
	}
	if cache.NumLayers() != m.cfg.Layers {
		return nil, fmt.Errorf("gemma3n: cache has %d layers, model %d; make it with NewCache", cache.NumLayers(), m.cfg.Layers)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("gemma3n: forward of an empty chunk")
	}
	for i, id := range ids {
		if id < 0 || int(id) >= m.cfg.Vocab {
			return nil, fmt.Errorf("gemma3n: token %d at position %d is outside the vocabulary [0, %d)", id, i, m.cfg.Vocab)
		}
	}
	if _, err := cache.Begin(len(ids)); err != nil {
		return nil, fmt.Errorf("gemma3n: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("gemma3n: internal error in the forward pass: %v", r)
		}
		if err != nil {
			// Let recorded work (row copies into the cache among it)
			// finish before the cache moves rows on the host again.
			_ = m.be.Sync()
			cache.Abort()
			logits = nil
			return
		}
		if cerr := cache.Commit(); cerr != nil {
			logits, err = nil, fmt.Errorf("gemma3n: %w", cerr)
		}
	}()
	m.scratch.Reset()
	logits, err = m.forward(cache, ids, lastOnly)
	if err == nil {
		if serr := m.be.Sync(); serr != nil {
			err = fmt.Errorf("gemma3n: %w", serr)
		}
	}
	return logits, err
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

	next := ar.Get(S, n, H)
	for i := range m.layers {
		m.perLay.Reset()
		if err := m.layers[i].forward(m, cache, next, x, blocks.Stream(ple, i)); err != nil {
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
	if err := be.RMSNorm(rows, rows, m.pleProjNorm, m.eps); err != nil {
		return nil, fmt.Errorf("gemma3n per_layer_projection_norm: %w", err)
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

// head turns the final AltUp streams into logits: streams 1.. are
// unembedded and matched to stream 0's magnitude, all are averaged, then
// the final norm, the tied lm_head and the softcap.
func (m *Model) head(x *tensor.Tensor, lastOnly bool) (*tensor.Tensor, error) {
	c, be, ar := m.cfg, m.be, m.scratch
	S, H, n := c.AltUpInputs, c.Hidden, x.Shape[1]
	if lastOnly && n > 1 {
		last := ar.Get(S, 1, H)
		for j := 0; j < S; j++ {
			if err := be.Copy(blocks.Stream(last, j), blocks.Rows(blocks.Stream(x, j), n-1, 1)); err != nil {
				return nil, err
			}
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
	if err := be.RMSNorm(sum, sum, m.finalNorm, m.eps); err != nil {
		return nil, fmt.Errorf("gemma3n norm: %w", err)
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
	if err := be.RMSNorm(t, x, l.routerNorm, m.eps); err != nil {
		return nil, fmt.Errorf("layer %d altup.router_norm: %w", l.idx, err)
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
func (l *layer) forward(m *Model, cache *kvcache.Cache, out, x, ple *tensor.Tensor) error {
	c, be, ar := m.cfg, m.be, m.perLay
	S, H, n := c.AltUpInputs, c.Hidden, x.Shape[1]
	act := c.AltUpActive

	// AltUp predict: out[j] = x[j] + Σ_k coef[j,k]·x[k].
	mod, err := l.modalities(m, blocks.Stream(x, act))
	if err != nil {
		return err
	}
	coef := ar.Get(n, S*S)
	if err := be.MatMul(coef, mod, l.predCoefs); err != nil {
		return fmt.Errorf("layer %d altup.prediction_coefs: %w", l.idx, err)
	}
	if err := be.Add(coef, coef, m.identity); err != nil {
		return err
	}
	if err := m.ops.MixStreams(out, x, coef); err != nil {
		return fmt.Errorf("layer %d altup predict: %w", l.idx, err)
	}
	pred := blocks.Stream(out, act)

	normed := ar.Get(n, H)
	if err := be.RMSNorm(normed, pred, l.inputNorm, m.eps); err != nil {
		return fmt.Errorf("layer %d input_layernorm: %w", l.idx, err)
	}

	// LAuReL: normed + rmsnorm(normed·Lᵀ·Rᵀ).
	lr := ar.Get(n, c.LaurelRank)
	if err := be.MatMul(lr, normed, l.laurelL); err != nil {
		return fmt.Errorf("layer %d laurel.linear_left: %w", l.idx, err)
	}
	laurel := ar.Get(n, H)
	if err := be.MatMul(laurel, lr, l.laurelR); err != nil {
		return fmt.Errorf("layer %d laurel.linear_right: %w", l.idx, err)
	}
	if err := be.RMSNorm(laurel, laurel, l.laurelNorm, m.eps); err != nil {
		return fmt.Errorf("layer %d laurel.post_laurel_norm: %w", l.idx, err)
	}
	if err := be.Add(laurel, laurel, normed); err != nil {
		return err
	}

	// Attention, then (pred + attn + laurel)/sqrt(2).
	h := ar.Get(n, H)
	if err := l.attn.Forward(be, ar, cache, h, normed); err != nil {
		return err
	}
	if err := be.RMSNorm(h, h, l.postAttn, m.eps); err != nil {
		return fmt.Errorf("layer %d post_attention_layernorm: %w", l.idx, err)
	}
	if err := be.Add(h, h, pred); err != nil {
		return err
	}
	if err := be.Add(h, h, laurel); err != nil {
		return err
	}
	if err := be.Scale(h, h, m.c.invSqrt2); err != nil {
		return err
	}

	// MLP with its pre and post norms, residual.
	ffIn := ar.Get(n, H)
	if err := be.RMSNorm(ffIn, h, l.preFF, m.eps); err != nil {
		return fmt.Errorf("layer %d pre_feedforward_layernorm: %w", l.idx, err)
	}
	ff := ar.Get(n, H)
	if err := l.mlp.Forward(be, ar, ff, ffIn); err != nil {
		return err
	}
	if err := be.RMSNorm(ff, ff, l.postFF, m.eps); err != nil {
		return fmt.Errorf("layer %d post_feedforward_layernorm: %w", l.idx, err)
	}
	activated := ff
	if err := be.Add(activated, activated, h); err != nil {
		return err
	}

	// AltUp correct: out[j] += (coef[j]+1)·(activated - pred).
	mod, err = l.modalities(m, activated)
	if err != nil {
		return err
	}
	cc := ar.Get(n, S)
	if err := be.MatMul(cc, mod, l.corrCoefs); err != nil {
		return fmt.Errorf("layer %d altup.correction_coefs: %w", l.idx, err)
	}
	if err := be.Add(cc, cc, m.ones); err != nil {
		return err
	}
	innov := ar.Get(n, H)
	if err := be.Scale(innov, pred, -1); err != nil {
		return err
	}
	if err := be.Add(innov, innov, activated); err != nil {
		return err
	}
	if err := m.ops.AddScaledStreams(out, out, innov, cc); err != nil {
		return fmt.Errorf("layer %d altup correct: %w", l.idx, err)
	}

	// Per-layer input: gate the scaled active stream, project, add to the
	// other streams.
	first := blocks.Stream(out, act)
	if l.outScale != nil {
		scaled := ar.Get(n, H)
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
	p := ar.Get(n, H)
	if err := be.MatMul(p, g, l.pleProj); err != nil {
		return fmt.Errorf("layer %d per_layer_projection: %w", l.idx, err)
	}
	if err := be.RMSNorm(p, p, l.pleNorm, m.eps); err != nil {
		return fmt.Errorf("layer %d post_per_layer_input_norm: %w", l.idx, err)
	}
	for j := 1; j < S; j++ {
		sj := blocks.Stream(out, j)
		if err := be.Add(sj, sj, p); err != nil {
			return err
		}
	}
	return nil
}
