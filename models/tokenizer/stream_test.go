package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// streamAll feeds ids one by one and returns the pieces Add returned plus
// the final Flush.
func streamAll(tok *Tokenizer, ids []int32) []string {
	d := NewStreamDecoder(tok)
	var out []string
	for _, id := range ids {
		out = append(out, d.Add(id))
	}
	return append(out, d.Flush())
}

func checkStream(t *testing.T, tok *Tokenizer, ids []int32) {
	t.Helper()
	pieces := streamAll(tok, ids)
	for i, p := range pieces {
		if !utf8.ValidString(p) {
			t.Fatalf("piece %d %q is not valid UTF-8", i, p)
		}
	}
	if got, want := strings.Join(pieces, ""), tok.Decode(ids); got != want {
		t.Fatalf("streamed text differs from Decode:\n got %q\nwant %q", got, want)
	}
}

// TestStreamCorpus streams the golden ids of every corpus text: CJK and
// emoji arrive as several byte-level or byte-fallback tokens per character.
func TestStreamCorpus(t *testing.T) {
	for _, model := range fixtureModels {
		t.Run(model, func(t *testing.T) {
			tok := loadFixture(t, model)
			for name, c := range readGolden(t, model).Cases {
				t.Run(name, func(t *testing.T) { checkStream(t, tok, c.IDs) })
			}
		})
	}
}

// TestStreamRandomIDs streams random id sequences rich in single-byte
// tokens, so most of them form invalid or truncated UTF-8; the stream must
// still never emit a broken sequence and must add up to Decode.
func TestStreamRandomIDs(t *testing.T) {
	for _, model := range fixtureModels {
		t.Run(model, func(t *testing.T) {
			tok := loadFixture(t, model)
			var byteIDs []int32
			for b := 0; b < 256; b++ {
				if id, ok := tok.TokenID(byteTokenName(byte(b))); ok {
					byteIDs = append(byteIDs, id)
				} else if id, ok := tok.TokenID(byteLevel.toString[b]); ok {
					byteIDs = append(byteIDs, id)
				}
			}
			if len(byteIDs) != 256 {
				t.Fatalf("found %d single-byte tokens, want 256", len(byteIDs))
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for trial := 0; trial < 300; trial++ {
				ids := make([]int32, 1+rng.IntN(24))
				for i := range ids {
					switch rng.IntN(4) {
					case 0:
						ids[i] = int32(rng.IntN(tok.VocabSize()))
					default:
						ids[i] = byteIDs[0x80+rng.IntN(0x80)] // continuation and lead bytes
					}
				}
				checkStream(t, tok, ids)
			}
		})
	}
}

// TestStreamHoldsPartialCharacters checks what Add returns step by step.
func TestStreamHoldsPartialCharacters(t *testing.T) {
	tests := []struct {
		model string
		toks  []string // token strings as in tokenizer.json
		want  []string // Add results, then Flush
	}{
		{"gemma3", []string{"<0xE2>", "<0x82>", "<0xAC>", "▁ok"}, []string{"", "", "€", " ok", ""}},
		{"gemma3", []string{"Hello", "<0xF0>", "<0x9F>", "▁world"}, []string{"Hello", "", "", "\uFFFD world", ""}},
		{"gemma3", []string{"<0xE2>", "<0x82>"}, []string{"", "", "\uFFFD"}},
		{"llama3", []string{"Hello", "Ġ", "âĤ", "¬", "Ġworld"}, []string{"Hello", " ", "", "€", " world", ""}},
		{"qwen3", []string{"ä½", "ł", "å¥", "½", "<|im_end|>"}, []string{"", "你", "", "好", "<|im_end|>", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.model+"/"+strings.Join(tc.toks, "|"), func(t *testing.T) {
			tok := loadFixture(t, tc.model)
			d := NewStreamDecoder(tok)
			var got []string
			for _, s := range tc.toks {
				id, ok := tok.TokenID(s)
				if !ok {
					t.Fatalf("token %q not in vocabulary", s)
				}
				got = append(got, d.Add(id))
			}
			got = append(got, d.Flush())
			if strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
				t.Errorf("pieces = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConcurrentEncode encodes from several goroutines at once (the word
// cache is shared) and checks every result; run with -race.
func TestConcurrentEncode(t *testing.T) {
	tok := loadFixture(t, "llama3")
	g := readGolden(t, "llama3")
	done := make(chan error)
	for w := 0; w < 4; w++ {
		go func() {
			var err error
			for name, c := range g.Cases {
				got := tok.Encode(mustReadCorpus(name), false)
				if !slices.Equal(got, c.IDs) {
					err = fmt.Errorf("%s: concurrent Encode differs", name)
				}
			}
			done <- err
		}()
	}
	for w := 0; w < 4; w++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// mustReadCorpus reads a corpus file from a goroutine (no *testing.T).
func mustReadCorpus(name string) string {
	data, err := os.ReadFile(filepath.Join("testdata", "corpus", name+".txt"))
	if err != nil {
		return "unreadable corpus file " + name
	}
	return string(data)
}
