package tokenizer

import (
	"testing"
	"unicode/utf8"
)

// FuzzParseEncode parses arbitrary tokenizer.json / tokenizer_config.json
// pairs and, when they load, encodes and decodes text with them. Loading
// must fail with an error or succeed, never panic or allocate without bound;
// a loaded tokenizer must only emit ids it can decode, and decode to valid
// UTF-8. Seeds: testdata/fuzz/FuzzParseEncode (tiny tokenizers with every
// normalizer, pre-tokenizer, decoder and post-processor kind, and the
// hostile files of issue #17).
func FuzzParseEncode(f *testing.F) {
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`), []byte(nil), "abab ba")
	f.Fuzz(func(t *testing.T, tokenizerJSON, config []byte, text string) {
		if len(tokenizerJSON) > 1<<16 || len(config) > 1<<12 || len(text) > 1<<12 {
			return
		}
		tok, err := Parse(tokenizerJSON, config)
		if err != nil {
			return
		}
		for _, special := range []bool{false, true} {
			ids := tok.Encode(text, special)
			for _, id := range ids {
				if _, ok := tok.Token(id); !ok {
					t.Fatalf("Encode(%q) emitted id %d, which Token does not know", text, id)
				}
			}
			if out := tok.Decode(ids); !utf8.ValidString(out) {
				t.Fatalf("Decode(Encode(%q)) = %q: invalid UTF-8", text, out)
			}
		}
	})
}
