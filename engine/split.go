package engine

import (
	"strings"
	"unicode/utf8"
)

// splitDocument cuts doc into consecutive byte ranges whose token counts
// (count) fit in budget, cutting on heading and paragraph boundaries, and
// inside a paragraph too long for one piece on sentence, then line, then
// word boundaries, and as a last resort anywhere between characters. A
// heading starts a new piece when the current one is at least half full.
// Every byte of doc is in exactly one range. count is called on each
// paragraph once and on the parts of oversized ones, so the work is linear
// in the document's length.
func splitDocument(doc string, budget int, count func(string) int) []Span {
	type block struct {
		Span
		tokens  int
		heading bool
	}
	var blocks []block
	for _, b := range paragraphs(doc) {
		text := doc[b.Start:b.End]
		n := count(text)
		if n <= budget {
			blocks = append(blocks, block{b, n, isHeading(text)})
			continue
		}
		for _, part := range splitOversized(doc, b, budget, count, 0) {
			blocks = append(blocks, block{part.Span, part.tokens, false})
		}
	}
	var out []Span
	cur, used := Span{}, 0
	for _, b := range blocks {
		full := used > 0 && (used+b.tokens > budget || (b.heading && 2*used >= budget))
		if full {
			out = append(out, cur)
			cur, used = Span{b.Start, b.Start}, 0
		}
		if used == 0 && cur.Len() == 0 {
			cur.Start = b.Start
		}
		cur.End = b.End
		used += b.tokens + 1 // a token of slack per joint
	}
	if cur.Len() > 0 {
		out = append(out, cur)
	}
	return out
}

// paragraphs cuts doc into blocks ending after a blank line (one or more
// empty or whitespace-only lines) or before a Markdown heading line.
func paragraphs(doc string) []Span {
	var out []Span
	start, i := 0, 0
	blank := false // the previous line was blank
	for i < len(doc) {
		end := strings.IndexByte(doc[i:], '\n')
		if end < 0 {
			end = len(doc)
		} else {
			end += i + 1
		}
		line := doc[i:end]
		isBlank := strings.TrimSpace(line) == ""
		switch {
		case !isBlank && blank && i > start:
			out = append(out, Span{start, i})
			start = i
		case !isBlank && isHeading(line) && i > start:
			out = append(out, Span{start, i})
			start = i
		}
		blank = isBlank
		i = end
	}
	if start < len(doc) {
		out = append(out, Span{start, len(doc)})
	}
	return out
}

// isHeading reports whether text starts with a Markdown ATX heading.
func isHeading(text string) bool {
	t := strings.TrimLeft(text, " ")
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	return n >= 1 && n <= 6 && (n == len(t) || t[n] == ' ' || t[n] == '\t' || t[n] == '\n')
}

// counted is a part of a paragraph with its token count.
type counted struct {
	Span
	tokens int
}

// splitOversized cuts the paragraph b of doc at the coarsest kind of
// boundary (level 0 sentences, 1 lines, 2 words, 3 characters) that gives
// parts within budget, recursing to finer kinds for parts still too long.
func splitOversized(doc string, b Span, budget int, count func(string) int, level int) []counted {
	var cuts []int
	if level < 3 {
		cuts = boundaries(doc[b.Start:b.End], level)
	}
	if len(cuts) == 0 {
		if level < 3 {
			return splitOversized(doc, b, budget, count, level+1)
		}
		return splitChars(doc, b, budget, count)
	}
	// Units between cuts, packed greedily.
	var out []counted
	cur, used := Span{b.Start, b.Start}, 0
	prev := 0
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, counted{cur, used})
		}
	}
	for _, c := range append(cuts, b.Len()) {
		u := Span{b.Start + prev, b.Start + c}
		prev = c
		if u.Len() == 0 {
			continue
		}
		n := count(doc[u.Start:u.End])
		if n > budget {
			flush()
			out = append(out, splitOversized(doc, u, budget, count, level+1)...)
			cur, used = Span{u.End, u.End}, 0
			continue
		}
		if used > 0 && used+n > budget {
			flush()
			cur, used = Span{u.Start, u.Start}, 0
		}
		cur.End = u.End
		used += n + 1
	}
	flush()
	return out
}

// boundaries lists the byte offsets in text after which a part may end:
// after sentence ends (level 0), line ends (1) or spaces (2).
func boundaries(text string, level int) []int {
	var cuts []int
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		next := i + size
		switch level {
		case 0:
			if (r == '.' || r == '!' || r == '?') && next < len(text) && (text[next] == ' ' || text[next] == '\n') {
				cuts = append(cuts, next+1)
			} else if r == '。' || r == '！' || r == '？' {
				cuts = append(cuts, next)
			}
		case 1:
			if r == '\n' {
				cuts = append(cuts, next)
			}
		case 2:
			if r == ' ' || r == '\t' {
				cuts = append(cuts, next)
			}
		}
		i = next
	}
	if n := len(cuts); n > 0 && cuts[n-1] >= len(text) {
		cuts = cuts[:n-1]
	}
	return cuts
}

// splitChars cuts b into parts within budget at character boundaries,
// halving until each fits (text without spaces or line breaks).
func splitChars(doc string, b Span, budget int, count func(string) int) []counted {
	n := count(doc[b.Start:b.End])
	if n <= budget || b.Len() <= utf8.UTFMax {
		return []counted{{b, n}}
	}
	mid := b.Start + b.Len()/2
	for mid > b.Start && !utf8.RuneStart(doc[mid]) {
		mid--
	}
	return append(splitChars(doc, Span{b.Start, mid}, budget, count), splitChars(doc, Span{mid, b.End}, budget, count)...)
}
