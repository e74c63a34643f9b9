package ui

import (
	"strings"
	"testing"

	"mlxchat/themes"
)

// TestPaletteLine: what the palette shows while a command is typed.
func TestPaletteLine(t *testing.T) {
	th, _ := themes.Get("dark", true)
	tests := []struct{ typed, want string }{
		{"hello", ""},
		{"//not a command", ""},
		{"/t", "/temp  /topp  /topk  /think  /theme"},
		{"/kv", "/kv N|off|bits 32|16|8  cap the live KV window"},
		{"/kv 64", "/kv N|off|bits 32|16|8  cap the live KV window"},
		{"/kv bits", "/kv N|off|bits 32|16|8  cap the live KV window at N tokens, at most the model's context, or remove the cap (off or 0: the context is the cap); bits: the cache's storage"},
		{"/pin 3", "/pin [N]  keep message N (the #N of its label; default: the last message) in the live window"},
		{"/unp", "/unpin [N]  release pinned message N"},
		{"/the", "/theme NAME  switch theme"},
		{"/bogus", ""},
		{"/kv 64\nmore", ""},
	}
	for _, tc := range tests {
		var p palette
		got := strings.TrimSpace(stripANSI(p.line(tc.typed, th, 200)))
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("palette for %q = %q, want %q", tc.typed, got, tc.want)
		}
	}
}

// TestPaletteTab completes and lists candidates until reset.
func TestPaletteTab(t *testing.T) {
	th, _ := themes.Get("dark", true)
	var p palette
	if nv, changed := p.tab("/the"); !changed || nv != "/theme " {
		t.Errorf("tab(/the) = %q, %v", nv, changed)
	}
	if nv, changed := p.tab("/t"); changed || nv != "/t" || len(p.cands) != 5 {
		t.Errorf("tab(/t) = %q, %v, candidates %v", nv, changed, p.cands)
	}
	if got := stripANSI(p.line("/t", th, 200)); !strings.Contains(got, "/temp  /topp  /topk  /think  /theme") {
		t.Errorf("candidates not shown: %q", got)
	}
	p.reset()
	if len(p.cands) != 0 {
		t.Error("reset kept the candidates")
	}
}
