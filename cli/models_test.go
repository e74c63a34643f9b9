package cli

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/adrg/xdg"

	"mlxchat/models/synth"
)

// modelCaches points the Hugging Face cache and the XDG data dir at new
// temporary folders and returns them.
func modelCaches(t *testing.T) (cache, data string) {
	root := t.TempDir()
	t.Setenv("HF_HOME", filepath.Join(root, "hf"))
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("XDG_DATA_HOME", filepath.Join(root, "share"))
	xdg.Reload()
	t.Cleanup(xdg.Reload)
	return filepath.Join(root, "hf", "hub"), filepath.Join(root, "share", "mlxchat", "models")
}

// cacheModel writes a tiny model as a snapshot of repo in the cache and
// returns the snapshot directory; edit, when set, changes it afterwards.
func cacheModel(t *testing.T, cache, repo string, opt synth.Options, edit func(dir string)) string {
	t.Helper()
	repoDir := filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
	commit := strings.Repeat("5e", 20)
	snap := filepath.Join(repoDir, "snapshots", commit)
	if _, err := synth.WriteTiny(snap, opt); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(repoDir, "refs"), 0o755)
	os.WriteFile(filepath.Join(repoDir, "refs", "main"), []byte(commit), 0o644)
	if edit != nil {
		edit(snap)
	}
	return snap
}

