package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

func TestCellWidth(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"A", 1},
		{"বী", 2},      // Bengali BA + vowel sign II (a spacing mark: one column)
		{"आगे", 2},     // Devanagari AA, GA + vowel sign E (nonspacing: none)
		{"அந்த", 3},    // Tamil with a virama (nonspacing)
		{"小编", 4},      // wide CJK
		{"e\u0301", 1}, // e + combining acute
		{"\x1b[1mbold\x1b[0m", 4},
		{"\u200b", 0}, // zero width space (format)
	}
	for _, tc := range tests {
		if got := textWidth(tc.s); got != tc.want {
			t.Errorf("textWidth(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// TestFitWidth: a line that the terminal would wrap by itself is broken
// into lines that fit, keeping every character, escape sequences intact
// and the style carried over; lines that fit are untouched.
func TestFitWidth(t *testing.T) {
	hindi := strings.Repeat("बी", 30) // 60 columns, 30 by go-runewidth
	tests := []struct {
		name  string
		in    string
		width int
		lines int
	}{
		{"fits", "hello\nworld", 10, 2},
		{"spacing marks", hindi, 20, 3},
		{"styled", "\x1b[31m" + hindi + "\x1b[0m", 25, 3},
		{"wide", strings.Repeat("小", 10), 5, 5}, // two per line: a third would need 6 columns
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fitWidth(tc.in, tc.width)
			lines := strings.Split(got, "\n")
			if len(lines) != tc.lines {
				t.Fatalf("%d lines, want %d: %q", len(lines), tc.lines, got)
			}
			for _, l := range lines {
				if w := textWidth(l); w > tc.width {
					t.Fatalf("line %q is %d columns, over %d", l, w, tc.width)
				}
			}
			if stripANSI(strings.ReplaceAll(got, "\n", "")) != stripANSI(strings.ReplaceAll(tc.in, "\n", "")) {
				t.Fatalf("text changed: %q -> %q", tc.in, got)
			}
			if strings.HasPrefix(tc.in, "\x1b[31m") && !strings.HasPrefix(lines[1], "\x1b[31m") {
				t.Fatalf("style not carried to the next line: %q", lines[1])
			}
		})
	}
	if got := truncateWidth(hindi, 7); textWidth(got) > 7 {
		t.Fatalf("truncateWidth left %q (%d columns)", got, textWidth(got))
	}
}

// TestViewFitsTerminalWithSpacingMarks: an answer in Bengali and Hindi,
// streamed and finished, never draws a line wider than the window as the
// terminal counts it (the libraries count spacing marks as zero columns,
// and a terminal that wraps on its own shifts every later frame).
func TestViewFitsTerminalWithSpacingMarks(t *testing.T) {
	m, fe := newTestModel(t)
	const width = 60
	update(m, tea.WindowSizeMsg{Width: width, Height: 20})
	ready(m)
	_, id := send(t, m, fe, "hello")
	answer := strings.Repeat("বী आगे काला ", 20)
	events(m, engine.Token{Header: hdr(id, time.Second), Text: answer, Tokens: 60})
	update(m, frameMsg{})
	check := func(when string) {
		t.Helper()
		for _, l := range strings.Split(m.View(), "\n") {
			if w := textWidth(l); w > width {
				t.Fatalf("%s: line of %d columns in a %d-column window: %q", when, w, width, stripANSI(l))
			}
		}
	}
	check("streaming")
	events(m, engine.Done{Header: hdr(id, 2*time.Second), Reason: engine.DoneStop, Text: answer, Tokens: 60})
	check("done")
}
