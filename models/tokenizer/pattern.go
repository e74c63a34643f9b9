package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
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

// unicodeSpaceClass is the White_Space property, which is what \s means in
// the Oniguruma engine Hugging Face tokenizers uses (Go's \s is ASCII only).
const unicodeSpaceClass = `\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

// translateRegex rewrites \s and \S to their Unicode meaning and rejects
// lookaround, which Go's regexp lacks.
func translateRegex(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			n := p[i+1]
			i++
			switch {
			case n == 's' && inClass:
				b.WriteString(unicodeSpaceClass)
			case n == 's':
				b.WriteString("[" + unicodeSpaceClass + "]")
			case n == 'S' && !inClass:
				b.WriteString("[^" + unicodeSpaceClass + "]")
			case n == 'S':
				return "", fmt.Errorf("regex %q: \\S inside a character class is not supported", p)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
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

// Character classes of the scanners. isSpace is Unicode White_Space
// (Oniguruma's \s); letters and numbers are the L and N general categories.
func isSpace(r rune) bool  { return unicode.IsSpace(r) }
func isLetter(r rune) bool { return unicode.IsLetter(r) }
func isNumber(r rune) bool { return unicode.IsNumber(r) }

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return !isSpace(r) && !isLetter(r) && !isNumber(r) }

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
