package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

type conversationsFile struct {
	Templates map[string]struct {
		File          string            `json:"file"`
		SpecialTokens map[string]string `json:"special_tokens"`
	} `json:"templates"`
	Conversations map[string][]struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		Reasoning string `json:"reasoning_content"`
	} `json:"conversations"`
	Extras map[string]map[string]any `json:"extras"`
}

type renderingsFile struct {
	Renderings []struct {
		Template            string  `json:"template"`
		Conversation        string  `json:"conversation"`
		Extra               string  `json:"extra"`
		AddGenerationPrompt bool    `json:"add_generation_prompt"`
		Output              *string `json:"output"`
		Error               *string `json:"error"`
	} `json:"renderings"`
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("parsing %s: %v", name, err)
	}
}

// TestGoldenRenderings renders every template x conversation x option and
// compares with Python jinja2 in apply_chat_template's environment.
func TestGoldenRenderings(t *testing.T) {
	var conv conversationsFile
	var gold renderingsFile
	readJSON(t, "conversations.json", &conv)
	readJSON(t, "golden_renderings.json", &gold)
	if len(gold.Renderings) == 0 {
		t.Fatal("no golden renderings")
	}
	templates := map[string]*Template{}
	for name, info := range conv.Templates {
		src, err := os.ReadFile(filepath.Join("testdata", info.File))
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := New(string(src), Options{SpecialTokens: info.SpecialTokens})
		if err != nil {
			t.Fatalf("New(%s): %v", name, err)
		}
		templates[name] = tmpl
	}
	for _, g := range gold.Renderings {
		name := g.Template + "/" + g.Conversation + "/" + g.Extra
		if g.AddGenerationPrompt {
			name += "/gen"
		}
		t.Run(name, func(t *testing.T) {
			var msgs []Message
			for _, m := range conv.Conversations[g.Conversation] {
				msgs = append(msgs, Message{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning})
			}
			got, err := templates[g.Template].RenderWith(msgs, g.AddGenerationPrompt, conv.Extras[g.Extra])
			switch {
			case g.Error != nil:
				if err == nil || !strings.Contains(err.Error(), *g.Error) {
					t.Errorf("error = %v, want one containing %q", err, *g.Error)
				}
			case err != nil:
				t.Errorf("Render: %v", err)
			case got != *g.Output:
				t.Errorf("Render mismatch\n got %q\nwant %q", got, *g.Output)
			}
		})
	}
}

