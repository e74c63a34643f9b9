package models

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/models/synth"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// loadAll is the engine's LoadBundle without the engine: Load, then
// LoadText for the loaded model.
func loadAll(dir string, be tensor.Backend) error {
	m, err := Load(dir, be)
	if err != nil {
		return err
	}
	defer m.(io.Closer).Close()
	_, err = LoadText(dir, m.Config())
	return err
}

// brokenModel is a generated checkpoint, possibly broken afterwards.
type brokenModel struct {
	name   string
	family string // "gemma3n" or one of synth.Families
	bits   int
	// specs edits the tensors before the weights are written again
	// (nil: the weights stay as generated).
	specs func(t *testing.T, specs []synth.TensorSpec) []synth.TensorSpec
	// files edits the directory afterwards (nil: nothing).
	files func(t *testing.T, dir string)
	want  string // substring of the error; "" = loads
}

// write generates the model into a new directory and breaks it.
func (b brokenModel) write(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	opt := synth.Options{Bits: b.bits, Seed: 5, GenerateTokenizer: true}
	var specs []synth.TensorSpec
	var err error
	if b.family == "gemma3n" {
		_, err = synth.WriteGemma3n(dir, synth.TinyGemma3n(), opt)
		if err == nil {
			specs, err = synth.Specs(synth.TinyGemma3n(), opt)
		}
	} else {
		var d synth.FamilyDims
		if d, err = synth.TinyFamily(b.family); err == nil {
			if _, err = synth.WriteFamily(dir, d, opt); err == nil {
				specs, err = synth.FamilySpecs(d, opt)
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if b.specs != nil {
		if _, err := synth.WriteWeights(dir, b.specs(t, specs), 0, opt.Seed); err != nil {
			t.Fatal(err)
		}
	}
	if b.files != nil {
		b.files(t, dir)
	}
	return dir
}

// spec returns the index of the one tensor whose name ends in suffix.
func spec(t *testing.T, specs []synth.TensorSpec, suffix string) int {
	t.Helper()
	found := -1
	for i, s := range specs {
		if strings.HasSuffix(s.Name, suffix) && (found < 0 || len(s.Name) < len(specs[found].Name)) {
			found = i
		}
	}
	if found < 0 {
		t.Fatalf("no tensor ends in %q", suffix)
	}
	return found
}

// wrongShape gives the tensor ending in suffix another shape of the same
// element count (so the same bytes): rows doubled and columns halved, or
// transposed.
func wrongShape(suffix string) func(*testing.T, []synth.TensorSpec) []synth.TensorSpec {
	return func(t *testing.T, specs []synth.TensorSpec) []synth.TensorSpec {
		i := spec(t, specs, suffix)
		r, c := specs[i].Shape[0], specs[i].Shape[1]
		if c%2 == 0 {
			specs[i].Shape = []int{r * 2, c / 2}
		} else {
			specs[i].Shape = []int{c, r}
		}
		return specs
	}
}

// without drops the tensor ending in suffix.
func without(suffix string) func(*testing.T, []synth.TensorSpec) []synth.TensorSpec {
	return func(t *testing.T, specs []synth.TensorSpec) []synth.TensorSpec {
		i := spec(t, specs, suffix)
		return append(specs[:i:i], specs[i+1:]...)
	}
}

// editJSON rewrites the JSON object in file name of the model directory.
func editJSON(name string, edit func(m map[string]any)) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		p := filepath.Join(dir, name)
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		if raw, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeFile writes content as file name of the model directory.
func writeFile(name, content string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkCases are models that load and models broken in each way a load
// refuses: config.json, the weights' headers, a tensor against the
// architecture, the tokenizer, the chat template.
func checkCases() []brokenModel {
	cases := []brokenModel{
		{name: "gemma3n 4-bit", family: "gemma3n", bits: 4},
		{name: "gemma3n dense", family: "gemma3n"},
		{name: "no tokenizer.json", family: "gemma3n", bits: 4,
			files: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "tokenizer.json")) },
			want:  "tokenizer.json: no such file or directory"},
		{name: "tokenizer.json not JSON", family: "gemma3n", bits: 4,
			files: writeFile("tokenizer.json", "{\"model\": "), want: "parsing tokenizer.json"},
		{name: "tokenizer larger than the vocabulary", family: "gemma3n", bits: 4,
			files: func(t *testing.T, dir string) {
				tok, cfg, err := synth.GemmaTokenizer(600)
				if err != nil {
					t.Fatal(err)
				}
				writeFile("tokenizer.json", string(tok))(t, dir)
				writeFile("tokenizer_config.json", string(cfg))(t, dir)
			},
			want: "has 600 token ids but "},
		{name: "empty chat template", family: "gemma3n", bits: 4,
			files: editJSON("tokenizer_config.json", func(m map[string]any) { m["chat_template"] = " " }),
			want:  `tokenizer_config.json: "chat_template" is empty`},
		{name: "chat template raises", family: "gemma3n", bits: 4,
			files: writeFile("chat_template.jinja", "{{ raise_exception('no chat here') }}"),
			want:  "chat_template.jinja: the chat template fails on a short test conversation"},
		{name: "chat template doubles a string", family: "gemma3n", bits: 4,
			files: writeFile("chat_template.jinja", "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}"),
			want:  "chat_template.jinja"},
		{name: "chat template drops the messages", family: "gemma3n", bits: 4,
			files: writeFile("chat_template.jinja", "<start_of_turn>model\n"),
			want:  "leaves the messages out of the prompt"},
		{name: "down_proj shape wrong, bytes right", family: "gemma3n", bits: 4,
			specs: wrongShape("layers.0.mlp.down_proj.weight"), want: `mlp.down_proj.weight" has shape [256 16], want [128 32]`},
		{name: "dense down_proj transposed", family: "gemma3n",
			specs: func(t *testing.T, specs []synth.TensorSpec) []synth.TensorSpec {
				i := spec(t, specs, "layers.2.mlp.down_proj.weight")
				specs[i].Shape = []int{specs[i].Shape[1], specs[i].Shape[0]}
				return specs
			},
			want: `mlp.down_proj.weight" has shape [256 128], want [128 256]`},
		{name: "norm stored as packed codes", family: "gemma3n", bits: 4,
			specs: func(t *testing.T, specs []synth.TensorSpec) []synth.TensorSpec {
				i := spec(t, specs, "layers.1.input_layernorm.weight")
				specs[i].DType, specs[i].Fill = tensor.U32, synth.Fill{Kind: synth.FillBits}
				return specs
			},
			want: `input_layernorm.weight" has dtype U32, want F32, F16 or BF16`},
		{name: "missing tensor", family: "gemma3n", bits: 4,
			specs: without("layers.3.laurel.post_laurel_norm.weight"), want: `laurel.post_laurel_norm.weight" not found`},
		{name: "vocab_size disagrees with the embedding", family: "gemma3n", bits: 4,
			files: editJSON("config.json", func(m map[string]any) { m["text_config"].(map[string]any)["vocab_size"] = 4000 }),
			want:  "text_config.vocab_size = 4000, but "},
		{name: "head count out of bounds", family: "gemma3n", bits: 4,
			files: editJSON("config.json", func(m map[string]any) { m["text_config"].(map[string]any)["num_attention_heads"] = 1 << 40 }),
			want:  "num_attention_heads"},
		{name: "quantization bits 3", family: "gemma3n", bits: 4,
			files: editJSON("config.json", func(m map[string]any) { m["quantization"] = map[string]any{"group_size": 64, "bits": 3} }),
			want:  "quantization bits 3 not supported"},
		{name: "unknown model_type", family: "gemma3n", bits: 4,
			files: editJSON("config.json", func(m map[string]any) { m["model_type"] = "llama4" }),
			want:  "model_type"},
		{name: "weights truncated", family: "gemma3n", bits: 4,
			files: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "model.safetensors")
				st, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				os.Truncate(p, st.Size()-100)
			},
			want: "run past the end of the data"},
		{name: "safetensors header not JSON", family: "gemma3n", bits: 4,
			files: writeFile("model.safetensors", "\x08\x00\x00\x00\x00\x00\x00\x00{\"a\":   "),
			want:  "safetensors header is not valid JSON"},
	}
	for _, fam := range synth.Families {
		cases = append(cases,
			brokenModel{name: fam + " 4-bit", family: fam, bits: 4},
			brokenModel{name: fam + " dense", family: fam},
			brokenModel{name: fam + " down_proj shape wrong, bytes right", family: fam, bits: 4,
				specs: wrongShape("layers.0.mlp.down_proj.weight"), want: `mlp.down_proj.weight" has shape`},
			brokenModel{name: fam + " no final norm", family: fam, bits: 4,
				specs: without("model.norm.weight"), want: `norm.weight" not found`},
		)
	}
	return cases
}

// TestCheckAgreesWithLoad: on every generated model, broken or not,
// Check fails exactly when a real load (Load, then LoadText) fails, with
// the same message, and the message is the one expected.
func TestCheckAgreesWithLoad(t *testing.T) {
	be := cpu.New(1)
	defer be.Close()
	for _, tc := range checkCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.write(t)
			loadErr := loadAll(dir, be)
			checkErr := Check(dir, be)
			if tc.want == "" {
				if loadErr != nil || checkErr != nil {
					t.Fatalf("load: %v\ncheck: %v\nwant both to succeed", loadErr, checkErr)
				}
				return
			}
			if loadErr == nil || !strings.Contains(loadErr.Error(), tc.want) {
				t.Fatalf("load: %v\nwant an error containing %q", loadErr, tc.want)
			}
			if checkErr == nil || checkErr.Error() != loadErr.Error() {
				t.Fatalf("check: %v\nload:  %v\nwant the load's error", checkErr, loadErr)
			}
			if strings.Contains(checkErr.Error(), "\n") {
				t.Fatalf("check: %q is not one line", checkErr)
			}
		})
	}
}
