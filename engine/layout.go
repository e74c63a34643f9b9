package engine

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// This file finds where each message's content lies in a rendered,
// tokenized prompt (token positions and bytes), for Layout, FitCheck, pins
// and Summarize, in time linear in the prompt's length.

// Decoder is implemented by a Tokenizer that can decode a run of ids to
// text at once (as Hugging Face's decode with special tokens kept). The
// engine uses it to map token positions to text offsets; a Tokenizer
// without it gets them from its StreamDecoder, token by token, which is
// slower.
type Decoder interface {
	// Decode returns the text of ids.
	Decode(ids []int32) string
}

// offsetBlock is how many tokens one block of offsets covers: a position's
// byte offset costs one decode of at most this many ids.
const offsetBlock = 64

// offsets maps token positions of ids to byte offsets in text, their
// decoding. The ids are cut into blocks whose decodings concatenate to
// text (a cut is moved where decoding across it differs from decoding
// each side, as with a character split over byte tokens); within a block
// a position's offset is the length of the decoding of the ids before it.
type offsets struct {
	first int // position of ids[0] (token arguments are positions)
	ids   []int32
	dec   func([]int32) string
	text  string
	start []int // token index of each block's first id; last entry len(ids)
	base  []int // byte offset in text of each block's start; last len(text)
}

// newOffsets decodes ids, which sit at positions first.., in blocks.
func newOffsets(first int, ids []int32, dec func([]int32) string) *offsets {
	o := &offsets{first: first, ids: ids, dec: dec, start: []int{0}}
	for b := offsetBlock; b < len(ids); b += offsetBlock {
		lo, hi := max(0, b-3), min(len(ids), b+3)
		if dec(ids[lo:hi]) == dec(ids[lo:b])+dec(ids[b:hi]) {
			o.start = append(o.start, b)
		}
	}
	o.start = append(o.start, len(ids))
	var sb strings.Builder
	o.base = make([]int, len(o.start))
	for k := 0; k+1 < len(o.start); k++ {
		o.base[k] = sb.Len()
		sb.WriteString(dec(ids[o.start[k]:o.start[k+1]]))
	}
	o.text = sb.String()
	o.base[len(o.base)-1] = len(o.text)
	return o
}

// streamDecode is a Decoder made from a StreamDecoder (every id decoded
// afresh: slower than a real Decoder, used only without one).
func streamDecode(tok Tokenizer) func([]int32) string {
	return func(ids []int32) string {
		d := tok.NewStream()
		var sb strings.Builder
		for _, id := range ids {
			sb.WriteString(d.Add(id))
		}
		sb.WriteString(d.Flush())
		return sb.String()
	}
}

// decoder is the tokenizer's Decode, or one made from its stream decoder.
func (w promptTools) decoder() func([]int32) string {
	if d, ok := w.tok.(Decoder); ok {
		return d.Decode
	}
	return streamDecode(w.tok)
}

// answerLayout places an answer of ids at positions first.. whose shown
// text is text, as message index.
func (w promptTools) answerLayout(index, first int, ids []int32, text string) *promptLayout {
	pl := &promptLayout{offs: newOffsets(first, ids, w.decoder())}
	if len(ids) > 0 {
		pl.msgs = []placedMessage{{index: index, content: text, text: Span{0, len(pl.offs.text)}, tokens: Span{first, first + len(ids)}}}
	}
	return pl
}

// pinned returns the token spans of the pinned messages, sorted.
func (pl *promptLayout) pinned() []Span {
	var out []Span
	for _, m := range pl.msgs {
		if m.pinned {
			out = append(out, m.tokens)
		}
	}
	return mergeSpans(out)
}

// block is the index of the block holding token t (t < len(ids)).
func (o *offsets) block(t int) int {
	return sort.Search(len(o.start)-1, func(k int) bool { return o.start[k+1] > t })
}

// byteAt is the byte offset in text where the token at position t begins
// (len(text) past the end).
func (o *offsets) byteAt(t int) int {
	t -= o.first
	if t >= len(o.ids) {
		return len(o.text)
	}
	k := o.block(t)
	if t == o.start[k] {
		return o.base[k]
	}
	return min(o.base[k]+len(o.dec(o.ids[o.start[k]:t])), o.base[k+1])
}

