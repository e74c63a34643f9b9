package chat

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mlxchat/models/tokenizer"
)

// The real tokenizer packages (see scripts/fetch-tokenizers.sh) are used
// when present; tests skip without them, or fail when CI is set.
func fixtureDir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "tokenizers", name, "package", "models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer_config.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("fixture %s missing under CI (run scripts/fetch-tokenizers.sh): %v", dir, err)
		}
		t.Skipf("fixture %s missing; run scripts/fetch-tokenizers.sh (needs npm) to enable this test", dir)
	}
	return dir
}

// TestRealModelDirs loads the template and tokenizer of each real model
// directory, renders a multi-turn conversation, encodes it, and checks the
// prompt tokens and stop tokens.
func TestRealModelDirs(t *testing.T) {
	msgs := []Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hello!"},
		{Role: "assistant", Content: "Hi."},
		{Role: "user", Content: "Bye?"},
	}
	tests := []struct {
		model     string
		prefix    string // the rendered prompt starts with this
		suffix    string // and ends with this
		eos       []int32
		wantStops []string
	}{
		{"gemma3", "<bos><start_of_turn>user\nBe brief.\n\nHello!<end_of_turn>", "<start_of_turn>model\n", []int32{1, 106}, []string{"<eos>", "<end_of_turn>"}},
		{"llama3", "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>", "<|start_header_id|>assistant<|end_header_id|>\n\n", []int32{128001, 128009}, []string{"<|end_of_text|>", "<|eot_id|>"}},
		{"qwen3", "<|im_start|>system\nBe brief.<|im_end|>\n", "<|im_start|>assistant\n", []int32{151645, 151643}, []string{"<|im_end|>", "<|endoftext|>"}},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			dir := fixtureDir(t, tc.model)
			tmpl, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := tokenizer.LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			prompt, err := tmpl.Render(msgs, true)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(prompt, tc.prefix) || !strings.HasSuffix(prompt, tc.suffix) {
				t.Fatalf("prompt = %q", prompt)
			}
			ids := tok.Encode(prompt, false)
			if bos, ok := tok.BOS(); ok && strings.HasPrefix(prompt, tok.BOSToken()) {
				if ids[0] != bos || ids[1] == bos {
					t.Errorf("prompt ids should start with exactly one BOS %d: %v", bos, ids[:4])
				}
			}
			eot, _ := tok.TokenID(tmpl.EndOfTurn())
			if n := strings.Count(prompt, tmpl.EndOfTurn()); n == 0 || countID(ids, eot) != n {
				t.Errorf("end-of-turn %q appears %d times in the text but %d times as token %d", tmpl.EndOfTurn(), n, countID(ids, eot), eot)
			}
			if got := tok.Decode(ids); got != prompt {
				t.Errorf("Decode(Encode(prompt)) = %q", got)
			}
			var want []int32
			for _, s := range tc.wantStops {
				id, ok := tok.TokenID(s)
				if !ok {
					t.Fatalf("no token %q", s)
				}
				want = append(want, id)
			}
			stops := tmpl.StopTokens(tok, tc.eos)
			for _, id := range want {
				if !slices.Contains(stops, id) {
					t.Errorf("StopTokens = %v, missing %d", stops, id)
				}
			}
		})
	}
}

func countID(ids []int32, id int32) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}
