package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/models/synth"
)

// notedModel writes a tiny OLMo 3 checkpoint whose config asks for YaRN
// scaling on its sliding layers too, which the model does not follow and
// says so in a load-time note.
func notedModel(t *testing.T) string {
	t.Helper()
	d, err := synth.TinyFamily("olmo3")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := synth.WriteFamily(dir, d, synth.Options{Seed: 3, GenerateTokenizer: true}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	yarn := func(theta float64) map[string]any {
		return map[string]any{"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192, "rope_theta": theta}
	}
	delete(cfg, "rope_scaling")
	delete(cfg, "rope_theta")
	cfg["rope_parameters"] = map[string]any{"full_attention": yarn(500000), "sliding_attention": yarn(10000)}
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestModelNotesOnStderr: run and bench print the model's load-time
// notes on stderr, one "note:" line each, and keep stdout for the answer
// and the table; a model without notes prints none.
func TestModelNotesOnStderr(t *testing.T) {
	dir := notedModel(t)
	const want = "rope_parameters.sliding_attention asks for yarn scaling; sliding layers use the unscaled table"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"run", []string{"run", dir, "--prompt", "hi", "--max-tokens", "2", "--threads", "2"}},
		{"run --quiet", []string{"run", dir, "--prompt", "hi", "--max-tokens", "2", "--quiet"}},
		{"bench", []string{"bench", dir, "--prompt-lens", "8", "--decode", "2", "--bandwidth-mb", "8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := invoke(t, "", tc.args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			var notes []string
			for _, l := range strings.Split(errOut, "\n") {
				if strings.HasPrefix(l, "note: ") {
					notes = append(notes, l)
				}
			}
			if len(notes) != 1 || !strings.Contains(notes[0], want) || !strings.Contains(notes[0], "config.json") {
				t.Fatalf("stderr notes %q, want one naming config.json and %q\nstderr: %s", notes, want, errOut)
			}
			if strings.Contains(out, "note:") {
				t.Fatalf("the note went to stdout:\n%s", out)
			}
		})
	}
	_, _, errOut := invoke(t, "", "run", tinyModel(t), "--prompt", "hi", "--max-tokens", "2")
	if strings.Contains(errOut, "note:") {
		t.Fatalf("a model without notes printed %q", errOut)
	}
}
