package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// maximalSubpart returns how many bytes at the start of s form the longest
// prefix of a well-formed UTF-8 sequence (at least 1), and whether that
// prefix is incomplete only because s ended. It is called only where
// utf8.DecodeRuneInString reported an error, i.e. s[0] does not start a
// complete valid rune.
func maximalSubpart(s string) (n int, truncated bool) {
	b0 := s[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case b0 >= 0xC2 && b0 <= 0xDF:
		need = 1
	case b0 == 0xE0:
		need, lo = 2, 0xA0
	case b0 >= 0xE1 && b0 <= 0xEC, b0 == 0xEE, b0 == 0xEF:
		need = 2
	case b0 == 0xED:
		need, hi = 2, 0x9F
	case b0 == 0xF0:
		need, lo = 3, 0x90
	case b0 >= 0xF1 && b0 <= 0xF3:
		need = 3
	case b0 == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1, false
	}
	n = 1
	for k := 0; k < need; k++ {
		if n >= len(s) {
			return n, true
		}
		c := s[n]
		if c < lo || c > hi {
			return n, false
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	// A complete sequence would have been accepted by the caller.
	return n, false
}

// toValidUTF8 replaces every maximal subpart of an ill-formed sequence in s
// with one U+FFFD, the convention of the WHATWG TextDecoder, of Python's
// bytes.decode(errors="replace") and of Rust's String::from_utf8_lossy.
func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || size > 1 {
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		n, _ := maximalSubpart(s[i:])
		b.WriteString("\uFFFD")
		i += n
	}
	return b.String()
}

// incompleteSuffix reports how many trailing bytes of s are the beginning of
// a UTF-8 sequence that more bytes could still complete (0 if none).
func incompleteSuffix(s string) int {
	// A sequence is at most 4 bytes, so its lead byte is among the last 3.
	for back := 1; back <= 3 && back <= len(s); back++ {
		i := len(s) - back
		c := s[i]
		if c < 0x80 {
			return 0
		}
		if c >= 0xC0 { // a lead byte (or an invalid one)
			n, truncated := maximalSubpart(s[i:])
			if truncated && n == back {
				return back
			}
			return 0
		}
	}
	return 0
}
