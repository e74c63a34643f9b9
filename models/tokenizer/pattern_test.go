package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// lens returns the byte lengths of the matches, which must tile s.
func lens(t *testing.T, s string, m [][2]int) []int {
	t.Helper()
	out := make([]int, len(m))
	prev := 0
	for i, r := range m {
		if r[0] != prev {
			t.Fatalf("matches of %q leave a gap at %d", s, prev)
		}
		out[i] = r[1] - r[0]
		prev = r[1]
	}
	if prev != len(s) {
		t.Fatalf("matches of %q stop at %d of %d", s, prev, len(s))
	}
	return out
}

// TestScannersMatchJSRegex compares the hand-written scanners with the
// JavaScript regex engine (which has lookahead) on fuzz strings made by
// make_golden.mjs; the Llama 3 / Qwen cases were checked there to equal the
// tokenizers' own pre-tokenizer output.
func TestScannersMatchJSRegex(t *testing.T) {
	type fuzzCase struct {
		file string
		m    matcher
	}
	var cases []fuzzCase
	cases = append(cases, fuzzCase{"golden_gpt2_pretok.json", gpt2Scanner{}})
	for _, c := range []struct {
		model string
		m     matcher
	}{{"llama3", cl100kScanner{maxDigits: 3}}, {"qwen3", cl100kScanner{maxDigits: 1}}} {
		cases = append(cases, fuzzCase{"golden_" + c.model + ".json", c.m})
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			var entries [][2]json.RawMessage
			if c.file == "golden_gpt2_pretok.json" {
				err = json.Unmarshal(data, &entries)
			} else {
				var g goldenFile
				err = json.Unmarshal(data, &g)
				entries = g.Pretok
			}
			if err != nil || len(entries) == 0 {
				t.Fatalf("reading %s: %v (%d entries)", c.file, err, len(entries))
			}
			for _, e := range entries {
				var s string
				var want []int
				if err := json.Unmarshal(e[0], &s); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(e[1], &want); err != nil {
					t.Fatal(err)
				}
				if got := lens(t, s, c.m.findAll(s)); !slices.Equal(got, want) {
					t.Errorf("split of %q: byte lengths %v, want %v", s, got, want)
				}
			}
		})
	}
}

func TestScannerCases(t *testing.T) {
	l3 := cl100kScanner{maxDigits: 3}
	q := cl100kScanner{maxDigits: 1}
	tests := []struct {
		name string
		m    matcher
		in   string
		want []string
	}{
		{"contractions", l3, "I'M here, they'LL go'd", []string{"I", "'M", " here", ",", " they", "'LL", " go", "'d"}},
		{"digits3", l3, "1234567", []string{"123", "456", "7"}},
		{"digits1", q, "123", []string{"1", "2", "3"}},
		{"space before word", l3, "a  b", []string{"a", " ", " b"}},
		{"trailing spaces", l3, "a   ", []string{"a", "   "}},
		{"newlines", l3, "a \n\n b", []string{"a", " \n\n", " b"}},
		{"punct newline", l3, "x!!\n\ny", []string{"x", "!!\n\n", "y"}},
		{"tab before word", l3, "\tx", []string{"\tx"}},
		{"punct before word", l3, "(hello)", []string{"(hello", ")"}},
		{"space punct", l3, " ...", []string{" ..."}},
		{"gpt2 words", gpt2Scanner{}, "Hello  world's 42!", []string{"Hello", " ", " world", "'s", " 42", "!"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, m := range tc.m.findAll(tc.in) {
				got = append(got, tc.in[m[0]:m[1]])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("split(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSplitBehaviors(t *testing.T) {
	s := "a--b-c"
	m := literalMatcher{"-"}.findAll(s)
	tests := []struct {
		b      behavior
		invert bool
		want   []string
	}{
		{removed, false, []string{"a", "b", "c"}},
		{isolated, false, []string{"a", "-", "-", "b", "-", "c"}},
		{mergedWithPrevious, false, []string{"a-", "-", "b-", "c"}},
		{mergedWithNext, false, []string{"a", "-", "-b", "-c"}},
		{contiguous, false, []string{"a", "--", "b", "-", "c"}},
		{removed, true, []string{"-", "-", "-"}}, // with invert, matches are kept and the rest removed
	}
	for _, tc := range tests {
		got := splitByMatches(s, m, tc.b, tc.invert)
		if !slices.Equal(got, tc.want) {
			t.Errorf("behavior %d invert %v: %q, want %q", tc.b, tc.invert, got, tc.want)
		}
	}
}

func TestTranslateRegex(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
		match   string
		want    []string
	}{
		{in: `\s+`, match: "a\u00a0\u3000b c", want: []string{"\u00a0\u3000", " "}},
		{in: `[^\s\p{L}]+`, match: "ab12 !?", want: []string{"12", "!?"}},
		{in: `\S+`, match: "x\u2003yz", want: []string{"x", "yz"}},
		{in: `\s+(?!\S)`, wantErr: true},
		{in: `(?<=a)b`, wantErr: true},
	}
	for _, tc := range tests {
		m, err := newRegexMatcher(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("newRegexMatcher(%q): want an error", tc.in)
			}
			continue
		}
		if err != nil {
			t.Fatalf("newRegexMatcher(%q): %v", tc.in, err)
		}
		var got []string
		for _, r := range m.findAll(tc.match) {
			got = append(got, tc.match[r[0]:r[1]])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q on %q: %q, want %q", tc.in, tc.match, got, tc.want)
		}
	}
}
