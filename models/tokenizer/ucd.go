package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The Unicode properties the pipeline asks for come from unicode_tables.go,
// generated from Unicode's data at the version each Hugging Face component
// uses (Go's unicode package and golang.org/x/text are at 15.0, which makes
// letters and digits added in 15.1 and 16.0 punctuation, and normalize
// characters that HF's 9.0 normalizer leaves alone).
//
//go:generate sh mkunicode.sh

// props returns the property bits of r; out-of-range runes are unassigned.
func props(r rune) uint16 {
	if uint32(r) < 256 {
		return propLatin1[r]
	}
	if uint32(r) >= utf8.MaxRune+1 {
		return gcCn
	}
	key := uint32(r)<<11 | 0x7ff
	lo, hi := 0, len(propRuns)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if propRuns[m] <= key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return uint16(propRuns[lo-1] & 0x7ff)
}

// Sets of general categories, as bit masks over the gc values.
const (
	gcLetters = 1<<gcLl | 1<<gcLm | 1<<gcLo | 1<<gcLt | 1<<gcLu
	gcNumbers = 1<<gcNd | 1<<gcNl | 1<<gcNo
)

func gcIn(p uint16, mask uint32) bool { return mask>>(p&propGC)&1 != 0 }

// isSpace is White_Space: Oniguruma's \s, the regex crate's \s and Rust's
// char::is_whitespace alike (the property is the same in 16.0 and 17.0).
// isLetter and isNumber are Oniguruma's \p{L} and \p{N}.
func isSpace(r rune) bool  { return props(r)&propSpace != 0 }
func isLetter(r rune) bool { return gcIn(props(r), gcLetters) }
func isNumber(r rune) bool { return gcIn(props(r), gcNumbers) }

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool {
	p := props(r)
	return p&propSpace == 0 && !gcIn(p, gcLetters|gcNumbers)
}

// isRustNumeric is Rust's char::is_numeric (the Digits pre-tokenizer).
func isRustNumeric(r rune) bool { return props(r)&propNumeric != 0 }

// isRegexWord is the regex crate's \w (single_word added tokens).
func isRegexWord(r rune) bool { return props(r)&propRegexWord != 0 }

// gcClassMask maps Oniguruma's general category names (short and long,
// compared loosely) to the set of categories they stand for.
func gcClassMask(name string) (uint32, bool) {
	loose := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", " ", "", "-", "").Replace(s))
	}
	n := loose(name)
	var mask uint32
	for i, names := range gcNames {
		short, long := names[0], names[1]
		if n == loose(short) || n == loose(long) {
			return 1 << i, true
		}
		if len(short) == 2 && n == loose(short[:1]) {
			mask |= 1 << i
		}
	}
	if mask == 0 {
		switch n {
		case "letter":
			return gcLetters, true
		case "number":
			return gcNumbers, true
		case "mark", "combiningmark":
			return 1<<gcMc | 1<<gcMe | 1<<gcMn, true
		case "punctuation", "punct":
			return 1<<gcPc | 1<<gcPd | 1<<gcPe | 1<<gcPf | 1<<gcPi | 1<<gcPo | 1<<gcPs, true
		case "symbol":
			return 1<<gcSc | 1<<gcSk | 1<<gcSm | 1<<gcSo, true
		case "separator":
			return 1<<gcZl | 1<<gcZp | 1<<gcZs, true
		case "other":
			return 1<<gcCc | 1<<gcCf | 1<<gcCn | 1<<gcCo | 1<<gcCs, true
		case "lc", "casedletter":
			return 1<<gcLl | 1<<gcLt | 1<<gcLu, true
		}
	}
	return mask, mask != 0
}

// regexClass writes the code points whose properties satisfy in as Go
// regexp class ranges (without brackets), surrogates left out.
func regexClass(in func(p uint16) bool) string {
	var b strings.Builder
	emit := func(lo, hi rune) {
		if lo == hi {
			fmt.Fprintf(&b, `\x{%x}`, lo)
		} else {
			fmt.Fprintf(&b, `\x{%x}-\x{%x}`, lo, hi)
		}
	}
	start := rune(-1)
	for _, run := range propRuns {
		lo := rune(run >> 11)
		ok := in(uint16(run & 0x7ff))
		switch {
		case ok && start < 0:
			start = lo
		case !ok && start >= 0:
			emitSkippingSurrogates(emit, start, lo-1)
			start = -1
		}
	}
	if start >= 0 {
		emitSkippingSurrogates(emit, start, utf8.MaxRune)
	}
	return b.String()
}

func emitSkippingSurrogates(emit func(lo, hi rune), lo, hi rune) {
	const sLo, sHi = 0xd800, 0xdfff
	if lo <= sHi && hi >= sLo {
		if lo < sLo {
			emit(lo, sLo-1)
		}
		if hi > sHi {
			emit(sHi+1, hi)
		}
		return
	}
	emit(lo, hi)
}

// rustLower appends Rust's char::to_lowercase of r.
func rustLower(b []byte, r rune) []byte {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return append(b, byte(r))
	}
	for _, sp := range lowerSpecial {
		if sp.r == r {
			return append(b, sp.lower...)
		}
	}
	lo, hi := 0, len(lowerSimple)/2
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := lowerSimple[2*m]; {
		case c == r:
			return utf8.AppendRune(b, lowerSimple[2*m+1])
		case c < r:
			lo = m + 1
		default:
			hi = m
		}
	}
	return utf8.AppendRune(b, r)
}

