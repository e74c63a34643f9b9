package chat

import (
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
