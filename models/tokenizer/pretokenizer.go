package tokenizer

import (
	"fmt"
	"strings"
)

// piece is a pre-token: a substring of a normalized section. atStart is set
// when it begins at offset 0 of the whole input (Metaspace's "first" scheme).
type piece struct {
	s       string
	atStart bool
}

// preTokenizer splits pieces into smaller pieces.
type preTokenizer interface {
	split(in []piece) []piece
}

// buildPreTokenizer turns a tokenizer.json pre_tokenizer into a
// preTokenizer; byteLevel reports whether a ByteLevel step is present, in
// which case BPE works on bytes.
func buildPreTokenizer(c *componentJSON) (pt preTokenizer, byteLevel bool, err error) {
	if c == nil {
		return nil, false, nil
	}
	switch c.Type {
	case "Sequence":
		var seq sequencePre
		for i, sub := range c.Pretokenizers {
			p, bl, err := buildPreTokenizer(sub)
			if err != nil {
				return nil, false, fmt.Errorf("pre_tokenizer Sequence[%d]: %w", i, err)
			}
			if p != nil {
				seq = append(seq, p)
			}
			byteLevel = byteLevel || bl
		}
		return seq, byteLevel, nil
	case "Split":
		if c.Pattern == nil {
			return nil, false, fmt.Errorf("Split pre_tokenizer without a pattern")
		}
		m, err := buildMatcher(c.Pattern)
		if err != nil {
			return nil, false, fmt.Errorf("Split pre_tokenizer: %w", err)
		}
		b, err := parseBehavior(c.Behavior)
		if err != nil {
			return nil, false, fmt.Errorf("Split pre_tokenizer: %w", err)
		}
		return splitPre{m: m, behavior: b, invert: c.Invert}, false, nil
	case "ByteLevel":
		p := byteLevelPre{addPrefixSpace: c.AddPrefixSpace != nil && *c.AddPrefixSpace}
		if c.UseRegex == nil || *c.UseRegex {
			p.re = gpt2Scanner{}
		}
		return p, true, nil
	case "Metaspace":
		m := metaspacePre{replacement: "▁", scheme: "always", splitOnReplacement: true}
		if c.Replacement != nil {
			m.replacement = *c.Replacement
		}
		if c.PrependScheme != nil {
			m.scheme = *c.PrependScheme
		} else if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			m.scheme = "never"
		}
		if c.Split != nil {
			m.splitOnReplacement = *c.Split
		}
		switch m.scheme {
		case "always", "first", "never":
		default:
			return nil, false, fmt.Errorf("Metaspace pre_tokenizer: unknown prepend_scheme %q (want always, first or never)", m.scheme)
		}
		return m, false, nil
	case "Digits":
		return digitsPre{individual: c.IndividualDigits}, false, nil
	case "WhitespaceSplit":
		return whitespaceSplitPre{}, false, nil
	default:
		return nil, false, fmt.Errorf("unsupported pre_tokenizer type %q", c.Type)
	}
}

func buildMatcher(p *patternJSON) (matcher, error) {
	switch {
	case p.String != nil:
		return literalMatcher{*p.String}, nil
	case p.Regex != nil:
		return newRegexMatcher(*p.Regex)
	default:
		return nil, fmt.Errorf("pattern has neither String nor Regex")
	}
}

type sequencePre []preTokenizer

func (s sequencePre) split(in []piece) []piece {
	for _, p := range s {
		in = p.split(in)
	}
	return in
}

// behavior is the SplitDelimiterBehavior of Hugging Face tokenizers.
type behavior int

const (
	removed behavior = iota
	isolated
	mergedWithPrevious
	mergedWithNext
	contiguous
)

func parseBehavior(s string) (behavior, error) {
	switch strings.ToLower(s) {
	case "removed":
		return removed, nil
	case "isolated", "":
		return isolated, nil
	case "mergedwithprevious", "merged_with_previous":
		return mergedWithPrevious, nil
	case "mergedwithnext", "merged_with_next":
		return mergedWithNext, nil
	case "contiguous":
		return contiguous, nil
	}
	return 0, fmt.Errorf("unknown split behavior %q", s)
}

