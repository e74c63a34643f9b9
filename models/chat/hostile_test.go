package chat

import (
	"strings"
	"testing"
	"time"
)

// TestHostileTemplates renders templates that would crash or exhaust an
// unguarded renderer (issue #17): each must fail with a one-line error
// naming the template, and the test process must survive.
func TestHostileTemplates(t *testing.T) {
	tests := []struct {
		name, source string
		want         string // "|" separates alternatives
	}{
		{"endless macro recursion", `{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}`, "recursion"},
		{"huge range", `{% for i in range(100000000) %}{{ i }}{% endfor %}`, "more than 1000000 items"},
		{"huge list", `{% set l = [1] %}{% for i in range(60) %}{% set l = l + l %}{% endfor %}{{ l|length }}`, "memory|longer than"},
		{"string doubling", `{% set s = "x" %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s|length }}`, "memory"},
		{"string repeat", `{{ "x" * 100000000000 }}`, "memory"},
		{"deep nesting", `{{ ` + strings.Repeat("(", 200000) + `1` + strings.Repeat(")", 200000) + ` }}`, "recursion"},
		{"endless loop", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, "longer than"},
		{"huge output", `{{ "x" * 5000000 }}`, "output limit of 1 MiB"},
		{"raise_exception", `{{ raise_exception("no system role") }}`, "no system role"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			tmpl, err := New(tc.source, Options{Name: "hostile.jinja"})
			if err == nil {
				// Small limits keep the test fast; the defaults are larger.
				tmpl.limits.MaxMemory, tmpl.limits.Timeout, tmpl.limits.MaxOutput = 256<<20, 15*time.Second, 1<<20
				if tc.name == "endless loop" || tc.name == "huge list" {
					tmpl.limits.Timeout = 2 * time.Second
				}
				_, err = tmpl.Render([]Message{{Role: "user", Content: "hi"}}, true)
			}
			if err == nil {
				t.Fatal("rendered without error")
			}
			msg := err.Error()
			found := false
			for _, w := range strings.Split(tc.want, "|") {
				found = found || strings.Contains(msg, w)
			}
			if !found || !strings.Contains(msg, "hostile.jinja") || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming hostile.jinja and containing %q", msg, tc.want)
			}
			t.Logf("%v after %v", msg, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestRenderExtraTypes checks that extra variables keep their Go types
// across the sandbox (an int is not a float, invalid UTF-8 stays as is).
func TestRenderExtraTypes(t *testing.T) {
	tmpl, err := New(`{{ i }} {{ f }} {{ b }} {{ n is none }} {{ l[1] }} {{ d.k }} {{ messages[0].content }}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.RenderWith([]Message{{Role: "user", Content: "a\xffb"}}, false,
		map[string]any{"i": 1, "f": 1.5, "b": true, "n": nil, "l": []any{int64(7), "x"}, "d": map[string]any{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "1 1.5 True True x v a\xffb"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := tmpl.RenderWith(nil, false, map[string]any{"bad": struct{}{}}); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("unsupported type: error %v", err)
	}
}

func BenchmarkRender(b *testing.B) {
	tmpl, err := New(`{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}`, Options{})
	if err != nil {
		b.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "hello"}, {Role: "assistant", Content: "hi"}}
	for b.Loop() {
		if _, err := tmpl.Render(msgs, true); err != nil {
			b.Fatal(err)
		}
	}
}
