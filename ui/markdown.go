package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/glamour"
	"github.com/muesli/termenv"
)

// markdown renders answers with glamour at one width and style.
type markdown struct {
	style   string
	width   int
	profile termenv.Profile
	r       *glamour.TermRenderer
}

// newMarkdown builds a renderer; width is the wrap width in cells.
func newMarkdown(style string, width int, profile termenv.Profile) (*markdown, error) {
	if width < 10 {
		width = 10
	}
	r, err := glamour.NewTermRenderer(
		glamour.WithStandardStyle(style),
		glamour.WithWordWrap(width),
		glamour.WithColorProfile(profile),
	)
	if err != nil {
		return nil, fmt.Errorf("markdown style %q: %w", style, err)
	}
	return &markdown{style: style, width: width, profile: profile, r: r}, nil
}

// render returns s as styled terminal text without the blank lines glamour
// puts around a document and without trailing padding. A render failure
// falls back to the plain text so an answer is never lost.
func (m *markdown) render(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	out, err := m.r.Render(s)
	if err != nil {
		return s
	}
	return tidy(out)
}

// tidy trims trailing spaces of every line and drops leading and trailing
// blank lines.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	blank := func(l string) bool { return strings.TrimSpace(stripANSI(l)) == "" }
	for len(lines) > 0 && blank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && blank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// stableSplit returns the byte offset up to which the markdown text s is made
// of finished blocks: the end of the last blank line that is outside a fenced
// code block. Text before it will not change how it renders when more tokens
// arrive; text after it (the unfinished tail) may.
func stableSplit(s string) int {
	split := 0
	inFence := false
	fence := ""
	pos := 0
	for pos < len(s) {
		nl := strings.IndexByte(s[pos:], '\n')
		if nl < 0 {
			break // the last line is unfinished
		}
		line := s[pos : pos+nl]
		next := pos + nl + 1
		t := strings.TrimSpace(line)
		switch {
		case inFence:
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				inFence = false
			}
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			inFence = true
			fence = t[:3]
		case t == "":
			split = next
		}
		pos = next
	}
	return split
}

// stream is an answer being rendered while it grows: the finished blocks are
// rendered once and kept, only the unfinished tail is rendered again.
type stream struct {
	text      string // the whole answer so far
	stableEnd int    // text[:stableEnd] is rendered into stable
	stable    []string
	out       string // last full rendering
}

// update renders what changed since the last call and returns the whole
// rendering; clean makes each piece safe to draw before it is rendered.
func (st *stream) update(md *markdown, clean func(string) string) string {
	if split := stableSplit(st.text); split > st.stableEnd {
		if r := md.render(clean(st.text[st.stableEnd:split])); r != "" {
			st.stable = append(st.stable, r)
		}
		st.stableEnd = split
	}
	parts := st.stable
	if tail := md.render(clean(st.text[st.stableEnd:])); tail != "" {
		parts = append(parts[:len(parts):len(parts)], tail)
	}
	st.out = strings.Join(parts, "\n\n")
	return st.out
}

// reset forgets the cached rendering (after a resize or theme change).
func (st *stream) reset() {
	st.stableEnd = 0
	st.stable = nil
	st.out = ""
}
