package tokenizer

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// tinyJSON builds a small tokenizer.json around a BPE model: vocab holds
// a..e, "ab", "abc", "cd", the byte tokens <0x00>..<0xFF> and <unk>, with
// merges a+b, ab+c, c+d. model, normalizer etc. are spliced in as given.
func tinyJSON(t *testing.T, mergesStyle string, extra map[string]any, modelExtra map[string]any) []byte {
	t.Helper()
	vocab := map[string]int{"<unk>": 0, "a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "ab": 6, "abc": 7, "cd": 8, "▁": 9, "▁a": 10}
	for b := 0; b < 256; b++ {
		vocab[byteTokenName(byte(b))] = 11 + b
	}
	var merges any = []string{"a b", "ab c", "c d", "▁ a"}
	if mergesStyle == "pairs" {
		merges = [][]string{{"a", "b"}, {"ab", "c"}, {"c", "d"}, {"▁", "a"}}
	}
	model := map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "unk_token": "<unk>"}
	for k, v := range modelExtra {
		model[k] = v
	}
	doc := map[string]any{"version": "1.0", "model": model, "added_tokens": []any{}}
	for k, v := range extra {
		doc[k] = v
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustParse(t *testing.T, tj []byte, cfg string) *Tokenizer {
	t.Helper()
	tok, err := Parse(tj, []byte(cfg))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tok
}

func TestBPEModelOptions(t *testing.T) {
	tests := []struct {
		name  string
		model map[string]any
		extra map[string]any
		style string
		in    string
		want  []int32
	}{
		{"merges as strings", nil, nil, "strings", "abcd", []int32{7, 4}},
		{"merges as pairs", nil, nil, "pairs", "abcd", []int32{7, 4}},
		{"lowest rank first", nil, nil, "pairs", "bcd", []int32{2, 8}},
		{"unknown chars", nil, nil, "pairs", "axyb", []int32{1, 0, 0, 2}},
		{"fused unknown", map[string]any{"fuse_unk": true}, nil, "pairs", "axyb", []int32{1, 0, 2}},
		{"byte fallback", map[string]any{"byte_fallback": true}, nil, "pairs", "a€", []int32{1, 11 + 0xE2, 11 + 0x82, 11 + 0xAC}},
		{"ignore merges off", nil, nil, "pairs", "ab", []int32{6}},
		{"metaspace prepend", nil, map[string]any{
			"pre_tokenizer": map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
		}, "pairs", "a ab", []int32{10, 9, 6}}, // ▁ab: a+b outranks ▁+a
		{"normalizer replace and prepend", nil, map[string]any{
			"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
				map[string]any{"type": "Prepend", "prepend": "▁"},
				map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
			}},
		}, "pairs", "a a", []int32{10, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := mustParse(t, tinyJSON(t, tc.style, tc.extra, tc.model), "")
			if got := tok.Encode(tc.in, false); !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestAddedTokenOptions(t *testing.T) {
	added := func(content string, id int, opts map[string]bool) map[string]any {
		m := map[string]any{"id": id, "content": content, "special": opts["special"], "lstrip": opts["lstrip"],
			"rstrip": opts["rstrip"], "single_word": opts["single_word"], "normalized": opts["normalized"]}
		return m
	}
	tests := []struct {
		name string
		tok  map[string]any
		in   string
		want []int32
	}{
		{"plain", added("<x>", 300, map[string]bool{"special": true}), "a<x>b", []int32{1, 300, 2}},
		{"longest wins", added("<x>>", 300, nil), "a<x>>b", []int32{1, 300, 2}},
		{"lstrip", added("<x>", 300, map[string]bool{"lstrip": true}), "a  <x> b", []int32{1, 300, 0, 2}},
		{"rstrip", added("<x>", 300, map[string]bool{"rstrip": true}), "a <x>  b", []int32{1, 0, 300, 2}},
		{"single word rejects", added("ab", 300, map[string]bool{"single_word": true}), "abc ab", []int32{7, 0, 300}},
		{"normalized", added("▁a▁", 300, map[string]bool{"normalized": true}), "b a c", []int32{2, 300, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			extra := map[string]any{"added_tokens": []any{tc.tok}}
			if tc.name == "normalized" {
				extra["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}
			}
			tok := mustParse(t, tinyJSON(t, "pairs", extra, nil), "")
			if got := tok.Encode(tc.in, false); !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestSpecialTokensAndConfig(t *testing.T) {
	post := map[string]any{"type": "TemplateProcessing",
		"single": []any{
			map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}},
			map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
			map[string]any{"SpecialToken": map[string]any{"id": "</s>", "type_id": 0}},
		},
		"special_tokens": map[string]any{
			"<s>":  map[string]any{"id": "<s>", "ids": []int{300}, "tokens": []string{"<s>"}},
			"</s>": map[string]any{"id": "</s>", "ids": []int{301}, "tokens": []string{"</s>"}},
		}}
	addedTokens := []any{
		map[string]any{"id": 300, "content": "<s>", "special": true},
		map[string]any{"id": 301, "content": "</s>", "special": true},
	}
	tests := []struct {
		name     string
		cfg      string
		post     bool
		want     []int32
		bos, eos int32
	}{
		{"template", ``, true, []int32{300, 1, 301}, 300, -1},
		{"config bos only", `{"bos_token": "<s>", "eos_token": {"content": "</s>", "__type": "AddedToken"}, "add_bos_token": true}`, false, []int32{300, 1}, 300, 301},
		{"config disables bos", `{"bos_token": "<s>", "add_bos_token": false}`, true, []int32{1, 301}, 300, -1},
		{"config adds eos", `{"eos_token": "</s>", "add_eos_token": true}`, false, []int32{1, 301}, -1, 301},
		{"nothing", `{"bos_token": null}`, false, []int32{1}, -1, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			extra := map[string]any{"added_tokens": addedTokens}
			if tc.post {
				extra["post_processor"] = post
			}
			tok := mustParse(t, tinyJSON(t, "pairs", extra, nil), tc.cfg)
			if got := tok.Encode("a", true); !slices.Equal(got, tc.want) {
				t.Errorf("Encode(a, true) = %v, want %v", got, tc.want)
			}
			if got := tok.Encode("a", false); !slices.Equal(got, []int32{1}) {
				t.Errorf("Encode(a, false) = %v, want [1]", got)
			}
			if id, ok := tok.BOS(); id != tc.bos || ok != (tc.bos >= 0) {
				t.Errorf("BOS() = %d, %v, want %d", id, ok, tc.bos)
			}
			if id, ok := tok.EOS(); id != tc.eos || ok != (tc.eos >= 0) {
				t.Errorf("EOS() = %d, %v, want %d", id, ok, tc.eos)
			}
			if !tok.IsSpecial(300) || tok.IsSpecial(1) {
				t.Errorf("IsSpecial wrong")
			}
		})
	}
}

func TestDecoders(t *testing.T) {
	tests := []struct {
		name    string
		decoder map[string]any
		toks    []string
		want    string
	}{
		{"sentencepiece", map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}}, []string{"▁a", "<0xE2>", "<0x82>", "<0xAC>", "▁a"}, "a€ a"},
		{"invalid bytes", map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
		}}, []string{"a", "<0xE2>", "<0x82>", "b", "<0xFF>"}, "a\uFFFDb\uFFFD"},
		{"metaspace", map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
			[]string{"▁a", "▁a", "b"}, "a ab"},
		{"no decoder", nil, []string{"a", "b"}, "a b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			extra := map[string]any{}
			if tc.decoder != nil {
				extra["decoder"] = tc.decoder
			}
			tok := mustParse(t, tinyJSON(t, "pairs", extra, nil), "")
			var ids []int32
			for _, s := range tc.toks {
				id, ok := tok.TokenID(s)
				if !ok {
					t.Fatalf("no token %q", s)
				}
				ids = append(ids, id)
			}
			if got := tok.Decode(ids); got != tc.want {
				t.Errorf("Decode = %q, want %q", got, tc.want)
			}
			if got := strings.Join(streamAll(tok, ids), ""); got != tc.want {
				t.Errorf("stream = %q, want %q", got, tc.want)
			}
		})
	}
	tok := mustParse(t, tinyJSON(t, "pairs", map[string]any{"decoder": map[string]any{"type": "Fuse"}}, nil), "")
	if got := tok.Decode([]int32{1, -5, 99999}); got != "a\uFFFD\uFFFD" {
		t.Errorf("Decode of unknown ids = %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	good := string(tinyJSON(t, "pairs", nil, nil))
	tests := []struct {
		name, json, cfg, want string
	}{
		{"not json", `{"model": `, "", "JSON offset"},
		{"unigram", `{"model": {"type": "Unigram", "vocab": [["a", 0.0]]}}`, "", "Unigram"},
		{"bad merge", strings.Replace(good, `["c","d"]`, `["c","zz"]`, 1), "", "not in vocab"},
		{"bad merge string", strings.Replace(tinyStrings(t), `"c d"`, `"c d e"`, 1), "", "one space"},
		{"lookahead", strings.Replace(good, `"added_tokens":[]`, `"added_tokens":[],"pre_tokenizer":{"type":"Split","pattern":{"Regex":"a(?=b)"},"behavior":"Isolated"}`, 1), "", "lookaround"},
		{"unknown normalizer", strings.Replace(good, `"added_tokens":[]`, `"added_tokens":[],"normalizer":{"type":"Precompiled"}`, 1), "", "Precompiled"},
		{"unknown decoder", strings.Replace(good, `"added_tokens":[]`, `"added_tokens":[],"decoder":{"type":"CTC"}`, 1), "", "CTC"},
		{"bad config", good, `{"bos_token": 5}`, "bos_token"},
		{"bos not in vocab", good, `{"bos_token": "<nope>"}`, "not in the vocabulary"},
		// Hostile ids (issue #17): out-of-range special ids used to panic,
		// a huge vocab id to allocate ~34 GB.
		{"bert cls out of range", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"post_processor":{"type":"BertProcessing","cls":["[CLS]",77],"sep":["a",0]}}`, "", "special token id 77 is not in the vocabulary"},
		{"bert cls negative", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"post_processor":{"type":"BertProcessing","cls":["[CLS]",-7],"sep":["a",0]}}`, "", "special token id -7"},
		{"roberta sep out of range", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"post_processor":{"type":"RobertaProcessing","cls":["a",0],"sep":["</s>",2]}}`, "", "special token id 2"},
		{"template id out of range", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<s>":{"id":"<s>","ids":[5],"tokens":["<s>"]}}}}`, "", "special token id 5"},
		{"huge vocab id", `{"model":{"type":"BPE","vocab":{"a":2147483647},"merges":[]}}`, "", `id 2147483647 of "a" is out of range`},
		{"huge added id", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"added_tokens":[{"id":99999999,"content":"<x>","special":true}]}`, "", `id 99999999 of "<x>" is out of range`},
		{"duplicate vocab id", `{"model":{"type":"BPE","vocab":{"a":0,"b":0},"merges":[]}}`, "", `id 0 is used by both "a" and "b"`},
		{"negative vocab id", `{"model":{"type":"BPE","vocab":{"a":-1},"merges":[]}}`, "", "vocab id -1 out of range"},
		// QA: a vocab id 1e+300 said "expected ',' or '}'" at the "e",
		// and an added id of 1e18 "cannot unmarshal number ... into Go
		// struct field addedTokenJSON.id of type int32".
		{"exponent vocab id", `{"model":{"type":"BPE","vocab":{"a":0,"zzz":1e+300},"merges":[]}}`, "", "expected an integer, got 1e+300"},
		{"fraction vocab id", `{"model":{"type":"BPE","vocab":{"a":0.5},"merges":[]}}`, "", "expected an integer, got 0.5"},
		{"vocab id beyond int64", `{"model":{"type":"BPE","vocab":{"a":99999999999999999999},"merges":[]}}`, "", "integer 99999999999999999999 out of range"},
		{"added id beyond int32", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"added_tokens":[{"id":1000000000000000000,"content":"<y>","special":true}]}`, "",
			"added_tokens: id: number 1000000000000000000, want a whole number from 0 to 2147483647"},
		{"added content not a string", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"added_tokens":[{"id":1,"content":5}]}`, "",
			"added_tokens: content: number, want a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.json), []byte(tc.cfg))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tc.want)
			}
			if err != nil && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "tokenizer")) {
				t.Errorf("Parse error %q: want one line naming the tokenizer file", err)
			}
		})
	}
	if _, err := Load("/nonexistent/tokenizer.json", ""); err == nil || !strings.Contains(err.Error(), "/nonexistent/tokenizer.json") {
		t.Errorf("Load error = %v, want the path in it", err)
	}
}

func tinyStrings(t *testing.T) string { return string(tinyJSON(t, "strings", nil, nil)) }

func TestToValidUTF8(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"a\xffb", "a\uFFFDb"},
		{"\xe2\x82", "\uFFFD"},                 // truncated sequence: one replacement
		{"\xe2\x82A", "\uFFFDA"},               // interrupted sequence
		{"\xc3\x28", "\uFFFD("},                // bad continuation
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogate: E0..9F rule fails at the 2nd byte
		{"\xf0\x9f\x98", "\uFFFD"},             // truncated 4-byte sequence
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\xc0\xaf", "\uFFFD\uFFFD"},
		{"\xe0\x80\xaf", "\uFFFD\uFFFD\uFFFD"},
	}
	for _, tc := range tests {
		if got := toValidUTF8(tc.in); got != tc.want {
			t.Errorf("toValidUTF8(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	suffix := []struct {
		in   string
		want int
	}{{"a", 0}, {"a\xe2", 1}, {"a\xe2\x82", 2}, {"\xf0\x9f\x98", 3}, {"\xe2\x82\xac", 0}, {"\x82", 0}, {"a\xe2A", 0}, {"\xed\xa0", 0}}
	for _, tc := range suffix {
		if got := incompleteSuffix(tc.in); got != tc.want {
			t.Errorf("incompleteSuffix(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestRoundTrip decodes what was encoded: the original text comes back for
// every corpus file that is valid UTF-8 (and already NFC for Qwen, whose
// normalizer composes characters).
func TestRoundTrip(t *testing.T) {
	for _, model := range fixtureModels {
		t.Run(model, func(t *testing.T) {
			tok := loadFixture(t, model)
			for name := range readGolden(t, model).Cases {
				text := readCorpus(t, name)
				if !utf8.ValidString(text) || (model == "gemma3" && strings.Contains(text, "▁")) {
					continue // invalid bytes become U+FFFD; Gemma decodes a literal ▁ as a space
				}
				if model == "qwen3" {
					text = unicodeNorm{formNFC}.normalize(text)
				}
				if got := tok.Decode(tok.Encode(text, false)); got != text {
					t.Errorf("%s: round trip changed the text:\n got %q\nwant %q", name, got, text)
				}
			}
		})
	}
}