// tokenAt is the position of the token whose text holds byte q: the
// largest t with byteAt(t) <= q (the end position for q >= len(text)).
func (o *offsets) tokenAt(q int) int {
	if q >= len(o.text) {
		return o.first + len(o.ids)
	}
	k := sort.Search(len(o.base)-1, func(k int) bool { return o.base[k+1] > q })
	lo, hi := o.start[k], o.start[k+1]-1 // answer in [lo, hi], indexes into ids
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if o.byteAt(o.first+mid) <= q {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return o.first + lo
}

// promptLayout is where the messages of a rendered prompt lie.
type promptLayout struct {
	offs *offsets
	msgs []placedMessage
}

// placedMessage is one message found in the prompt.
type placedMessage struct {
	index   int    // MessageSpan.Index
	content string // the message's Content
	lead    int    // bytes of Content before the part the template wrote (trimmed whitespace)
	text    Span   // bytes of the written part in offs.text
	tokens  Span   // token positions of the written part
	pinned  bool
}

// layoutPrompt finds the content of each message of conv (as rendered with
// addGenerationPrompt into the prompt ids) in the decoded prompt. index[i]
// is the MessageSpan.Index of conv[i]. The template is rendered once more
// with each content replaced by a marker, which gives the template's own
// text between contents; messages whose content cannot be found (a
// template that drops or rewrites them) are left out.
func (w promptTools) layoutPrompt(conv []Message, index []int, ids []int32, addGenerationPrompt bool) *promptLayout {
	pl := &promptLayout{offs: newOffsets(0, ids, w.decoder())}
	text := pl.offs.text
	between := w.templateText(conv, addGenerationPrompt)
	pos := 0
	for i, m := range conv {
		written := strings.TrimSpace(m.Content)
		if written == "" {
			continue
		}
		lead := strings.Index(m.Content, written)
		at := -1
		if between != nil {
			// The template's text before this content must come next.
			if before := between[i]; strings.HasPrefix(text[pos:], before) && strings.HasPrefix(text[pos+len(before):], written) {
				at = pos + len(before)
			}
		}
		if at < 0 {
			k := strings.Index(text[pos:], written)
			if k < 0 {
				continue
			}
			at = pos + k
		}
		end := at + len(written)
		pl.msgs = append(pl.msgs, placedMessage{
			index:   index[i],
			content: m.Content,
			lead:    lead,
			text:    Span{at, end},
			tokens:  Span{pl.offs.tokenAt(at), pl.offs.tokenAt(max(at, end-1)) + 1},
			pinned:  m.Pinned,
		})
		pos = end
	}
	return pl
}

// templateText renders conv with every content replaced by a marker and
// returns, per message, the template's text between the previous content
// (or the start) and this one; nil when the markers do not come out in
// order (the template rewrites or drops contents).
func (w promptTools) templateText(conv []Message, addGenerationPrompt bool) []string {
	marked := make([]Message, len(conv))
	marker := func(i int) string { return fmt.Sprintf("\uE000mlxchat%d\uE001", i) }
	for i, m := range conv {
		marked[i] = m
		if strings.TrimSpace(m.Content) != "" {
			marked[i].Content = marker(i)
		}
	}
	out, err := w.tmpl.Render(marked, addGenerationPrompt)
	if err != nil {
		return nil
	}
	between := make([]string, len(conv))
	pos := 0
	for i, m := range marked {
		if m.Content == conv[i].Content {
			continue // no content of its own
		}
		k := strings.Index(out[pos:], m.Content)
		if k < 0 {
			return nil
		}
		between[i] = out[pos : pos+k]
		pos += k + len(m.Content)
	}
	return between
}

// spans returns the message spans given the live positions of the cache.
func (pl *promptLayout) spans(live []Span) []MessageSpan {
	out := make([]MessageSpan, 0, len(pl.msgs))
	for _, m := range pl.msgs {
		out = append(out, pl.span(m, live))
	}
	return out
}

// span is one message's MessageSpan under the live positions.
func (pl *promptLayout) span(m placedMessage, live []Span) MessageSpan {
	ms := MessageSpan{Index: m.index, Tokens: m.tokens, Pinned: m.pinned}
	ms.Live = overlapLen(m.tokens, live)
	ms.Trimmed = m.tokens.Len() - ms.Live
	switch {
	case ms.Trimmed == 0:
		ms.CutAt = 0
	case ms.Live == 0:
		ms.CutAt = len(m.content)
	default:
		t := lastMissing(m.tokens, live) + 1
		if t >= m.tokens.End {
			// The message's end was trimmed (kept only by the sink or a
			// pin at its start): nothing after the cut is live.
			ms.CutAt = len(m.content)
			break
		}
		at := pl.offs.byteAt(t) - m.text.Start + m.lead
		ms.CutAt = runeStart(m.content, max(0, min(at, len(m.content))))
	}
	return ms
}

// runeStart moves byte offset i of s back to the start of its character.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// overlapLen counts the positions of s in the sorted, disjoint spans.
func overlapLen(s Span, spans []Span) int {
	n := 0
	for _, r := range spans {
		if lo, hi := max(s.Start, r.Start), min(s.End, r.End); hi > lo {
			n += hi - lo
		}
	}
	return n
}

// lastMissing is the last position of s not in the sorted, disjoint
// spans (s.Start-1 when all are there).
func lastMissing(s Span, spans []Span) int {
	p := s.End - 1
	for i := len(spans) - 1; i >= 0 && p >= s.Start; i-- {
		r := spans[i]
		if r.Start > p {
			continue
		}
		if r.End <= p {
			return p
		}
		p = r.Start - 1
	}
	return p
}

// liveAfter is the live set of the global layers after prompt positions
// [0, n) are prefilled under cap maxKV (0 = unlimited) with the never
// trimmed positions fixed (the sink and the pins, sorted and disjoint):
// every fixed position below n, plus the newest positions outside them up
// to maxKV keys in all (trimming drops the oldest other keys first).
func liveAfter(n, maxKV int, fixed []Span) []Span {
	if maxKV == 0 || n <= maxKV {
		return []Span{{0, n}}
	}
	var kept []Span
	nFixed := 0
	for _, f := range fixed {
		if f.Start >= n {
			break
		}
		f.End = min(f.End, n)
		kept = append(kept, f)
		nFixed += f.Len()
	}
	room := max(0, maxKV-nFixed)
	// Walk down from n-1, taking positions outside the fixed runs.
	var recent []Span
	p := n
	for i := len(kept) - 1; room > 0 && p > 0; i-- {
		lo := 0
		if i >= 0 {
			lo = kept[i].End
		}
		if take := min(room, p-lo); take > 0 {
			recent = append(recent, Span{p - take, p})
			room -= take
		}
		if i >= 0 {
			p = kept[i].Start
		} else {
			p = 0
		}
	}
	all := append(kept, recent...)
	sort.Slice(all, func(i, j int) bool { return all[i].Start < all[j].Start })
	return mergeSpans(all)
}

// mergeSpans merges sorted spans that touch or overlap.
func mergeSpans(s []Span) []Span {
	var out []Span
	for _, r := range s {
		if r.Len() <= 0 {
			continue
		}
		if n := len(out); n > 0 && r.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}
