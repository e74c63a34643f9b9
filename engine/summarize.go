package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// summarizeMark stands for the document in the rendered prompt: the text
// before it is the shared prefix of every piece's prompt.
const summarizeMark = "\uE000mlxchat-document\uE001"

// minPieceTokens is the least room for document text a piece must have;
// minAnswerTokens the least room for an answer that a small cap shrinks
// the default room to.
const (
	minPieceTokens  = 32
	minAnswerTokens = 16
)

// mapHeader opens piece i of n; combineHeader a combination of n summaries,
// each opened by partHeader.
func mapHeader(i, n int) string { return fmt.Sprintf("Part %d of %d of the document:\n\n", i, n) }

func combineHeader(n int) string {
	return fmt.Sprintf("Combine these summaries of %d consecutive parts of the document, in order, into one answer to the request above.\n\n", n)
}

func partHeader(i int) string { return fmt.Sprintf("Part %d:\n", i) }

// summarizer is the state of one Summarize request.
type summarizer struct {
	g      *generation
	r      Summarize
	prefix []int32 // shared prefix: the conversation and the instruction
	tail   string  // template text after the document (end of turn, reply header)
	room   int     // answer tokens per piece and per combination
	// Token counts (upper bounds) of the headers in the piece prompts.
	mapHdr, combineHdr, partHdr int
	budget                      int // tokens a piece's text (and its header) may take; -1 = no cap
	cap                         int // the cap no prompt and answer together exceed (0 = none)
	pieces                      []SummaryPiece
	total                       Stats // summed over every prompt
}

// summarize runs a Summarize request; like generate, every failure and
// panic becomes an Error event and leaves the engine usable.
func (e *Engine) summarize(j *job, r Summarize) {
	g := &generation{e: e, w: e.w, j: j, start: time.Now()}
	sm := &summarizer{g: g, r: r}
	touched := false
	var done *Done
	err := safely(func() error {
		var err error
		done, err = sm.run(&touched)
		return err
	})
	g.w.lm.clearAnchor()
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
	g.stats = sm.total
	g.finishStats()
	e.emit(j.id, g.stats)
	e.emit(j.id, *done)
}

