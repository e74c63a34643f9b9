package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{"bad kind", []string{"-kind", "e4b", "-out", out}, `-kind "e4b": want tiny or e2b`},
		{"bad bits", []string{"-kind", "tiny", "-out", filepath.Join(dir, "b"), "-bits", "3"}, "bits 3 not supported"},
		{"bad naming", []string{"-out", out, "-naming", "hf"}, `-naming "hf"`},
		{"bad dtype", []string{"-out", out, "-scale-dtype", "f8"}, `-scale-dtype "f8"`},
		{"e2b vocab", []string{"-kind", "e2b", "-out", filepath.Join(dir, "e"), "-vocab", "10"}, "apply to -kind tiny only"},
		{"extra arg", []string{"-out", out, "x"}, `unexpected argument "x"`},
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
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
