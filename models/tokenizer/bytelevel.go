package tokenizer

import "unicode/utf8"

// byteLevelTables holds the GPT-2 byte-to-unicode mapping: printable bytes
// map to themselves, the others to code points from U+0100 upwards, so that
// every byte has a visible, non-space character.
type byteLevelTables struct {
	toRune   [256]rune
	toString [256]string
	fromRune map[rune]byte
}

func newByteLevelTables() *byteLevelTables {
	t := &byteLevelTables{fromRune: make(map[rune]byte, 256)}
	next := rune(256)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = next
			next++
		}
		t.toRune[b] = r
		t.toString[b] = string(r)
		t.fromRune[r] = byte(b)
	}
	return t
}

// encode maps raw bytes to their byte-level characters.
func (t *byteLevelTables) encode(s string) string {
	out := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		out = utf8.AppendRune(out, t.toRune[s[i]])
	}
	return string(out)
}

// decode maps a byte-level token back to raw bytes; ok is false when some
// character is not part of the mapping.
func (t *byteLevelTables) decode(s string) (raw string, ok bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, found := t.fromRune[r]
		if !found {
			return "", false
		}
		out = append(out, b)
	}
	return string(out), true
}