// splitByMatches cuts s at the matches of m according to b, the way
// NormalizedString::split does in Hugging Face tokenizers.
func splitByMatches(s string, matches [][2]int, b behavior, invert bool) []string {
	// Mark every byte range as delimiter (match) or not.
	type span struct {
		lo, hi int
		delim  bool
	}
	spans := make([]span, 0, 2*len(matches)+1)
	prev := 0
	for _, m := range matches {
		if m[0] > prev {
			spans = append(spans, span{prev, m[0], invert})
		}
		spans = append(spans, span{m[0], m[1], !invert})
		prev = m[1]
	}
	if prev < len(s) {
		spans = append(spans, span{prev, len(s), invert})
	}
	var out []string
	switch b {
	case removed:
		for _, sp := range spans {
			if !sp.delim {
				out = append(out, s[sp.lo:sp.hi])
			}
		}
	case isolated:
		for _, sp := range spans {
			out = append(out, s[sp.lo:sp.hi])
		}
	case contiguous:
		for i := 0; i < len(spans); {
			j := i + 1
			for spans[i].delim && j < len(spans) && spans[j].delim {
				j++
			}
			out = append(out, s[spans[i].lo:spans[j-1].hi])
			i = j
		}
	case mergedWithPrevious:
		lo := 0
		for i, sp := range spans {
			if sp.delim || i == len(spans)-1 {
				out = append(out, s[lo:sp.hi])
				lo = sp.hi
			}
		}
	case mergedWithNext:
		lo := 0
		for i, sp := range spans {
			if sp.delim && sp.lo > lo {
				out = append(out, s[lo:sp.lo])
				lo = sp.lo
			}
			if i == len(spans)-1 {
				out = append(out, s[lo:sp.hi])
			}
		}
	}
	return out
}

type splitPre struct {
	m        matcher
	behavior behavior
	invert   bool
}

func (sp splitPre) split(in []piece) []piece {
	out := make([]piece, 0, len(in))
	for _, p := range in {
		for k, sub := range splitByMatches(p.s, sp.m.findAll(p.s), sp.behavior, sp.invert) {
			if sub != "" {
				out = append(out, piece{sub, p.atStart && k == 0})
			}
		}
	}
	return out
}

// byteLevelPre optionally adds a prefix space and splits with the GPT-2
// pattern. The byte-to-character mapping itself is done by the BPE step,
// which works on raw bytes.
type byteLevelPre struct {
	addPrefixSpace bool
	re             matcher
}

func (b byteLevelPre) split(in []piece) []piece {
	out := make([]piece, 0, len(in))
	for _, p := range in {
		s := p.s
		if b.addPrefixSpace && !strings.HasPrefix(s, " ") {
			s = " " + s
		}
		if b.re == nil {
			out = append(out, piece{s, p.atStart})
			continue
		}
		for k, m := range b.re.findAll(s) {
			out = append(out, piece{s[m[0]:m[1]], p.atStart && k == 0})
		}
	}
	return out
}

// metaspacePre replaces spaces with the replacement character, prepends one
// according to the scheme, and splits before each replacement character.
type metaspacePre struct {
	replacement        string
	scheme             string
	splitOnReplacement bool
}

func (m metaspacePre) split(in []piece) []piece {
	out := make([]piece, 0, len(in))
	for _, p := range in {
		s := strings.ReplaceAll(p.s, " ", m.replacement)
		if (m.scheme == "always" || (m.scheme == "first" && p.atStart)) && !strings.HasPrefix(s, m.replacement) {
			s = m.replacement + s
		}
		if !m.splitOnReplacement {
			out = append(out, piece{s, p.atStart})
			continue
		}
		for k, sub := range splitByMatches(s, literalMatcher{m.replacement}.findAll(s), mergedWithNext, false) {
			out = append(out, piece{sub, p.atStart && k == 0})
		}
	}
	return out
}

// digitsPre isolates digits, one by one or in runs.
type digitsPre struct{ individual bool }

func (d digitsPre) split(in []piece) []piece {
	out := make([]piece, 0, len(in))
	for _, p := range in {
		var matches [][2]int
		for i, r := range p.s {
			if !isRustNumeric(r) {
				continue
			}
			n := len(string(r))
			if !d.individual && len(matches) > 0 && matches[len(matches)-1][1] == i {
				matches[len(matches)-1][1] = i + n
			} else {
				matches = append(matches, [2]int{i, i + n})
			}
		}
		b := isolated
		if !d.individual {
			b = contiguous
		}
		for k, sub := range splitByMatches(p.s, matches, b, false) {
			out = append(out, piece{sub, p.atStart && k == 0})
		}
	}
	return out
}

// whitespaceSplitPre splits on whitespace and drops it.
type whitespaceSplitPre struct{}

func (whitespaceSplitPre) split(in []piece) []piece {
	out := make([]piece, 0, len(in))
	for _, p := range in {
		for k, f := range strings.FieldsFunc(p.s, isSpace) {
			out = append(out, piece{f, p.atStart && k == 0})
		}
	}
	return out
}
