package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/models/synth"
)

// The README's example: a tiny model from mkmodel, with the tokenizer it
// generates by default, runs in `mlxchat run` and `mlxchat bench` as it is.
func TestGeneratedTinyModelRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4, GroupSize: 64, Seed: 1, GenerateTokenizer: true}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := invoke(t, "", "run", dir, "--prompt", "Hello! How are you today?", "--max-tokens", "6", "--quiet", "--threads", "2")
	if code != 0 || out == "" {
		t.Fatalf("run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = invoke(t, "", "bench", dir, "--prompt-lens", "16", "--decode", "3", "--bandwidth-mb", "1", "--threads", "2")
	if code != 0 || !strings.Contains(out, "prefill") {
		t.Fatalf("bench: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// A tokenizer with more ids than the model has rows fails at load, in one
// line naming both files and both sizes, before any prompt runs.
func TestTokenizerVocabMismatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4, GroupSize: 64, Seed: 1, GenerateTokenizer: true}); err != nil {
		t.Fatal(err)
	}
	big, bigCfg, err := synth.GemmaTokenizer(600)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), big, 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), bigCfg, 0o644)
	code, _, errOut := invoke(t, "", "run", dir, "--prompt", "hi", "--max-tokens", "2")
	want := filepath.Join(dir, "tokenizer.json") + " has 600 token ids but " + filepath.Join(dir, "config.json") + " has vocab_size 512"
	if code != 1 || !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q; want one line containing %q", code, errOut, want)
	}
}
