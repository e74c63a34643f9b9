package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/models/chat"
	"mlxchat/models/tokenizer"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "tok.json")
	os.WriteFile(tok, []byte(`{"model":{}}`), 0o644)
	out := filepath.Join(dir, "m")
	cases := []struct {
		name string
		args []string
		want string // substring of the error, "" for success
	}{
		{"tiny", []string{"-kind", "tiny", "-out", out, "-tokenizer", tok, "-window", "16"}, ""},
		{"exists", []string{"-kind", "tiny", "-out", out}, "already holds a model"},
		{"force 8bit sharded", []string{"-kind", "tiny", "-out", out, "-force", "-bits", "8", "-shard-mb", "1"}, ""},
		{"no out", []string{"-kind", "tiny"}, "-out DIR is required"},
		{"bad kind", []string{"-kind", "e4b", "-out", out}, `-kind "e4b": want tiny or full (e2b)`},
		{"bad bits", []string{"-kind", "tiny", "-out", filepath.Join(dir, "b"), "-bits", "3"}, "bits 3 not supported"},
		{"bad naming", []string{"-out", out, "-naming", "hf"}, `-naming "hf"`},
		{"bad dtype", []string{"-out", out, "-scale-dtype", "f8"}, `-scale-dtype "f8"`},
		{"e2b vocab", []string{"-kind", "e2b", "-out", filepath.Join(dir, "e"), "-vocab", "10"}, "apply to -kind tiny only"},
		{"extra arg", []string{"-out", out, "x"}, `unexpected argument "x"`},
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
		{"vocab too small", []string{"-kind", "tiny", "-out", filepath.Join(dir, "v"), "-vocab", "300"}, "-vocab 300: the generated tokenizer needs at least"},
		{"config alone", []string{"-kind", "tiny", "-out", filepath.Join(dir, "c"), "-tokenizer-config", tok}, "-tokenizer-config needs -tokenizer"},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		err := run(tc.args, &buf)
		if tc.want == "" {
			if err != nil || !strings.Contains(buf.String(), "wrote "+out) {
				t.Fatalf("%s: %v, output %q", tc.name, err, buf.String())
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "tokenizer.json")); err != nil {
		t.Fatal("tokenizer.json not copied")
	}
	if _, err := os.Stat(filepath.Join(out, "model.safetensors.index.json")); err != nil {
		t.Fatal("-shard-mb 1 did not shard")
	}
	if _, err := os.Stat(filepath.Join(out, "model.safetensors")); err == nil {
		t.Fatal("-force left the earlier model.safetensors behind")
	}
}

// By default the model gets a generated tokenizer of its vocabulary size.
func TestRunGeneratesTokenizer(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		vocab int
	}{{nil, 512}, {[]string{"-vocab", "1000"}, 1000}} {
		out := filepath.Join(t.TempDir(), "m")
		var buf bytes.Buffer
		if err := run(append([]string{"-kind", "tiny", "-out", out}, tc.args...), &buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), fmt.Sprintf("generated Gemma tokenizer of %d ids", tc.vocab)) {
			t.Fatalf("output %q", buf.String())
		}
		tk, err := tokenizer.LoadDir(out)
		if err != nil {
			t.Fatal(err)
		}
		if tk.VocabSize() != tc.vocab {
			t.Fatalf("tokenizer of %d ids, want %d", tk.VocabSize(), tc.vocab)
		}
		if _, err := chat.Load(out); err != nil {
			t.Fatal(err)
		}
	}
}
