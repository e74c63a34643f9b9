package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// matcher finds the non-overlapping matches of a pattern in s, leftmost
// first, as byte ranges [start, end), the way a backtracking regex engine's
// find-all does. Empty matches are never returned.
type matcher interface {
	findAll(s string) [][2]int
}

// Pre-tokenization regexes with lookahead that Go's regexp cannot compile.
// They are recognised verbatim and run by hand-written scanners.
const (
	// llama3Pattern is the Llama 3 (tiktoken cl100k-style) pattern.
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// qwen2Pattern is the Qwen 2 / Qwen 3 pattern: as Llama 3 but digits one by one.
	qwen2Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// gpt2Pattern is the pattern of the ByteLevel pre-tokenizer with use_regex.
	gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// newRegexMatcher returns a matcher for a tokenizer.json Regex pattern.
func newRegexMatcher(pattern string) (matcher, error) {
	switch pattern {
	case llama3Pattern:
		return cl100kScanner{maxDigits: 3}, nil
	case qwen2Pattern:
		return cl100kScanner{maxDigits: 1}, nil
	case gpt2Pattern:
		return gpt2Scanner{}, nil
	}
	translated, err := translateRegex(pattern)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(translated)
	if err != nil {
		return nil, fmt.Errorf("regex %q is not supported (Go regexp: %v)", pattern, err)
	}
	return goRegexp{re}, nil
}

// goRegexp runs a lookaround-free pattern with Go's regexp, whose
// leftmost-first semantics equal a backtracking engine's for such patterns.
type goRegexp struct{ re *regexp.Regexp }

func (g goRegexp) findAll(s string) [][2]int {
	var out [][2]int
	for _, m := range g.re.FindAllStringIndex(s, -1) {
		if m[1] > m[0] {
			out = append(out, [2]int{m[0], m[1]})
		}
	}
	return out
}

// literalMatcher matches a fixed string (Split and Replace "String" patterns).
type literalMatcher struct{ lit string }

func (l literalMatcher) findAll(s string) [][2]int {
	if l.lit == "" {
		return nil
	}
	var out [][2]int
	for off := 0; ; {
		i := strings.Index(s[off:], l.lit)
		if i < 0 {
			return out
		}
		out = append(out, [2]int{off + i, off + i + len(l.lit)})
		off += i + len(l.lit)
	}
}

// escapeClass returns the class ranges (without brackets) that the
// Oniguruma escape \<c> matches, and whether c names such a class: \s, \d
// and \w and their negations \S, \D and \W, all Unicode-aware as in
// Hugging Face's regex engine (Go's own are ASCII-only).
func escapeClass(c byte) (string, bool) {
	var in func(p uint16) bool
	switch c | 0x20 {
	case 's':
		in = func(p uint16) bool { return p&propSpace != 0 }
	case 'd':
		in = func(p uint16) bool { return p&propGC == gcNd }
	case 'w':
		in = func(p uint16) bool { return p&propOnigWord != 0 }
	default:
		return "", false
	}
	if c >= 'A' && c <= 'Z' {
		pos := in
		in = func(p uint16) bool { return !pos(p) }
	}
	return regexClass(in), true
}

// propertyClass parses a \p{Name}, \P{Name}, \p{^Name} or \pN escape at the
// start of p (just after the backslash) naming a general category, and
// returns the class ranges it matches and the escape's length. ok is false
// for other properties (scripts, binary properties), which are left to Go.
func propertyClass(p string) (ranges string, n int, ok bool) {
	if len(p) < 2 || (p[0] != 'p' && p[0] != 'P') {
		return "", 0, false
	}
	negate := p[0] == 'P'
	var name string
	if p[1] == '{' {
		end := strings.IndexByte(p, '}')
		if end < 0 {
			return "", 0, false
		}
		name, n = p[2:end], end+1
		if strings.HasPrefix(name, "^") {
			name, negate = name[1:], !negate
		}
	} else {
		name, n = p[1:2], 2
	}
	mask, ok := gcClassMask(name)
	if !ok {
		return "", 0, false
	}
	return regexClass(func(q uint16) bool { return gcIn(q, mask) != negate }), n, true
}

// writeClass writes class ranges, bracketed unless already inside a class;
// an empty class outside brackets becomes one that matches nothing.
func writeClass(b *strings.Builder, ranges string, inClass bool) {
	switch {
	case inClass:
		b.WriteString(ranges)
	case ranges == "":
		b.WriteString(`[^\x{0}-\x{10ffff}]`)
	default:
		b.WriteString("[" + ranges + "]")
	}
}

// translateRegex rewrites a tokenizer.json regex for Go's regexp: \s, \d,
// \w, their negations and \p{..} general categories become explicit classes
// from the package's Unicode tables (the version Hugging Face's engine uses),
// and lookaround, which Go's regexp lacks, is rejected.
func translateRegex(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			n := p[i+1]
			if ranges, ok := escapeClass(n); ok {
				i++
				writeClass(&b, ranges, inClass)
				continue
			}
			if ranges, l, ok := propertyClass(p[i+1:]); ok {
				i += l
				writeClass(&b, ranges, inClass)
				continue
			}
			i++
			b.WriteByte('\\')
			b.WriteByte(n)
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// A ']' or '^]' right after '[' is literal.
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		case !inClass && (strings.HasPrefix(p[i:], "(?=") || strings.HasPrefix(p[i:], "(?!") ||
			strings.HasPrefix(p[i:], "(?<=") || strings.HasPrefix(p[i:], "(?<!")):
			return "", fmt.Errorf("regex %q uses lookaround, which is not supported", p)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// contraction matches 's 't 're 've 'm 'll 'd at i (ASCII letters, case
// folded when fold is set) and returns the match length in bytes.
func contraction(s string, i int, fold bool) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return 0
	}
	lower := func(c byte) byte {
		if fold && c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	switch lower(s[i+1]) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && lower(s[i+2]) == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && lower(s[i+2]) == 'l' {
			return 3
		}
	}
	return 0
}

