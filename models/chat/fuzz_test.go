package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzRender compiles and renders arbitrary templates over a conversation.
// Whatever the template does, the test process must survive and an error
// must be one line naming the template. Seeds: testdata/fuzz/FuzzRender
// (the real templates of testdata/templates and hostile ones).
func FuzzRender(f *testing.F) {
	f.Add(`{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}`, "hello")
	f.Fuzz(func(t *testing.T, source, content string) {
		if len(source) > 1<<14 || len(content) > 1<<12 {
			return
		}
		tmpl, err := New(source, Options{Name: "fuzz.jinja", SpecialTokens: map[string]string{"bos_token": "<s>", "eos_token": "</s>"}})
		if err == nil {
			tmpl.limits.MaxMemory, tmpl.limits.Timeout, tmpl.limits.MaxOutput = 256<<20, 2*time.Second, 1<<20
			_, err = tmpl.Render([]Message{{Role: "system", Content: "sys"}, {Role: "user", Content: content}, {Role: "assistant", Content: content}}, true)
		}
		if err != nil && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "fuzz.jinja")) {
			t.Fatalf("error %q: want one line naming fuzz.jinja", err)
		}
	})
}

// FuzzTemplateFiles feeds arbitrary bytes as a model's tokenizer_config.json
// and, when json is set, chat_template.json: the two files from which Load
// takes the special-token strings and the template source (a downloaded
// repo is untrusted input). Reading them must never panic, and an error
// is one line naming the file it is about. Rendering what they hold is
// FuzzRender's. Seeds: testdata/fuzz/FuzzTemplateFiles.
func FuzzTemplateFiles(f *testing.F) {
	f.Add([]byte(`{"bos_token":"<bos>","eos_token":{"content":"<eos>","lstrip":false},"chat_template":"{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"}`), []byte(nil), false)
	f.Add([]byte(`{"chat_template":[{"name":"default","template":"{{ messages }}"},{"name":"tool_use","template":"x"}]}`), []byte(nil), false)
	f.Add([]byte(`{"eos_token":"</s>"}`), []byte(`{"chat_template":"{% for m in messages %}{{ m.role }}{% endfor %}"}`), true)
	f.Fuzz(func(t *testing.T, cfg, tmplJSON []byte, json bool) {
		dir := t.TempDir()
		cfgPath := filepath.Join(dir, "tokenizer_config.json")
		if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		jsonPath := filepath.Join(dir, "chat_template.json")
		if json {
			if err := os.WriteFile(jsonPath, tmplJSON, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		oneLine := func(what string, err error, names ...string) {
			msg := err.Error()
			named := false
			for _, n := range names {
				named = named || strings.Contains(msg, n)
			}
			if strings.Contains(msg, "\n") || !named {
				t.Fatalf("%s: error %q is not one line naming %v", what, msg, names)
			}
		}
		if _, err := specialTokens(cfg); err != nil {
			oneLine("special tokens", err, "tokenizer_config.json", "bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
		}
		if _, from, err := findTemplate(dir, cfg); err != nil {
			oneLine("template", err, cfgPath, jsonPath, dir)
		} else if from != cfgPath && from != jsonPath {
			t.Fatalf("template taken from %q", from)
		}
	})
}
