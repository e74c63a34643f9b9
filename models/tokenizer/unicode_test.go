package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The Unicode tests compare the package's classifiers, code point by code
// point, with Hugging Face tokenizers' own, recorded in testdata by
// make_unicode_ref.mjs (HF's node bindings) or make_unicode_ref.py (its
// Python bindings). A missing reference fails the tests.

type unicodeRef struct {
	Tokenizers     string            `json:"tokenizers"`
	Classes        map[string]string `json:"classes"`
	Lowercase      string            `json:"lowercase"`
	NormalizerSize int               `json:"normalizer_block"`
	Normalizers    map[string]string `json:"normalizers"`
}

type unicodeEncodeRef struct {
	Tokenizers string `json:"tokenizers"`
	Cases      map[string][]struct {
		Text string  `json:"text"`
		IDs  []int32 `json:"ids"`
	} `json:"cases"`
}

func readRefJSON(t *testing.T, name string, v any) {
	t.Helper()
	path := filepath.Join("testdata", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("HF reference %s is missing (%v): make it with `node models/tokenizer/testdata/make_unicode_ref.mjs models/tokenizer/testdata` "+
			"after scripts/fetch-tokenizers.sh --with-hf, or with make_unicode_ref.py where Python tokenizers is installed", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// parseRanges reads "lo-hi lo ..." hex ranges into a membership bitmap.
func parseRanges(t *testing.T, s string) []bool {
	t.Helper()
	in := make([]bool, utf8.MaxRune+1)
	for _, f := range strings.Fields(s) {
		lo, hi, ok := strings.Cut(f, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 16, 32)
		b, err2 := strconv.ParseUint(hi, 16, 32)
		if err1 != nil || err2 != nil || a > b || b > utf8.MaxRune {
			t.Fatalf("bad range %q", f)
		}
		for c := a; c <= b; c++ {
			in[c] = true
		}
	}
	return in
}

func isSurrogate(r rune) bool { return r >= 0xd800 && r <= 0xdfff }

// unicodeClassifiers maps the reference's class names to the package's
// classifiers.
func unicodeClassifiers(t *testing.T) map[string]func(rune) bool {
	m := map[string]func(rune) bool{
		`onig \s`:            isSpace,
		`onig \d`:            func(r rune) bool { return props(r)&propGC == gcNd },
		`onig \w`:            func(r rune) bool { return props(r)&propOnigWord != 0 },
		"rust is_numeric":    isRustNumeric,
		"rust is_whitespace": isSpace,
		`regex \w`:           isRegexWord,
	}
	for _, gc := range []string{"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No",
		"P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So",
		"Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf", "Co", "Cn"} {
		mask, ok := gcClassMask(gc)
		if !ok {
			t.Fatalf("gcClassMask(%q) not found", gc)
		}
		m[`onig \p{`+gc+`}`] = func(r rune) bool { return gcIn(props(r), mask) }
	}
	return m
}

func TestUnicodeClassesMatchHF(t *testing.T) {
	var ref unicodeRef
	readRefJSON(t, "unicode_ref.json", &ref)
	ours := unicodeClassifiers(t)
	for name := range ours {
		if _, ok := ref.Classes[name]; !ok {
			t.Errorf("reference (tokenizers %s) has no class %q", ref.Tokenizers, name)
		}
	}
	names := make([]string, 0, len(ref.Classes))
	for name := range ref.Classes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		f, ok := ours[name]
		if !ok {
			t.Errorf("reference class %q has no classifier here", name)
			continue
		}
		want := parseRanges(t, ref.Classes[name])
		var diffs []string
		n := 0
		for r := rune(0); r <= utf8.MaxRune; r++ {
			if isSurrogate(r) {
				continue
			}
			if got := f(r); got != want[r] {
				n++
				if len(diffs) < 8 {
					diffs = append(diffs, fmt.Sprintf("U+%04X (HF %v)", r, want[r]))
				}
			}
		}
		if n > 0 {
			t.Errorf("%s: %d code points differ from HF tokenizers %s: %s", name, n, ref.Tokenizers, strings.Join(diffs, ", "))
		}
	}
	// The scanners' classes.
	letters, numbers, spaces := parseRanges(t, ref.Classes[`onig \p{L}`]), parseRanges(t, ref.Classes[`onig \p{N}`]), parseRanges(t, ref.Classes[`onig \s`])
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if isSurrogate(r) {
			continue
		}
		if isLetter(r) != letters[r] || isNumber(r) != numbers[r] || isOther(r) != (!letters[r] && !numbers[r] && !spaces[r]) {
			t.Fatalf("U+%04X: isLetter %v isNumber %v isOther %v; HF: letter %v number %v space %v",
				r, isLetter(r), isNumber(r), isOther(r), letters[r], numbers[r], spaces[r])
		}
	}
}

// TestTranslatedRegexClassesMatchHF checks the classes as they reach Go's
// regexp (translated by translateRegex): the character class Go parses from
// each translation must hold exactly the code points HF's does, and one
// translation is run over every code point end to end.
func TestTranslatedRegexClassesMatchHF(t *testing.T) {
	var ref unicodeRef
	readRefJSON(t, "unicode_ref.json", &ref)
	for _, tc := range []struct {
		pattern, class string
		negate         bool
	}{
		{`\p{L}`, `onig \p{L}`, false},
		{`\pL`, `onig \p{L}`, false},
		{`\p{Letter}`, `onig \p{L}`, false},
		{`\P{L}`, `onig \p{L}`, true},
		{`[^\p{L}]`, `onig \p{L}`, true},
		{`\p{N}`, `onig \p{N}`, false},
		{`[\p{Nd}]`, `onig \p{Nd}`, false},
		{`\p{M}`, `onig \p{M}`, false},
		{`\p{^M}`, `onig \p{M}`, true},
		{`\p{P}`, `onig \p{P}`, false},
		{`\p{Lu}`, `onig \p{Lu}`, false},
		{`\p{Uppercase_Letter}`, `onig \p{Lu}`, false},
		{`\p{Cn}`, `onig \p{Cn}`, false},
		{`\s`, `onig \s`, false},
		{`\S`, `onig \s`, true},
		{`[\S]`, `onig \s`, true},
		{`\d`, `onig \d`, false},
		{`\w`, `onig \w`, false},
		{`[^\W]`, `onig \w`, false},
	} {
		translated, err := translateRegex(tc.pattern)
		if err != nil {
			t.Fatalf("translateRegex(%q): %v", tc.pattern, err)
		}
		re, err := syntax.Parse(translated, syntax.Perl)
		if err != nil || re.Op != syntax.OpCharClass {
			t.Fatalf("translateRegex(%q) = %.80q...: not one character class (%v)", tc.pattern, translated, err)
		}
		got := make([]bool, utf8.MaxRune+1)
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				got[r] = true
			}
		}
		want := parseRanges(t, ref.Classes[tc.class])
		n, first := 0, rune(-1)
		for r := rune(0); r <= utf8.MaxRune; r++ {
			if !isSurrogate(r) && got[r] != (want[r] != tc.negate) {
				if n++; first < 0 {
					first = r
				}
			}
		}
		if n > 0 {
			t.Errorf("%s: %d code points differ from HF's %s (first U+%04X)", tc.pattern, n, tc.class, first)
		}
	}

	// End to end: Go's regexp finds exactly HF's letters.
	var all strings.Builder
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !isSurrogate(r) {
			all.WriteRune(r)
		}
	}
	text := all.String()
	translated, err := translateRegex(`\p{L}+`)
	if err != nil {
		t.Fatal(err)
	}
	var gotRuns []string
	for _, m := range regexp.MustCompile(translated).FindAllStringIndex(text, -1) {
		lo, _ := utf8.DecodeRuneInString(text[m[0]:])
		hi, _ := utf8.DecodeLastRuneInString(text[:m[1]])
		if lo == hi {
			gotRuns = append(gotRuns, strconv.FormatInt(int64(lo), 16))
		} else {
			gotRuns = append(gotRuns, strconv.FormatInt(int64(lo), 16)+"-"+strconv.FormatInt(int64(hi), 16))
		}
	}
	if got, want := strings.Join(gotRuns, " "), ref.Classes[`onig \p{L}`]; got != want {
		t.Errorf("Go regexp %s over every code point: runs differ from HF's \\p{L}+", `\p{L}+`)
	}
}