// run does the work of summarize.
func (sm *summarizer) run(touched *bool) (*Done, error) {
	g, w := sm.g, sm.g.w
	s, err := w.requestSettings(sm.r.Settings)
	if err != nil {
		return nil, err
	}
	g.s = s
	if strings.TrimSpace(sm.r.Document) == "" {
		return nil, fmt.Errorf("summarize: the document is empty")
	}
	if sm.r.AnswerTokens < 0 {
		return nil, fmt.Errorf("summarize: answer tokens %d: want 0 (default) or a positive count", sm.r.AnswerTokens)
	}
	if g.j.ctx.Err() != nil {
		return &Done{Reason: DoneCancelled}, nil
	}
	instruction := strings.TrimSpace(sm.r.Instruction)
	if instruction == "" {
		instruction = DefaultSummarizeInstruction
	}
	conv, _ := withSystem(sm.r.Conversation, s)
	conv = append(conv[:len(conv):len(conv)], Message{Role: RoleUser, Content: instruction + "\n\n" + summarizeMark})
	rendered, err := w.forSettings(s).tmpl.Render(conv, true)
	if err != nil {
		return nil, err
	}
	head, tail, ok := strings.Cut(rendered, summarizeMark)
	if !ok {
		return nil, fmt.Errorf("summarize: the chat template dropped the document from the prompt")
	}
	if sm.prefix, err = w.tok.Encode(head); err != nil {
		return nil, fmt.Errorf("tokenizing prompt: %w", err)
	}
	sm.tail = tail
	tailIDs, err := w.tok.Encode(tail)
	if err != nil {
		return nil, fmt.Errorf("tokenizing prompt: %w", err)
	}

	capTokens := s.LiveCap(w.contextLength)
	sm.room = sm.r.AnswerTokens
	if sm.room == 0 {
		sm.room = 1024
		if capTokens > 0 {
			sm.room = min(1024, capTokens/4)
		}
	}
	if s.MaxTokens > 0 {
		sm.room = min(sm.room, s.MaxTokens)
	}
	count := func(text string) int {
		ids, _ := w.tok.Encode(text)
		return len(ids)
	}
	const big = 99999
	sm.mapHdr, sm.combineHdr, sm.partHdr = count(mapHeader(big, big)), count(combineHeader(big)), count(partHeader(big)+"\n\n")
	sm.budget, sm.cap = -1, capTokens // no cap: one piece
	if capTokens > 0 {
		if sm.r.AnswerTokens == 0 {
			// A small cap gets shorter answers rather than no room:
			// a combination must hold two of them beside the prompt.
			fits := (capTokens - len(sm.prefix) - len(tailIDs) - sm.combineHdr - 2*sm.partHdr) / 3
			sm.room = max(min(sm.room, fits), minAnswerTokens)
		}
		sm.budget = capTokens - len(sm.prefix) - len(tailIDs) - sm.room
		if need := max(sm.mapHdr+minPieceTokens, sm.combineHdr+2*(sm.room+sm.partHdr)); sm.budget < need {
			return nil, &SummarizeRoomError{PromptTokens: len(sm.prefix) + len(tailIDs), AnswerTokens: sm.room, Cap: capTokens,
				Left: max(0, sm.budget), Need: need, ShortestAnswers: sm.room <= minAnswerTokens}
		}
	}

	*touched = true
	if _, err := w.lm.configure(s.cacheConfig(s.SinkTokens, w.contextLength)); err != nil {
		return nil, err
	}
	w.restartWhy = ""

	doc := sm.r.Document
	var ranges []Span
	if sm.budget < 0 || count(doc) <= sm.budget {
		ranges = []Span{{0, len(doc)}}
	} else {
		ranges = splitDocument(doc, sm.budget-sm.mapHdr, count)
	}
	if len(ranges) == 1 {
		// The document fits: answer it directly, streamed.
		return sm.answer(doc, true)
	}

	// Map: one summary per piece, each after rewinding to the prefix.
	for i, r := range ranges {
		g.e.emit(g.j.id, SummarizeProgress{Phase: PhaseMap, Piece: i + 1, Pieces: len(ranges)})
		body := mapHeader(i+1, len(ranges)) + strings.TrimSpace(doc[r.Start:r.End])
		d, err := sm.answer(body, false)
		if err != nil {
			return nil, err
		}
		if d.Reason == DoneCancelled {
			return &Done{Reason: DoneCancelled, Pieces: sm.pieces}, nil
		}
		p := SummaryPiece{Phase: PhaseMap, Piece: i + 1, Pieces: len(ranges), SourceStart: r.Start, SourceEnd: r.End,
			Text: strings.TrimSpace(d.Text), Tokens: d.Tokens, Reason: d.Reason}
		sm.pieces = append(sm.pieces, p)
		g.e.emit(g.j.id, PieceSummary{Piece: p})
	}

	// Reduce: combine summaries in rounds until one answer is left.
	level := sm.pieces
	for round := 1; ; round++ {
		groups := sm.fitGroups(sm.group(level))
		final := len(groups) == 1
		var next []SummaryPiece
		for gi, grp := range groups {
			g.e.emit(g.j.id, SummarizeProgress{Phase: PhaseReduce, Piece: gi + 1, Pieces: len(groups), Round: round})
			d, err := sm.answer(combineBody(grp), final)
			if err != nil {
				return nil, err
			}
			if d.Reason == DoneCancelled {
				out := &Done{Reason: DoneCancelled, Pieces: sm.pieces}
				if final {
					out.Text, out.Tokens = d.Text, d.Tokens
				}
				return out, nil
			}
			if final {
				d.Pieces = sm.pieces
				return d, nil
			}
			p := SummaryPiece{Phase: PhaseReduce, Round: round, Piece: gi + 1, Pieces: len(groups),
				SourceStart: grp[0].SourceStart, SourceEnd: grp[len(grp)-1].SourceEnd,
				Text: strings.TrimSpace(d.Text), Tokens: d.Tokens, Reason: d.Reason}
			next = append(next, p)
			g.e.emit(g.j.id, PieceSummary{Piece: p})
		}
		level = next
	}
}

