package engine

import (
	"errors"
	"fmt"
	"math"
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
	reasoning strings.Builder // reasoning as emitted (Token.Reasoning)
	think     *thinkSplitter  // splits decoded text into reasoning and answer
	generated int             // answer tokens sampled (stop token excluded)
	answer    []int32         // the answer's token ids fed back (stop token excluded)
	quiet     bool            // collect the answer without Token events (a summary piece)
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
	s, err := w.requestSettings(r.Settings)
	if err != nil {
		return nil, err
	}
	g.s = s
	if g.j.ctx.Err() != nil {
		return &Done{Reason: DoneCancelled}, nil
	}
	conv, index := withSystem(r.Conversation, s)
	if len(conv) == 0 {
		return nil, fmt.Errorf("generate: empty conversation")
	}
	pt := w.forSettings(s)
	ids, err := pt.promptIDs(conv, true)
	if err != nil {
		return nil, err
	}
	pl := pt.layoutPrompt(conv, index, ids, true)
	sink, err := pt.sinkFor(s, conv, ids)
	if err != nil {
		return nil, err
	}
	pins := pl.pinned()
	if err := checkPins(s, w.contextLength, sink, pins); err != nil {
		return nil, err
	}

	*touched = true
	if err := g.prepareCache(ids, sink, pins); err != nil {
		return nil, err
	}
	reuse := len(w.cached)
	g.stats.PromptTokens = len(ids)
	g.stats.ReusedTokens = reuse

	logits, cancelled, err := g.prefill(ids[reuse:], reuse)
	if err != nil {
		return nil, err
	}
	g.emitLayout(pl, nil)
	if cancelled {
		return &Done{Reason: DoneCancelled}, nil
	}
	done, err := g.decode(ids, logits)
	if err != nil {
		return nil, err
	}
	g.emitLayout(pl, w.answerLayout(len(r.Conversation), len(ids), g.answer, done.Text))
	return done, nil
}

// requestSettings is the settings of a request: its own (validated) or
// the engine's current ones.
func (w *worker) requestSettings(own *Settings) (Settings, error) {
	if own == nil {
		return w.settings, nil
	}
	if err := own.Validate(); err != nil {
		return Settings{}, err
	}
	return own.Normalize(), nil
}

// withSystem puts Settings.System in front of a conversation that does not
// start with a system message, and returns each message's MessageSpan
// index (-1 for the added system prompt).
func withSystem(conv []Message, s Settings) ([]Message, []int) {
	index := make([]int, 0, len(conv)+1)
	if s.System != "" && (len(conv) == 0 || conv[0].Role != RoleSystem) {
		conv = append([]Message{{Role: RoleSystem, Content: s.System}}, conv...)
		index = append(index, -1)
	}
	for i := range len(conv) - len(index) {
		index = append(index, i)
	}
	return conv, index
}