func TestListModels(t *testing.T) {
	cache, data := modelCaches(t)
	q4 := synth.Options{Bits: 4, GroupSize: 64, Seed: 1, GenerateTokenizer: true}
	cacheModel(t, cache, "mlx-community/tiny-4bit", q4, nil)
	cacheModel(t, cache, "org/no-tokenizer", q4, func(dir string) { os.Remove(filepath.Join(dir, "tokenizer.json")) })
	cacheModel(t, cache, "org/llama4", q4, func(dir string) {
		b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(b), `"gemma3n"`, `"llama4"`, 1)), 0o644)
	})
	if _, err := synth.WriteTiny(filepath.Join(data, "me", "dense"), synth.Options{Seed: 2, GenerateTokenizer: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := synth.WriteTiny(filepath.Join(data, "copied"), synth.Options{Seed: 3, GenerateTokenizer: true}); err != nil {
		t.Fatal(err) // copied in by hand, not ORG/NAME
	}
	code, out, errOut := invoke(t, "", "list")
	if code != 0 {
		t.Fatalf("list: exit %d, %s", code, errOut)
	}
	for _, want := range []string{
		"Hugging Face cache: " + cache, "data dir:           " + data,
		`(?m)^MODEL\s+FAMILY\s+QUANT\s+SIZE\s+LOADS$`,
		`(?m)^me/dense \(data dir\)\s+gemma3n\s+dense bf16\s+\d+\.\d MiB\s+yes$`,
		`(?m)^mlx-community/tiny-4bit\s+gemma3n\s+4-bit g64\s+(\d+ KiB|\d+\.\d MiB)\s+yes$`,
		`(?m)^org/llama4\s+llama4\s+4-bit g64\s+.*no: model_type llama4 not supported$`,
		`(?m)^org/no-tokenizer\s+gemma3n\s+4-bit g64\s+.*no: incomplete \(missing tokenizer.json\)$`,
		`(?m)^copied \(data dir\)\s+.*no: incomplete \(not in the data dir's ORG/NAME layout: move it to .*local.copied, or run it by its path\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) && !strings.Contains(out, want) {
			t.Errorf("list output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := invoke(t, "", "list", "x"); code != 2 || !strings.Contains(errOut, "takes no arguments") {
		t.Errorf("list x: exit %d, %q", code, errOut)
	}
}

func TestRemoveModel(t *testing.T) {
	cache, data := modelCaches(t)
	opt := synth.Options{Bits: 4, GroupSize: 64, Seed: 1, GenerateTokenizer: true}
	alias := cacheModel(t, cache, "mlx-community/gemma-3n-E2B-it-4bit", opt, nil)
	byID := cacheModel(t, cache, "org/by-id", opt, nil)
	byPath := cacheModel(t, cache, "org/by-path", opt, nil)
	both := cacheModel(t, cache, "org/both", opt, nil)
	inData := filepath.Join(data, "org", "both")
	if _, err := synth.WriteTiny(inData, opt); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "mine")
	if _, err := synth.WriteTiny(outside, opt); err != nil {
		t.Fatal(err)
	}
	repoDir := func(snap string) string { return filepath.Dir(filepath.Dir(snap)) }
	cases := []struct {
		arg     string
		code    int
		out     []string // substrings of stdout
		errOut  string   // substring of stderr
		gone    []string
		present []string
	}{
		{"gemma3n-e2b-4bit", 0, []string{"removed mlx-community/gemma-3n-E2B-it-4bit (", "): " + repoDir(alias)}, "", []string{repoDir(alias)}, nil},
		{"org/by-id", 0, []string{"removed org/by-id", repoDir(byID)}, "", []string{repoDir(byID)}, []string{byPath}},
		{byPath, 0, []string{"removed org/by-path", repoDir(byPath)}, "", []string{repoDir(byPath)}, nil},
		{"https://huggingface.co/org/both", 0, []string{repoDir(both), inData}, "", []string{repoDir(both), inData}, nil},
		{outside, 1, nil, "is not a model folder of the Hugging Face cache", nil, []string{outside}},
		{filepath.Join(cache), 1, nil, "is not a model folder", nil, []string{cache}},
		{"org/never", 1, nil, "model org/never (org/never) is not in the Hugging Face cache", nil, nil},
		{"not a name!", 1, nil, "is not a directory, a known alias", nil, nil},
	}
	for _, tc := range cases {
		code, out, errOut := invoke(t, "", "rm", tc.arg)
		if code != tc.code || !strings.Contains(errOut, tc.errOut) {
			t.Errorf("rm %s: exit %d, stderr %q; want %d and %q", tc.arg, code, errOut, tc.code, tc.errOut)
		}
		for _, w := range tc.out {
			if !strings.Contains(out, w) {
				t.Errorf("rm %s: stdout %q lacks %q", tc.arg, out, w)
			}
		}
		for _, p := range tc.gone {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("rm %s: %s still exists", tc.arg, p)
			}
		}
		for _, p := range tc.present {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("rm %s: %s was removed: %v", tc.arg, p, err)
			}
		}
	}
	if code, _, errOut := invoke(t, "", "rm"); code != 2 || !strings.Contains(errOut, "want one MODEL") {
		t.Errorf("rm without a model: exit %d, %q", code, errOut)
	}
}

// TestListSaysWhyAModelWontLoad: `list` says "no" with the load's own
// reason for models in the data dir that hub's completeness check passes
// but that fail to load (the checks of a real load, on headers, tokenizer
// and template), and "yes" for the one that loads; `run` agrees on each.
func TestListSaysWhyAModelWontLoad(t *testing.T) {
	_, data := modelCaches(t)
	q4 := synth.Options{Bits: 4, GroupSize: 64, Seed: 1, GenerateTokenizer: true}
	write := func(t *testing.T, dir string, edit func(dir string)) {
		if _, err := synth.WriteTiny(dir, q4); err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(dir)
		}
	}
	file := func(name, content string) func(dir string) {
		return func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name string
		edit func(dir string)
		want string // the LOADS column
	}{
		{"org/good", nil, "yes"},
		{"org/no-tokenizer", func(dir string) { os.Remove(filepath.Join(dir, "tokenizer.json")) },
			"no: loading tokenizer: open tokenizer.json: no such file or directory"},
		{"org/wrong-shape", func(dir string) {
			// down_proj of layer 0 with its rows doubled and columns
			// halved: the same bytes, the wrong shape.
			specs, err := synth.Specs(synth.TinyGemma3n(), q4)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range specs {
				if strings.HasSuffix(s.Name, ".layers.0.mlp.down_proj.weight") {
					specs[i].Shape = []int{s.Shape[0] * 2, s.Shape[1] / 2}
				}
			}
			if _, err := synth.WriteWeights(dir, specs, 0, q4.Seed); err != nil {
				t.Fatal(err)
			}
		}, `no: gemma3n: model.safetensors: tensor "language_model.model.layers.0.mlp.down_proj.weight" has shape [256 16], want [128 32] (a 128x256 matrix packed 8 4-bit codes per U32)`},
		{"org/empty-template", file("chat_template.jinja", "\n"),
			"no: chat_template.jinja: the file is empty: the model has no chat template to build prompts with"},
		{"org/hostile-template", file("chat_template.jinja", "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}"),
			"no: chat_template.jinja: the chat template fails on a short test conversation (user, assistant, user): rendering needs more than the renderer's memory limit of 512 MiB for this conversation (a string doubled in a loop, or a huge list?)"},
		{"org/big-tokenizer", func(dir string) {
			tok, cfg, err := synth.GemmaTokenizer(600)
			if err != nil {
				t.Fatal(err)
			}
			file("tokenizer.json", string(tok))(dir)
			file("tokenizer_config.json", string(cfg))(dir)
		}, "no: tokenizer.json has 600 token ids but config.json has vocab_size 512: the tokenizer does not belong to this model"},
	}
	for _, tc := range cases {
		write(t, filepath.Join(data, tc.name), tc.edit)
	}
	code, out, errOut := invoke(t, "", "list")
	if code != 0 {
		t.Fatalf("list: exit %d, %s", code, errOut)
	}
	for _, tc := range cases {
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(tc.name) + ` \(data dir\)\s+gemma3n\s+4-bit g64\s+\S+ \S+\s+(.*)$`)
		m := re.FindStringSubmatch(out)
		if m == nil || m[1] != tc.want {
			t.Errorf("%s: list row %q, want LOADS %q\n%s", tc.name, m, tc.want, out)
			continue
		}
		// `run` loads it for real: it fails exactly when list says no,
		// with the reason list gives.
		dir := filepath.Join(data, tc.name)
		code, _, errOut := invoke(t, "", "run", dir, "--prompt", "hi", "--max-tokens", "1", "--threads", "1")
		if tc.want == "yes" {
			if code != 0 {
				t.Errorf("%s: list says yes, run: exit %d, %s", tc.name, code, errOut)
			}
			continue
		}
		runErr, ok := strings.CutPrefix(strings.TrimSpace(errOut), "mlxchat run: ")
		if code != 1 || !ok || "no: "+shortReason(errors.New(runErr), dir) != tc.want {
			t.Errorf("%s: run: exit %d, stderr %q; want exit 1 and list's reason %q", tc.name, code, errOut, tc.want)
		}
	}
}
