package engine

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// generation is the state of one Generate request.
type generation struct {
	e     *Engine
	w     *worker
	j     *job
	s     Settings
	start time.Time

	text      strings.Builder // answer as emitted
	generated int             // answer tokens sampled (stop token excluded)
	stats     Stats
	firstTok  time.Time
}

// generate runs a Generate request; every failure and panic becomes an
// Error event and leaves the engine usable.
func (e *Engine) generate(j *job, r Generate) {
	g := &generation{e: e, w: e.w, j: j, start: time.Now()}
	touched := false // whether the cache may have been modified
	var done *Done
	err := safely(func() error {
		var err error
		done, err = g.run(r, &touched)
		return err
	})
	if err != nil {
		ev := Error{Err: err, Text: g.text.String()}
		var pe *PanicError
		if touched || errors.As(err, &pe) {
			ev.CacheReset = g.w.resetAfterFault()
		}
		e.emit(j.id, g.w.cacheState())
		e.emit(j.id, ev)
		return
	}
	g.finishStats()
	e.emit(j.id, g.stats)
	e.emit(j.id, *done)
}

// run does the work of generate; touched is set once the cache may change.
func (g *generation) run(r Generate, touched *bool) (*Done, error) {
	w := g.w
	s := w.settings
	if r.Settings != nil {
		if err := r.Settings.Validate(); err != nil {
			return nil, err
		}
		s = r.Settings.Normalize()
	}
	g.s = s
	if g.j.ctx.Err() != nil {
		return &Done{Reason: DoneCancelled}, nil
	}
	conv := r.Conversation
	if s.System != "" && (len(conv) == 0 || conv[0].Role != RoleSystem) {
		conv = append([]Message{{Role: RoleSystem, Content: s.System}}, conv...)
	}
	if len(conv) == 0 {
		return nil, fmt.Errorf("generate: empty conversation")
	}
	prompt, err := w.tmpl.Render(conv, true)
	if err != nil {
		return nil, fmt.Errorf("rendering chat template: %w", err)
	}
	ids, err := w.tok.Encode(prompt)
	if err != nil {
		return nil, fmt.Errorf("tokenizing prompt: %w", err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("generate: the prompt has no tokens")
	}
	sink := s.SinkTokens
	if s.KeepSystem {
		sink = max(sink, w.systemPrefix(conv, ids))
	}
	if s.MaxKV > 0 && 2*sink > s.MaxKV {
		return nil, fmt.Errorf("max-kv-size %d: the %d-token system prompt kept as attention sink needs at most half of it; raise --max-kv-size or turn off keep-system", s.MaxKV, sink)
	}

	*touched = true
	emptied, err := w.lm.configure(s.MaxKV, sink)
	if err != nil {
		return nil, err
	}
	if emptied {
		w.cached = nil
	}
	cs, _ := w.lm.state()
	plan := w.planReuse(ids, cs, s.MaxKV)
	if plan.rewind > 0 {
		if err := w.lm.rewind(plan.rewind); err != nil {
			// planReuse checked the cache's reach; should the cache
			// still refuse, starting over is always correct.
			plan = reusePlan{restart: RestartBeyondRewind}
		} else {
			w.cached = w.cached[:len(w.cached)-plan.rewind]
			g.stats.RewoundTokens, g.stats.CacheRewind = plan.rewind, plan.why
		}
	}
	if plan.restart != "" {
		if cs.Seen > 0 || len(w.cached) > 0 {
			g.stats.CacheRestart = plan.restart
			if err := w.reset(); err != nil {
				return nil, err
			}
		}
	} else if len(w.cached) > 0 {
		// Rewinding never undoes a trim: every trimmed position lies in
		// the kept prefix.
		g.stats.ReusedTrimmed = cs.Trimmed
	}
	reuse := len(w.cached)
	g.stats.PromptTokens = len(ids)
	g.stats.ReusedTokens = reuse

	logits, cancelled, err := g.prefill(ids[reuse:], reuse)
	if err != nil {
		return nil, err
	}
	if cancelled {
		return &Done{Reason: DoneCancelled}, nil
	}
	return g.decode(ids, logits)
}

// reusePlan is how a request reuses the cache: keep it as is, rewind
// it, or reset it.
type reusePlan struct {
	rewind  int    // tokens to drop from the end of the cache (0 = none)
	why     string // Rewind* reason when rewind > 0
	restart string // Restart* reason to reset the cache ("" = keep it)
}

// planReuse decides how the prompt ids reuse the cache, whose fed history
// is w.cached: keep the longest common prefix of the two, but at most
// len(ids)-1 tokens so that at least one is prefilled for the next-token
// logits; rewind the cache to it when the history goes further, as mlx-lm
// (trim_prompt_cache) and llama.cpp (longest common prefix) do. A trimmed
// cache (sink + recent window) is continued and rewound too, since a full
// prefill would only trim the same tokens again, unless the cap has since
// been raised or turned off: then a full prefill restores the context the
// user now has room for. The cache is reset when the prefix is empty or
// the cache cannot rewind that far (kvcache's MaxRewind: trimmed tokens,
// sliding-window slack).
func (w *worker) planReuse(ids []int32, cs CacheState, maxKV int) reusePlan {
	switch {
	case len(w.cached) == 0 && cs.Seen == 0:
		return reusePlan{restart: RestartEmpty}
	case cs.Seen != len(w.cached):
		return reusePlan{restart: RestartHistory}
	case cs.Trimmed > 0 && (maxKV == 0 || maxKV > w.trimCap):
		return reusePlan{restart: RestartCapRaised}
	}
	common := commonPrefix(ids, w.cached)
	keep := min(common, len(ids)-1)
	if common == len(ids) && len(ids) == w.lastPromptLen && w.lastChunkStart < keep {
		// The same prompt again: prefill its whole last chunk as before
		// rather than only its last token. A one-token step runs the
		// decode kernels, whose rounding differs from the prefill
		// kernels', so a seeded answer would not repeat.
		keep = w.lastChunkStart
	}
	if keep == len(w.cached) {
		return reusePlan{}
	}
	p := reusePlan{rewind: len(w.cached) - keep, why: RewindDiverged}
	if common == len(ids) {
		p.why = RewindNothingNew
	}
	if keep == 0 || p.rewind > w.lm.maxRewind() {
		switch {
		case p.why == RewindNothingNew:
			return reusePlan{restart: RestartNothingNew}
		case keep == 0:
			return reusePlan{restart: RestartHistory}
		}
		return reusePlan{restart: RestartBeyondRewind}
	}
	return p
}

// systemPrefix is the number of leading prompt tokens that belong to the
// system prompt: the common prefix of ids and the rendering of the system
// message followed by an empty user turn.
func (w *worker) systemPrefix(conv []Message, ids []int32) int {
	if conv[0].Role != RoleSystem {
		return 0
	}
	text, err := w.tmpl.Render([]Message{conv[0], {Role: RoleUser}}, false)
	if err != nil {
		return 0
	}
	probe, err := w.tok.Encode(text)
	if err != nil {
		return 0
	}
	n := 0
	for n < len(probe) && n < len(ids) && probe[n] == ids[n] {
		n++
	}
	return n
}

// prefill runs the prompt suffix in chunks, enforcing MaxKV before each one.
// It returns the logits after the last prompt token.
func (g *generation) prefill(todo []int32, reused int) ([]float32, bool, error) {
	w, s := g.w, g.s
	chunk := s.PrefillChunk
	// A chunk must fit under MaxKV next to the sink.
	chunk = max(1, min(chunk, w.lm.maxChunk()))
	chunks := (len(todo) + chunk - 1) / chunk
	// Progress before the first chunk, so a long first chunk does not leave
	// the caller's prefill meter blank.
	g.e.emit(g.j.id, PrefillProgress{Chunk: 0, Chunks: chunks, Total: len(todo), Reused: reused})
	t0 := time.Now()
	var logits []float32
	for i := 0; i < chunks; i++ {
		if g.j.ctx.Err() != nil {
			if g.stats.PrefillTime > 0 {
				g.stats.PromptTokPerSec = rate(g.stats.PrefillTokens, g.stats.PrefillTime)
			}
			return nil, true, nil
		}
		part := todo[i*chunk : min(len(todo), (i+1)*chunk)]
		w.lastChunkStart = len(w.cached)
		var tr trimInfo
		var err error
		logits, tr, err = w.lm.forward(part)
		if err != nil {
			return nil, false, fmt.Errorf("prefill chunk %d/%d: %w", i+1, chunks, err)
		}
		if tr.Dropped > 0 {
			w.trimCap = s.MaxKV
			g.e.emit(g.j.id, Trim{Dropped: tr.Dropped, LiveBefore: tr.LiveBefore, LiveAfter: tr.LiveAfter, Kind: tr.Kind, Phase: "prefill"})
		}
		w.cached = append(w.cached, part...)
		done := min(len(todo), (i+1)*chunk)
		el := time.Since(t0)
		g.stats.PrefillTokens = done
		g.stats.PrefillTime = el
		g.e.emit(g.j.id, PrefillProgress{Chunk: i + 1, Chunks: chunks, Tokens: done, Total: len(todo), Reused: reused, TokPerSec: rate(done, el)})
		g.e.emit(g.j.id, w.cacheState())
	}
	w.lastPromptLen = len(w.cached)
	if g.stats.PrefillTime > 0 {
		g.stats.PromptTokPerSec = rate(g.stats.PrefillTokens, g.stats.PrefillTime)
	}
	return logits, false, nil
}

// decode samples, streams and feeds back tokens until a stop condition.
func (g *generation) decode(prompt []int32, logits []float32) (*Done, error) {
	w, s := g.w, g.s
	sampler := NewSampler(s)
	stream := w.tok.NewStream()
	matcher := &stopMatcher{stops: s.StopStrings}
	var loops *loopDetector
	if !s.NoLoopDetect {
		loops = newLoopDetector()
	}
	history := append([]int32(nil), prompt...)
	t0 := time.Now()
	steps := 0
	finish := func(reason DoneReason) *Done {
		if reason != DoneStopString {
			g.emitText(stream.Flush())
			g.emitText(matcher.flush())
		}
		g.stats.DecodeTokens = g.generated
		g.stats.DecodeTime = time.Since(t0)
		if steps > 0 {
			g.stats.DecodeTokPerSec = rate(steps, g.stats.DecodeTime)
		}
		return &Done{Reason: reason, Text: g.text.String(), Tokens: g.generated}
	}
	for {
		recent := history[max(0, len(history)-s.RepetitionWindow):]
		tok := sampler.Sample(logits, recent)
		if g.firstTok.IsZero() {
			g.firstTok = time.Now()
		}
		if w.stops[tok] {
			return finish(DoneStop), nil
		}
		g.generated++
		history = append(history, tok)
		piece := ""
		if !w.isSpecial(tok) {
			// Control tokens (<start_of_turn>, <pad>, ...) are fed back to
			// the model but never shown: the answer text is what Hugging
			// Face's decode with skip_special_tokens gives.
			piece = stream.Add(tok)
		}
		text, stopped := matcher.add(piece)
		g.emitText(text)
		if stopped {
			return finish(DoneStopString), nil
		}
		if loops != nil && loops.add(tok) {
			return finish(DoneLoop), nil
		}
		if s.MaxTokens > 0 && g.generated >= s.MaxTokens {
			return finish(DoneMaxTokens), nil
		}
		if g.j.ctx.Err() != nil {
			return finish(DoneCancelled), nil
		}
		var tr trimInfo
		var err error
		logits, tr, err = w.lm.forward([]int32{tok})
		if err != nil {
			return nil, fmt.Errorf("decode step %d: %w", steps+1, err)
		}
		if tr.Dropped > 0 {
			w.trimCap = s.MaxKV
			g.e.emit(g.j.id, Trim{Dropped: tr.Dropped, LiveBefore: tr.LiveBefore, LiveAfter: tr.LiveAfter, Kind: tr.Kind, Phase: "decode"})
		}
		steps++
		w.cached = append(w.cached, tok)
		g.e.emit(g.j.id, w.cacheState())
	}
}

// emitText sends non-empty answer text as a Token event.
func (g *generation) emitText(text string) {
	if text == "" {
		return
	}
	g.text.WriteString(text)
	g.e.emit(g.j.id, Token{Text: text, Tokens: g.generated})
}

// finishStats fills the time-to-first-token and memory figures.
func (g *generation) finishStats() {
	if !g.firstTok.IsZero() {
		g.stats.TimeToFirstToken = g.firstTok.Sub(g.start)
	}
	_, kv := g.w.lm.state()
	g.stats.KVBytes = kv
	g.stats.MemoryBytes = residentBytes()
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// residentBytes is the process's resident set size (Linux /proc), or the
// Go runtime's obtained memory elsewhere.
func residentBytes() int64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 2 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys)
}