func TestEndOfTurn(t *testing.T) {
	for name, want := range map[string]string{
		"gemma3": "<end_of_turn>", "gemma3n": "<end_of_turn>", "llama3": "<|eot_id|>", "llama3.2": "<|eot_id|>", "qwen3": "<|im_end|>",
	} {
		src, err := os.ReadFile(filepath.Join("testdata", "templates", name+".jinja"))
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := New(string(src), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := tmpl.EndOfTurn(); got != want {
			t.Errorf("%s: EndOfTurn() = %q, want %q", name, got, want)
		}
	}
}

// vocab is a token table for StopTokens tests.
type vocab map[string]int32

func (v vocab) TokenID(s string) (int32, bool) { id, ok := v[s]; return id, ok }

func TestStopTokens(t *testing.T) {
	v := vocab{"<eos>": 1, "<end_of_turn>": 106, "<|im_end|>": 151645, "<|endoftext|>": 151643}
	tests := []struct {
		name    string
		src     string
		special map[string]string
		eos     []int32
		want    []int32
	}{
		{"gemma: list plus end of turn", "{{ '<end_of_turn>' }}", map[string]string{"eos_token": "<end_of_turn>"}, []int32{1, 106}, []int32{1, 106}},
		{"gemma: int", "{{ '<end_of_turn>' }}", nil, []int32{1}, []int32{1, 106}},
		{"qwen: none from generation config", "<|im_end|>", map[string]string{"eos_token": "<|endoftext|>"}, nil, []int32{151645, 151643}},
		{"unknown marker", "plain", nil, []int32{7}, []int32{7}},
		// The real templates: Qwen 3's config names only <|im_end|>, yet the
		// model also ends on <|endoftext|>; OLMo 3's configs name only
		// <|endoftext|>, its template ends turns with <|im_end|>; Command
		// R7B ends a turn with <|END_RESPONSE|><|END_OF_TURN_TOKEN|>.
		{"qwen3 template", "file:qwen3.jinja", map[string]string{"eos_token": "<|im_end|>"}, []int32{151645}, []int32{151645, 151643}},
		{"olmo3 template", "file:olmo3.1-instruct.jinja", map[string]string{"eos_token": "<|endoftext|>"}, []int32{100257}, []int32{100257, 100265}},
		{"command-r7b template", "file:command-r7b.jinja", map[string]string{"eos_token": "<|END_OF_TURN_TOKEN|>"}, []int32{255001}, []int32{255001, 255009}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := v
			if name, ok := strings.CutPrefix(tc.src, "file:"); ok {
				src, err := os.ReadFile(filepath.Join("testdata", "templates", name))
				if err != nil {
					t.Fatal(err)
				}
				tc.src = string(src)
				if strings.HasPrefix(name, "olmo3") {
					v = vocab{"<|endoftext|>": 100257, "<|im_start|>": 100264, "<|im_end|>": 100265}
				}
				if strings.HasPrefix(name, "command-r7b") {
					v = vocab{"<BOS_TOKEN>": 5, "<|END_OF_TURN_TOKEN|>": 255001, "<|START_RESPONSE|>": 255008, "<|END_RESPONSE|>": 255009}
				}
			}
			tmpl, err := New(tc.src, Options{SpecialTokens: tc.special})
			if err != nil {
				t.Fatal(err)
			}
			if got := tmpl.StopTokens(v, tc.eos); !slices.Equal(got, tc.want) {
				t.Errorf("StopTokens = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStrftimeNow(t *testing.T) {
	now := time.Date(2024, time.July, 6, 9, 5, 3, 0, time.UTC)
	tmpl, err := New(`{{ strftime_now("%d %b %Y") }}|{{ strftime_now("%Y-%m-%d %H:%M:%S %A %B %j %I%p %%") }}`, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "06 Jul 2024|2024-07-06 09:05:03 Saturday July 188 09AM %"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestLoad covers where templates come from: chat_template.jinja wins over
// chat_template.json, which wins over tokenizer_config.json; named template
// lists use "default"; special tokens come from tokenizer_config.json.
func TestLoad(t *testing.T) {
	// m renders the messages (Load checks that a template does).
	const m = "{% for m in messages %}|{{ m.content }}{% endfor %}"
	cfg := `{"bos_token": {"content": "<s>", "__type": "AddedToken"}, "eos_token": "</s>", "chat_template": "cfg {{ bos_token }}{{ eos_token }}` + m + `"}`
	tests := []struct {
		name    string
		files   map[string]string
		want    string
		wantErr string // "{dir}" stands for the model directory
	}{
		{"tokenizer_config", map[string]string{"tokenizer_config.json": cfg}, "cfg <s></s>|hi", ""},
		{"named list", map[string]string{"tokenizer_config.json": `{"chat_template": [{"name": "tool_use", "template": "tools"}, {"name": "default", "template": "default` + m + `"}]}`}, "default|hi", ""},
		{"chat_template.json", map[string]string{"tokenizer_config.json": cfg, "chat_template.json": `{"chat_template": "json {{ eos_token }}` + m + `"}`}, "json </s>|hi", ""},
		{"chat_template.jinja", map[string]string{"tokenizer_config.json": cfg, "chat_template.json": `{"chat_template": "json"}`, "chat_template.jinja": "jinja {{ bos_token }}" + m}, "jinja <s>|hi", ""},
		{"jinja without config", map[string]string{"chat_template.jinja": "only" + m}, "only|hi", ""},
		{"none", map[string]string{"tokenizer_config.json": `{"bos_token": "<s>"}`}, "", "no chat template"},
		{"empty dir", nil, "", "no chat template"},
		{"no default", map[string]string{"tokenizer_config.json": `{"chat_template": [{"name": "rag", "template": "x"}]}`}, "", `no template named "default"`},
		{"bad syntax", map[string]string{"chat_template.jinja": "{% if %}"}, "", "chat_template.jinja"},
		// Issue #17: a template that cannot build a prompt fails the
		// load, naming the file (and key), not the first message.
		{"empty in tokenizer_config", map[string]string{"tokenizer_config.json": `{"chat_template": ""}`}, "",
			`{dir}/tokenizer_config.json: "chat_template" is empty: the model has no chat template to build prompts with`},
		{"blank in chat_template.json", map[string]string{"chat_template.json": `{"chat_template": " \n "}`}, "",
			`{dir}/chat_template.json: "chat_template" is empty`},
		{"empty chat_template.jinja", map[string]string{"tokenizer_config.json": cfg, "chat_template.jinja": ""}, "",
			"{dir}/chat_template.jinja: the file is empty"},
		{"unknown filter", map[string]string{"tokenizer_config.json": `{"chat_template": "{{ messages[0].content | shout }}"}`}, "",
			"{dir}/tokenizer_config.json: the chat template fails on a short test conversation (user, assistant, user): "},
		{"unclosed block", map[string]string{"chat_template.jinja": "{% for m in messages %}{{ m.content }}"}, "",
			"{dir}/chat_template.jinja"},
		{"raise_exception", map[string]string{"chat_template.jinja": `{{ raise_exception("roles must alternate") }}`}, "",
			"{dir}/chat_template.jinja: the chat template fails on a short test conversation (user, assistant, user): roles must alternate"},
		{"renders nothing", map[string]string{"chat_template.jinja": "{% if false %}x{% endif %}"}, "",
			"{dir}/chat_template.jinja: the chat template renders a short test conversation as an empty prompt"},
		{"ignores the messages", map[string]string{"chat_template.jinja": "<bos>hello"}, "",
			"{dir}/chat_template.jinja: the chat template leaves the messages out of the prompt"},
		{"string doubling", map[string]string{"chat_template.jinja": `{% set s = "x" %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s }}` + m}, "",
			"{dir}/chat_template.jinja: the chat template fails on a short test conversation (user, assistant, user): rendering needs more than the renderer's memory limit of 512 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tmpl, err := Load(dir)
			if tc.wantErr != "" {
				want := strings.ReplaceAll(tc.wantErr, "{dir}", dir)
				if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("Load error = %v, want one line containing %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Render([]Message{{Role: "user", Content: "hi"}}, true)
			if err != nil || got != tc.want {
				t.Errorf("Render = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestLlama32DateFromClock renders Llama 3.2's template without date_string:
// it then asks strftime_now for today's date, which must come from the clock.
func TestLlama32DateFromClock(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "templates", "llama3.2.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, time.March, 9, 12, 0, 0, 0, time.UTC)
	tmpl, err := New(string(src), Options{SpecialTokens: map[string]string{"bos_token": "<|begin_of_text|>"}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render([]Message{{Role: "user", Content: "hi"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "Today Date: 09 Mar 2025\n") {
		t.Errorf("rendered prompt lacks the clock's date:\n%s", got)
	}
}