// promptIDs renders and tokenizes conv.
func (w promptTools) promptIDs(conv []Message, addGenerationPrompt bool) ([]int32, error) {
	prompt, err := w.tmpl.Render(conv, addGenerationPrompt)
	if err != nil {
		// models/chat errors already say "rendering chat template".
		if !strings.Contains(err.Error(), "chat template") {
			err = fmt.Errorf("rendering chat template: %w", err)
		}
		return nil, err
	}
	ids, err := w.tok.Encode(prompt)
	if err != nil {
		return nil, fmt.Errorf("tokenizing prompt: %w", err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("generate: the prompt has no tokens")
	}
	return ids, nil
}

// sinkFor is the sink a request keeps: SinkTokens, or with KeepSystem the
// whole system prompt; it may use at most half of the live cap.
func (w promptTools) sinkFor(s Settings, conv []Message, ids []int32) (int, error) {
	sink := s.SinkTokens
	if s.KeepSystem {
		sink = max(sink, w.systemPrefix(conv, ids))
	}
	if c := s.LiveCap(w.contextLength); c > 0 && 2*sink > c {
		return 0, fmt.Errorf("%s: the %d-token system prompt kept as attention sink needs at most half of it; raise --max-kv-size or turn off keep-system", capName(s, c), sink)
	}
	return sink, nil
}

// capName names the live cap c of s in messages: "max-kv-size 4096", or
// "the model's 2048-token context (max-kv-size off)".
func capName(s Settings, c int) string {
	if s.MaxKV > 0 {
		return fmt.Sprintf("max-kv-size %d", s.MaxKV)
	}
	return fmt.Sprintf("the model's %d-token context (max-kv-size off)", c)
}

// checkPins says when the pinned messages' tokens and the sink need more
// than half of the live cap of s for a model of contextLength positions.
func checkPins(s Settings, contextLength, sink int, pins []Span) error {
	c := s.LiveCap(contextLength)
	if c == 0 || len(pins) == 0 {
		return nil
	}
	n := 0
	for _, p := range pins {
		n += max(0, p.End-max(p.Start, sink))
	}
	if sink+n > c/2 {
		return fmt.Errorf("pinned messages: %d tokens with the %d-token sink need %d, more than half of %s (%d); /unpin one or raise /kv",
			n, sink, sink+n, capName(s, c), c/2)
	}
	return nil
}

// prepareCache configures the cache for a prompt of ids (cap, sink,
// storage), reuses what it can (continue, rewind or reset; see
// planReuse), pins the pinned spans and fills the reuse figures of the
// stats. Afterwards w.cached is the kept prefix.
func (g *generation) prepareCache(ids []int32, sink int, pins []Span) error {
	w, s := g.w, g.s
	emptied, err := w.lm.configure(s.cacheConfig(sink, w.contextLength))
	if err != nil {
		return err
	}
	if emptied {
		w.cached = nil
		w.restartWhy = RestartKVBits
	}
	cs, _ := w.lm.state()
	plan := w.planReuse(ids, cs, s.LiveCap(w.contextLength))
	if plan.restart == "" && pinTrimmed(pins, len(w.cached)-plan.rewind, cs.Spans) {
		plan = reusePlan{restart: RestartPinned}
	}
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
	switch {
	case plan.restart == RestartEmpty && w.restartWhy != "":
		g.stats.CacheRestart = w.restartWhy
	case plan.restart != "":
		if cs.Seen > 0 || len(w.cached) > 0 {
			g.stats.CacheRestart = plan.restart
			if err := w.reset(); err != nil {
				return err
			}
		}
	case len(w.cached) > 0:
		// Rewinding never undoes a trim: every trimmed position lies in
		// the kept prefix.
		g.stats.ReusedTrimmed = cs.Trimmed
	}
	w.restartWhy = ""
	return w.lm.setPins(pins)
}

// pinTrimmed reports whether a pinned span lost tokens below keep (the
// prefix the cache keeps) to a trim: they are not among the live spans.
func pinTrimmed(pins []Span, keep int, live []Span) bool {
	for _, p := range pins {
		p.End = min(p.End, keep)
		if p.Len() > 0 && overlapLen(p, live) < p.Len() {
			return true
		}
	}
	return false
}

// emitLayout sends where the messages (and the answer, when given) lie in
// the cache now.
func (g *generation) emitLayout(pl, answer *promptLayout) {
	cs, _ := g.w.lm.state()
	msgs := pl.spans(cs.Spans)
	if answer != nil {
		// The answer's last token is sampled but never fed to the cache:
		// positions from Seen on are not trimmed, only not fed yet.
		live := mergeSpans(append(append([]Span(nil), cs.Spans...), Span{cs.Seen, math.MaxInt}))
		msgs = append(msgs, answer.spans(live)...)
	}
	g.e.emit(g.j.id, Layout{Messages: msgs, Spans: cs.Spans, Seen: cs.Seen})
}

// reusePlan is how a request reuses the cache: keep it as is, rewind
// it, or reset it.
type reusePlan struct {
	rewind  int    // tokens to drop from the end of the cache (0 = none)
	why     string // Rewind* reason when rewind > 0
	restart string // Restart* reason to reset the cache ("" = keep it)
}

// planReuse decides how the prompt ids reuse the cache, whose fed history
// is w.cached, under the live cap maxKV (0 = none): keep the longest common prefix of the two, but at most
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
	if a := w.lm.anchorAt(); keep > 0 && !w.lm.canRewind(p.rewind) && a > 0 && a <= keep && w.lm.canRewind(len(w.cached)-a) {
		// Too far back for the rewind slack, but the anchor (a document
		// summarized in pieces) is in reach: keep less, prefill more.
		p.rewind = len(w.cached) - a
		keep = a
	}
	if keep == 0 || !w.lm.canRewind(p.rewind) {
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
func (w promptTools) systemPrefix(conv []Message, ids []int32) int {
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

// prefill runs the prompt suffix in chunks, enforcing the live cap
// (Settings.LiveCap) before each one.
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
			w.trimCap = s.LiveCap(w.contextLength)
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
	g.reasoning.Reset()
	g.think = newThinkSplitter(w.thinkIDs != nil, w.thinkIDs.openAtEnd(prompt))
	t0 := time.Now()
	steps := 0
	// greedy: each step's next token comes from the model's argmax
	// (forwardArgmax), the same index Sample would take from the logits,
	// without them being copied to the host. next is that token, or -1
	// before the first step (the prompt's logits are sampled).
	greedy := sampler.Greedy()
	next := int32(-1)
	finish := func(reason DoneReason) *Done {
		if reason != DoneStopString {
			g.emitText(stream.Flush())
			g.emitText(matcher.flush())
		}
		g.emitParts(g.think.flush())
		g.stats.DecodeTokens = g.generated
		g.stats.DecodeTime = time.Since(t0)
		if steps > 0 {
			g.stats.DecodeTokPerSec = rate(steps, g.stats.DecodeTime)
		}
		return &Done{Reason: reason, Text: g.text.String(), Reasoning: g.reasoning.String(), Tokens: g.generated}
	}
	for {
		tok := next
		if tok < 0 {
			recent := history[max(0, len(history)-s.RepetitionWindow):]
			tok = sampler.Sample(logits, recent)
		}
		if g.firstTok.IsZero() {
			g.firstTok = time.Now()
		}
		if w.stops[tok] {
			return finish(DoneStop), nil
		}
		g.generated++
		history = append(history, tok)
		g.answer = history[len(prompt):]
		piece := ""
		if !w.isSpecial(tok) || w.thinkIDs.is(tok) {
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
		if greedy {
			next, tr, err = w.lm.forwardArgmax([]int32{tok})
		} else {
			logits, tr, err = w.lm.forward([]int32{tok})
		}
		if err != nil {
			return nil, fmt.Errorf("decode step %d: %w", steps+1, err)
		}
		if tr.Dropped > 0 {
			w.trimCap = s.LiveCap(w.contextLength)
			g.e.emit(g.j.id, Trim{Dropped: tr.Dropped, LiveBefore: tr.LiveBefore, LiveAfter: tr.LiveAfter, Kind: tr.Kind, Phase: "decode"})
		}
		steps++
		w.cached = append(w.cached, tok)
		g.e.emit(g.j.id, w.cacheState())
	}
}

// emitText splits decoded text into answer and reasoning (see
// thinkSplitter) and emits it.
func (g *generation) emitText(text string) {
	if g.think == nil {
		g.emitParts([]textPart{{text: text}})
		return
	}
	g.emitParts(g.think.add(text))
}

// emitParts adds answer and reasoning text and sends each part as a Token
// event (unless quiet).
func (g *generation) emitParts(parts []textPart) {
	for _, p := range parts {
		if p.text == "" {
			continue
		}
		if p.reasoning {
			g.reasoning.WriteString(p.text)
		} else {
			g.text.WriteString(p.text)
		}
		if !g.quiet {
			g.e.emit(g.j.id, Token{Text: p.text, Tokens: g.generated, Reasoning: p.reasoning})
		}
	}
}

// finishStats fills the time-to-first-token and memory figures.
func (g *generation) finishStats() {
	if !g.firstTok.IsZero() {
		g.stats.TimeToFirstToken = g.firstTok.Sub(g.start)
	}
	_, kv := g.w.lm.state()
	g.stats.KVBytes = kv
	cs, _ := g.w.lm.state()
	g.stats.KVBits = cs.KVBits
	g.stats.PinnedTokens = cs.Pinned
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