// spaceRun returns the end of the run of whitespace starting at i, the start
// of its last rune, and the end of its last \r or \n (-1 if none).
func spaceRun(s string, i int) (end, lastStart, lastNL int) {
	end, lastStart, lastNL = i, i, -1
	for end < len(s) {
		r, n := runeAt(s, end)
		if !isSpace(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = end + 1
		}
		lastStart = end
		end += n
	}
	return end, lastStart, lastNL
}

// whitespaceTail applies \s+(?!\S)|\s+ at a whitespace rune at i: the whole
// run if it ends the text or is one rune long, else the run minus its last
// rune (which then prefixes the following word).
func whitespaceTail(s string, i, end, lastStart int) int {
	if end == len(s) || lastStart == i {
		return end
	}
	return lastStart
}

// cl100kScanner runs llama3Pattern (maxDigits 3) or qwen2Pattern (maxDigits 1):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,maxDigits} |
//	 ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
//
// Alternatives are tried in order at each position, as a backtracking engine
// does; every rune is matched by some alternative, so matches tile the text.
type cl100kScanner struct{ maxDigits int }

func (c cl100kScanner) findAll(s string) [][2]int {
	out := make([][2]int, 0, len(s)/4+1)
	for i := 0; i < len(s); {
		end := c.matchAt(s, i)
		out = append(out, [2]int{i, end})
		i = end
	}
	return out
}

func (c cl100kScanner) matchAt(s string, i int) int {
	if n := contraction(s, i, true); n > 0 {
		return i + n
	}
	r0, n0 := runeAt(s, i)
	r1, n1 := runeAt(s, i+n0)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	start := -1
	if isLetter(r0) {
		start = i
	} else if r0 != '\r' && r0 != '\n' && !isNumber(r0) && isLetter(r1) {
		start = i + n0 + n1
	}
	if start >= 0 {
		j := start
		if start == i {
			j = i + n0
		}
		for j < len(s) {
			r, n := runeAt(s, j)
			if !isLetter(r) {
				break
			}
			j += n
		}
		return j
	}
	// \p{N}{1,maxDigits}
	if isNumber(r0) {
		j := i + n0
		for k := 1; k < c.maxDigits && j < len(s); k++ {
			r, n := runeAt(s, j)
			if !isNumber(r) {
				break
			}
			j += n
		}
		return j
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n]*
	j := -1
	if r0 == ' ' && r1 >= 0 && isOther(r1) {
		j = i + n0
	} else if isOther(r0) {
		j = i
	}
	if j >= 0 {
		for j < len(s) {
			r, n := runeAt(s, j)
			if !isOther(r) {
				break
			}
			j += n
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// r0 is whitespace here: \s*[\r\n]+ | \s+(?!\S) | \s+
	end, lastStart, lastNL := spaceRun(s, i)
	if lastNL > 0 {
		return lastNL
	}
	if end == i { // not reachable for valid classes; never loop forever
		return i + n0
	}
	return whitespaceTail(s, i, end, lastStart)
}

// gpt2Scanner runs gpt2Pattern:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
type gpt2Scanner struct{}

func (gpt2Scanner) findAll(s string) [][2]int {
	out := make([][2]int, 0, len(s)/4+1)
	for i := 0; i < len(s); {
		end := gpt2MatchAt(s, i)
		out = append(out, [2]int{i, end})
		i = end
	}
	return out
}

// gpt2Classes are the classes of the " ?X+" alternatives, in pattern order.
var gpt2Classes = [...]func(rune) bool{isLetter, isNumber, isOther}

func gpt2MatchAt(s string, i int) int {
	if n := contraction(s, i, false); n > 0 {
		return i + n
	}
	r0, n0 := runeAt(s, i)
	r1, _ := runeAt(s, i+n0)
	for _, class := range gpt2Classes {
		j := -1
		if r0 == ' ' && r1 >= 0 && class(r1) {
			j = i + n0
		} else if class(r0) {
			j = i
		}
		if j < 0 {
			continue
		}
		for j < len(s) {
			r, n := runeAt(s, j)
			if !class(r) {
				break
			}
			j += n
		}
		return j
	}
	end, lastStart, _ := spaceRun(s, i)
	if end == i {
		return i + n0
	}
	return whitespaceTail(s, i, end, lastStart)
}