func TestLowercaseMatchesHF(t *testing.T) {
	var ref unicodeRef
	readRefJSON(t, "unicode_ref.json", &ref)
	want := map[rune]string{}
	for _, f := range strings.Fields(ref.Lowercase) {
		k, v, _ := strings.Cut(f, ":")
		c, err := strconv.ParseUint(k, 16, 32)
		if err != nil {
			t.Fatalf("bad lowercase entry %q", f)
		}
		var b strings.Builder
		for _, x := range strings.Split(v, ",") {
			l, err := strconv.ParseUint(x, 16, 32)
			if err != nil {
				t.Fatalf("bad lowercase entry %q", f)
			}
			b.WriteRune(rune(l))
		}
		want[rune(c)] = b.String()
	}
	if len(want) < 1000 {
		t.Fatalf("reference has only %d lowercase mappings", len(want))
	}
	n := 0
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if isSurrogate(r) || r == '\n' {
			continue
		}
		w, ok := want[r]
		if !ok {
			w = string(r)
		}
		if got := (lowercaseNorm{}).normalize(string(r)); got != w {
			if n++; n <= 8 {
				t.Errorf("Lowercase(U+%04X) = %+q, HF tokenizers %s: %+q", r, got, ref.Tokenizers, w)
			}
		}
	}
	if n > 8 {
		t.Errorf("... %d code points in all", n)
	}
}