// combineBody is the prompt text that asks to combine summaries.
func combineBody(grp []SummaryPiece) string {
	var b strings.Builder
	b.WriteString(combineHeader(len(grp)))
	for i, p := range grp {
		b.WriteString(partHeader(i + 1))
		b.WriteString(p.Text)
		b.WriteString("\n\n")
	}
	return strings.TrimSpace(b.String())
}

// group packs consecutive summaries into combinations whose prompts fit
// the budget, at least two per combination (the budget has room for two
// answers), so every round shrinks the list. Sizes are the summaries'
// texts re-tokenized; a text that re-tokenizes longer than half the room
// of a combination (a model's odd bytes can) is cut to fit, marked "…".
func (sm *summarizer) group(level []SummaryPiece) [][]SummaryPiece {
	if sm.budget < 0 {
		return [][]SummaryPiece{level}
	}
	count := func(text string) int {
		ids, _ := sm.g.w.tok.Encode(text)
		return len(ids)
	}
	half := (sm.budget-sm.combineHdr)/2 - sm.partHdr
	sizes := make([]int, len(level))
	for i := range level {
		sizes[i] = count(level[i].Text)
		for sizes[i] > half && len(level[i].Text) > 0 {
			cut := runeStart(level[i].Text, len(level[i].Text)*half/sizes[i]*9/10)
			level[i].Text = level[i].Text[:cut] + "…"
			sizes[i] = count(level[i].Text)
		}
	}
	var groups [][]SummaryPiece
	var cur []SummaryPiece
	used := sm.combineHdr
	for i, p := range level {
		n := sizes[i] + sm.partHdr
		if len(cur) >= 2 && used+n > sm.budget {
			groups = append(groups, cur)
			cur, used = nil, sm.combineHdr
		}
		cur = append(cur, p)
		used += n
	}
	if len(cur) == 1 && len(groups) > 0 {
		// A lone last summary joins the previous combination when it
		// fits, else takes the previous one's last summary with it.
		last := groups[len(groups)-1]
		if joined := append(last[:len(last):len(last)], cur[0]); sm.fits(joined) {
			groups[len(groups)-1] = joined
			return groups
		}
		if len(last) > 2 {
			groups[len(groups)-1] = last[:len(last)-1]
			cur = []SummaryPiece{last[len(last)-1], cur[0]}
		}
	}
	return append(groups, cur)
}

// fits reports whether the combination's exact prompt leaves room for an
// answer under the cap.
func (sm *summarizer) fits(grp []SummaryPiece) bool {
	ids, err := sm.g.w.tok.Encode(combineBody(grp) + sm.tail)
	return err == nil && len(sm.prefix)+len(ids)+sm.room <= sm.cap
}

// fitGroups splits combinations whose exact prompt does not leave room
// for an answer under the cap into halves (the sizes group uses leave a
// token of slack per joint, which is not always enough).
func (sm *summarizer) fitGroups(groups [][]SummaryPiece) [][]SummaryPiece {
	if sm.cap == 0 {
		return groups
	}
	var out [][]SummaryPiece
	for _, grp := range groups {
		if len(grp) > 2 && !sm.fits(grp) {
			h := len(grp) / 2
			out = append(out, sm.fitGroups([][]SummaryPiece{grp[:h], grp[h:]})...)
			continue
		}
		out = append(out, grp)
	}
	return out
}

