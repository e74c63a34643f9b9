package synth_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/models/chat"
	"mlxchat/models/synth"
	"mlxchat/models/tokenizer"
)

func TestGemmaTokenizer(t *testing.T) {
	for _, vocab := range []int{synth.MinGemmaTokenizerVocab(), 512, 4096} {
		tj, tc, err := synth.GemmaTokenizer(vocab)
		if err != nil {
			t.Fatal(err)
		}
		tk, err := tokenizer.Parse(tj, tc)
		if err != nil {
			t.Fatalf("vocab %d: %v", vocab, err)
		}
		if tk.VocabSize() != vocab {
			t.Fatalf("vocab size %d, want %d", tk.VocabSize(), vocab)
		}
		for id, s := range map[int32]string{synth.GemmaPadID: "<pad>", synth.GemmaEOSID: "<eos>", synth.GemmaBOSID: "<bos>",
			synth.GemmaUnkID: "<unk>", synth.GemmaStartOfTurnID: "<start_of_turn>", synth.GemmaEndOfTurnID: "<end_of_turn>"} {
			if got, ok := tk.TokenID(s); !ok || got != id || !tk.IsSpecial(id) {
				t.Errorf("vocab %d: %s is id %d (%v, special %v), want %d", vocab, s, got, ok, tk.IsSpecial(got), id)
			}
		}
		for _, text := range []string{"Hello! How are you today?", "  two  spaces\nand lines\n\n", "émoji 🙂 and 中文 and \x01",
			"<start_of_turn>user\nhi<end_of_turn>\n"} {
			ids := tk.Encode(text, false)
			if got := tk.Decode(ids); got != text {
				t.Errorf("vocab %d: %q decodes to %q (%v)", vocab, text, got, ids)
			}
			for _, id := range ids {
				if int(id) >= vocab || id < 0 {
					t.Fatalf("id %d outside the vocabulary of %d", id, vocab)
				}
			}
		}
		if ids := tk.Encode("hi", true); len(ids) == 0 || ids[0] != synth.GemmaBOSID {
			t.Errorf("vocab %d: Encode with specials = %v, want <bos> first", vocab, ids)
		}
		if vocab >= 512 {
			// Learned merges make common words shorter than their letters.
			if ids := tk.Encode("the model", false); len(ids) > 5 {
				t.Errorf("vocab %d: %q is %d tokens, want merges to shorten it", vocab, "the model", len(ids))
			}
		}
	}
	if _, _, err := synth.GemmaTokenizer(300); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Errorf("vocab 300: %v", err)
	}
}

var conversations = [][]chat.Message{
	{{Role: "user", Content: "Hello"}},
	{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "  Hi there \n"}, {Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "Tell me a joke."}},
	{{Role: "user", Content: "a"}, {Role: "assistant", Content: " b "}},
}

func TestGemmaChatTemplate(t *testing.T) {
	tmpl, err := chat.New(synth.GemmaChatTemplate, chat.Options{SpecialTokens: map[string]string{"bos_token": "<bos>", "eos_token": "<eos>"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(conversations[1], true)
	if err != nil {
		t.Fatal(err)
	}
	want := "<bos><start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n" +
		"<start_of_turn>user\nTell me a joke.<end_of_turn>\n<start_of_turn>model\n"
	if got != want {
		t.Fatalf("rendered\n%q\nwant\n%q", got, want)
	}
	if _, err := tmpl.Render([]chat.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, true); err == nil ||
		!strings.Contains(err.Error(), "Conversation roles must alternate") {
		t.Fatalf("two user turns: %v", err)
	}
	if tmpl.EndOfTurn() != "<end_of_turn>" {
		t.Fatalf("end of turn %q", tmpl.EndOfTurn())
	}
}

// The generated template renders every conversation exactly as the real
// Gemma 3 template does (from the tokenizer package that
// scripts/fetch-tokenizers.sh fetches).
func TestGemmaChatTemplateMatchesGemma3(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "tokenizers", "gemma3", "package", "models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer_config.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Gemma 3 tokenizer fixture missing under CI (scripts/test.sh runs scripts/fetch-tokenizers.sh): %v", err)
		}
		t.Skipf("Gemma 3 tokenizer fixture missing; run scripts/fetch-tokenizers.sh (needs npm): %v", err)
	}
	real, err := chat.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := chat.New(synth.GemmaChatTemplate, chat.Options{SpecialTokens: map[string]string{"bos_token": "<bos>", "eos_token": "<eos>"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, conv := range conversations {
		for _, gen := range []bool{false, true} {
			want, err := real.Render(conv, gen)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ours.Render(conv, gen)
			if err != nil || got != want {
				t.Errorf("conversation %d (generation prompt %v):\n%q\nwant (Gemma 3)\n%q (%v)", i, gen, got, want, err)
			}
		}
	}
}