// normProbes are the normalizer probes of the reference: each turns a code
// point into the text whose normalization is hashed.
var normProbes = map[string]func(r rune) string{
	"NFC":             func(r rune) string { return formNFC.String(string(r)) },
	"NFD":             func(r rune) string { return formNFD.String(string(r)) },
	"NFKC":            func(r rune) string { return formNFKC.String(string(r)) },
	"NFKD":            func(r rune) string { return formNFKD.String(string(r)) },
	"NFC(NFD)":        func(r rune) string { return formNFC.String(formNFD.String(string(r))) },
	"NFKC(NFKD)":      func(r rune) string { return formNFKC.String(formNFKD.String(string(r))) },
	"NFD(c+U+0334)":   func(r rune) string { return formNFD.String(string(r) + "\u0334") },
	"NFD(U+0301+c)":   func(r rune) string { return formNFD.String("\u0301" + string(r)) },
	"NFC(a+c+U+0301)": func(r rune) string { return formNFC.String("a" + string(r) + "\u0301") },
}

func TestNormalizersMatchHF(t *testing.T) {
	var ref unicodeRef
	readRefJSON(t, "unicode_ref.json", &ref)
	if ref.NormalizerSize <= 0 {
		t.Fatalf("reference has no normalizer block size")
	}
	for name := range normProbes {
		if _, ok := ref.Normalizers[name]; !ok {
			t.Errorf("reference has no normalizer probe %q", name)
		}
	}
	for name, want := range ref.Normalizers {
		probe, ok := normProbes[name]
		if !ok {
			t.Errorf("reference probe %q has no counterpart here", name)
			continue
		}
		hashes := strings.Fields(want)
		var bad []string
		for blk := 0; blk*ref.NormalizerSize <= utf8.MaxRune; blk++ {
			var parts []string
			for r := rune(blk * ref.NormalizerSize); r < rune((blk+1)*ref.NormalizerSize) && r <= utf8.MaxRune; r++ {
				if !isSurrogate(r) && r != '\n' {
					parts = append(parts, probe(r))
				}
			}
			got := "-"
			if len(parts) > 0 {
				sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
				got = hex.EncodeToString(sum[:])[:16]
			}
			if blk >= len(hashes) || hashes[blk] != got {
				bad = append(bad, fmt.Sprintf("U+%04X..", blk*ref.NormalizerSize))
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s differs from HF tokenizers %s in the blocks %s", name, ref.Tokenizers, strings.Join(bad, " "))
		}
	}
}

// TestUnicode16Encode encodes text with Unicode 15.1 / 16.0 characters as
// HF does: the two Llama 3 examples, and the reference's cases for
// every fixture tokenizer.
func TestUnicode16Encode(t *testing.T) {
	for _, tc := range []struct {
		model, text string
		want        []int32
	}{
		{"llama3", " \U00010D40", []int32{220, 172, 238, 113, 222}},
		{"llama3", "\U0002EBF0's", []int32{172, 106, 107, 108, 596}},
	} {
		tok := loadFixture(t, tc.model)
		if got := tok.Encode(tc.text, false); !slices.Equal(got, tc.want) {
			t.Errorf("%s %+q: got %v, HF %v", tc.model, tc.text, got, tc.want)
		}
	}
	var ref unicodeEncodeRef
	readRefJSON(t, "unicode_encode_ref.json", &ref)
	for _, model := range fixtureModels {
		cases := ref.Cases[model]
		if len(cases) == 0 {
			t.Errorf("reference has no encode cases for %s", model)
		}
		tok := loadFixture(t, model)
		for _, c := range cases {
			if got := tok.Encode(c.Text, false); !slices.Equal(got, c.IDs) {
				t.Errorf("%s %+q: got %v, HF tokenizers %s %v", model, c.Text, got, ref.Tokenizers, c.IDs)
			}
		}
	}
}