// answer prompts the model with the shared prefix, body and the template's
// tail, with the cache rewound to the prefix (prefilled once, then
// anchored), and decodes at most sm.room tokens; stream sends the answer
// as Token events (the final answer), else it is only collected.
func (sm *summarizer) answer(body string, stream bool) (*Done, error) {
	g, w := sm.g, sm.g.w
	if err := sm.toPrefix(); err != nil {
		return nil, err
	}
	bodyIDs, err := w.tok.Encode(body + sm.tail)
	if err != nil {
		return nil, fmt.Errorf("tokenizing prompt: %w", err)
	}
	ids := append(append([]int32(nil), sm.prefix...), bodyIDs...)
	maxTokens := sm.room
	if sm.cap > 0 {
		// The prompt and the answer stay under the cap: no trim ever.
		maxTokens = min(maxTokens, sm.cap-len(ids))
		if maxTokens < 1 {
			return nil, fmt.Errorf("summarize: a prompt of %d tokens leaves no room for an answer under the %d-token cap", len(ids), sm.cap)
		}
	}
	g.text.Reset()
	g.generated, g.answer, g.quiet = 0, nil, !stream
	g.s.MaxTokens = maxTokens
	g.stats = Stats{}
	logits, cancelled, err := g.prefill(ids[len(sm.prefix):], len(sm.prefix))
	sm.add(len(ids))
	if err != nil {
		return nil, err
	}
	if cancelled {
		return &Done{Reason: DoneCancelled}, nil
	}
	d, err := g.decode(ids, logits)
	sm.add(0)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// add sums the figures of the prompt just prefilled (promptLen > 0) or
// the answer just decoded into the request's stats.
func (sm *summarizer) add(promptLen int) {
	g, t := sm.g, &sm.total
	if promptLen > 0 {
		t.PromptTokens += promptLen
		t.ReusedTokens += len(sm.prefix)
		t.PrefillTokens += g.stats.PrefillTokens
		t.PrefillTime += g.stats.PrefillTime
		t.PromptTokPerSec = rate(t.PrefillTokens, t.PrefillTime)
	} else {
		t.DecodeTokens += g.stats.DecodeTokens
		t.DecodeTime += g.stats.DecodeTime
		t.DecodeTokPerSec = rate(t.DecodeTokens, t.DecodeTime)
	}
}

// toPrefix leaves the cache holding exactly the shared prefix: rewound to
// the anchor after a piece, or, the first time, the longest common prefix
// of what it held kept and the rest prefilled, then anchored there.
func (sm *summarizer) toPrefix() error {
	g, w := sm.g, sm.g.w
	n := len(sm.prefix)
	if len(w.cached) >= n && w.lm.anchorAt() == n && commonPrefix(w.cached, sm.prefix) == n {
		if len(w.cached) > n {
			if err := w.lm.rewind(len(w.cached) - n); err != nil {
				return fmt.Errorf("summarize: rewinding to the shared prefix: %w", err)
			}
			w.cached = w.cached[:n]
		}
		return nil
	}
	w.lm.clearAnchor()
	cs, _ := w.lm.state()
	// A sentinel token after the prefix lets planReuse keep all of it.
	plan := w.planReuse(append(append([]int32(nil), sm.prefix...), -1), cs, g.s.LiveCap(w.contextLength))
	if plan.rewind > 0 {
		if err := w.lm.rewind(plan.rewind); err != nil {
			plan.restart = RestartBeyondRewind
		} else {
			w.cached = w.cached[:len(w.cached)-plan.rewind]
		}
	}
	if plan.restart != "" && (cs.Seen > 0 || len(w.cached) > 0) {
		if err := w.reset(); err != nil {
			return err
		}
	}
	if keep := len(w.cached); keep < n {
		g.stats = Stats{}
		_, cancelled, err := g.prefill(sm.prefix[keep:], keep)
		sm.total.PrefillTokens += g.stats.PrefillTokens
		sm.total.PrefillTime += g.stats.PrefillTime
		if err != nil {
			return err
		}
		if cancelled {
			return nil // the piece's prefill sees the cancel next
		}
	}
	return w.lm.anchor()
}