// rustLowercase lowercases s code point by code point, as the Lowercase
// normalizer does (no context-dependent mappings such as final sigma).
func rustLowercase(s string) string {
	b := make([]byte, 0, len(s)+len(s)/8)
	for _, r := range s {
		b = rustLower(b, r)
	}
	return string(b)
}

// Hangul syllable composition constants (Unicode chapter 3.12).
const (
	hangulSBase  = 0xac00
	hangulLBase  = 0x1100
	hangulVBase  = 0x1161
	hangulTBase  = 0x11a7
	hangulLCount = 19
	hangulVCount = 21
	hangulTCount = 28
	hangulNCount = hangulVCount * hangulTCount
	hangulSCount = hangulLCount * hangulNCount
)

// ccc returns the canonical combining class of r (Unicode 9.0).
func ccc(r rune) uint8 {
	if r < 0x300 {
		return 0
	}
	key := uint32(r)<<8 | 0xff
	lo, hi := 0, len(cccRuns)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cccRuns[m] <= key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return uint8(cccRuns[lo-1])
}

// lookupDecomposition finds r in a decomposition table.
func lookupDecomposition(keys []rune, off []uint16, pool []rune, r rune) []rune {
	lo, hi := 0, len(keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch k := keys[m]; {
		case k == r:
			return pool[off[m]:off[m+1]]
		case k < r:
			lo = m + 1
		default:
			hi = m
		}
	}
	return nil
}

// unicodeForm is one of the four normalization forms, at the Unicode
// version of Hugging Face's normalizers (see normUnicodeVersion).
type unicodeForm struct{ compose, compat bool }

var (
	formNFC  = unicodeForm{compose: true}
	formNFD  = unicodeForm{}
	formNFKC = unicodeForm{compose: true, compat: true}
	formNFKD = unicodeForm{compat: true}
)

func (f unicodeForm) String(s string) string {
	inert := propNFCInert
	if f.compat {
		inert = propNFKCInert
	}
	changed := false
	for _, r := range s {
		if props(r)&inert == 0 {
			changed = true
			break
		}
	}
	if !changed {
		return s
	}
	buf := make([]rune, 0, len(s))
	for _, r := range s {
		buf = f.decompose(buf, r)
	}
	classes := make([]uint8, len(buf))
	for i, r := range buf {
		classes[i] = ccc(r)
	}
	canonicalOrder(buf, classes)
	if f.compose {
		buf = compose(buf, classes)
	}
	return string(buf)
}

func (f unicodeForm) decompose(buf []rune, r rune) []rune {
	if r < 0xa0 {
		return append(buf, r)
	}
	if s := r - hangulSBase; s >= 0 && s < hangulSCount {
		buf = append(buf, hangulLBase+s/hangulNCount, hangulVBase+(s%hangulNCount)/hangulTCount)
		if t := s % hangulTCount; t != 0 {
			buf = append(buf, hangulTBase+t)
		}
		return buf
	}
	var d []rune
	if f.compat {
		d = lookupDecomposition(compatKeys[:], compatOff[:], compatPool[:], r)
	} else {
		d = lookupDecomposition(canonKeys[:], canonOff[:], canonPool[:], r)
	}
	if d == nil {
		return append(buf, r)
	}
	return append(buf, d...)
}

// canonicalOrder sorts each run of non-starters by combining class, stably.
func canonicalOrder(buf []rune, classes []uint8) {
	for i := 1; i < len(buf); i++ {
		c := classes[i]
		if c == 0 {
			continue
		}
		j := i
		for j > 0 && classes[j-1] > c {
			buf[j], buf[j-1] = buf[j-1], buf[j]
			classes[j], classes[j-1] = classes[j-1], classes[j]
			j--
		}
	}
}

// composePair returns the primary composite of a and b, if any.
func composePair(a, b rune) (rune, bool) {
	if l := a - hangulLBase; l >= 0 && l < hangulLCount {
		if v := b - hangulVBase; v >= 0 && v < hangulVCount {
			return hangulSBase + (l*hangulVCount+v)*hangulTCount, true
		}
		return 0, false
	}
	if s := a - hangulSBase; s >= 0 && s < hangulSCount && s%hangulTCount == 0 {
		if t := b - hangulTBase; t > 0 && t < hangulTCount {
			return a + t, true
		}
		return 0, false
	}
	key := uint64(a)<<21 | uint64(b)
	lo, hi := 0, len(compPairs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch k := compPairs[m]; {
		case k == key:
			return compResults[m], true
		case k < key:
			lo = m + 1
		default:
			hi = m
		}
	}
	return 0, false
}

// compose applies canonical composition to a decomposed, ordered buffer.
func compose(buf []rune, classes []uint8) []rune {
	if len(buf) == 0 {
		return buf
	}
	starter := -1
	if classes[0] == 0 {
		starter = 0
	}
	last := -1 // class of the last character kept after the starter; -1: none
	if starter < 0 {
		last = int(classes[0])
	}
	out := 1
	for i := 1; i < len(buf); i++ {
		r, c := buf[i], int(classes[i])
		if starter >= 0 && (last == -1 || last < c) {
			if comp, ok := composePair(buf[starter], r); ok {
				buf[starter] = comp
				continue
			}
		}
		if c == 0 {
			starter = out
			last = -1
		} else {
			last = c
		}
		buf[out] = r
		out++
	}
	return buf[:out]
}
