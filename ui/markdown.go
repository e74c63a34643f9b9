package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/glamour"
	"github.com/charmbracelet/x/ansi"
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
	out, err := m.r.Render(escapeHTML(s))
	if err != nil {
		return s
	}
	return wrapLong(tidy(out), m.width)
}

// wrapLong breaks the lines wider than width cells that glamour leaves
// whole (a word longer than the line: a URL, a hash, a path) and indents
// each continuation as the line itself is indented, so that the terminal
// does not wrap them to column 0, outside the block.
func wrapLong(s string, width int) string {
	if !strings.Contains(s, "\n") && ansi.StringWidth(s) <= width {
		return s
	}
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if ansi.StringWidth(l) <= width {
			out = append(out, l)
			continue
		}
		plain := stripANSI(l)
		lead := len(plain) - len(strings.TrimLeft(plain, " "))
		if lead > width/2 {
			lead = 0
		}
		out = append(out, ansi.Truncate(l, width, ""))
		rest := ansi.TruncateLeft(l, width, "")
		for _, c := range strings.Split(ansi.Hardwrap(rest, width-lead, true), "\n") {
			out = append(out, strings.Repeat(" ", lead)+c)
		}
	}
	return strings.Join(out, "\n")
}

// escapeHTML backslash-escapes every '<' that could open raw HTML outside
// code, so text such as "#include <vector>" or "<b>" in an answer is shown
// as written: glamour drops raw HTML, which would silently hide part of
// the answer. Code spans, fenced and indented code blocks, and autolinks
// (<https://...>) are left alone.
func escapeHTML(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	inFence, fence := false, ""
	prevBlank, prevCode, inList := true, false, false
	lines := strings.SplitAfter(s, "\n")
	for _, line := range lines {
		body := strings.TrimRight(line, "\r\n")
		t := strings.TrimLeft(body, " ")
		lead := len(body) - len(t)
		blank := strings.TrimSpace(body) == ""
		switch {
		case inFence:
			if lead < 4 && strings.HasPrefix(t, fence) && strings.Trim(strings.TrimSpace(t), fence[:1]) == "" {
				inFence = false
			}
			b.WriteString(line)
		case lead < 4 && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			inFence, fence = true, t[:3]
			b.WriteString(line)
		case !blank && (lead >= 4 || strings.HasPrefix(body, "\t")) && (prevCode || (prevBlank && !inList)):
			prevCode = true // indented code block
			b.WriteString(line)
		default:
			prevCode = prevCode && blank
			if !blank {
				inList = isListItem(t) || (inList && lead > 0) || (inList && !prevBlank)
			}
			b.WriteString(escapeLine(line))
		}
		prevBlank = blank
	}
	return b.String()
}

// isListItem reports whether a line (leading spaces removed) starts a list
// item: "- ", "* ", "+ " or "1. " / "1) ".
func isListItem(t string) bool {
	if len(t) >= 2 && strings.ContainsRune("-*+", rune(t[0])) && t[1] == ' ' {
		return true
	}
	i := 0
	for i < len(t) && i < 9 && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(t) && (t[i] == '.' || t[i] == ')') && t[i+1] == ' '
}

// escapeLine escapes '<' outside code spans and autolinks in one line.
func escapeLine(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line):
			b.WriteString(line[i : i+2]) // an escape the author wrote
			i += 2
		case c == '`':
			n := 0
			for i+n < len(line) && line[i+n] == '`' {
				n++
			}
			run := line[i : i+n]
			end := closingRun(line, i+n, n)
			if end < 0 {
				b.WriteString(run)
				i += n
				continue
			}
			b.WriteString(line[i : end+n]) // the code span, verbatim
			i = end + n
		case c == '<':
			if n := autolinkLen(line[i:]); n > 0 {
				b.WriteString(line[i : i+n])
				i += n
				continue
			}
			if i+1 < len(line) && (isASCIILetter(line[i+1]) || strings.IndexByte("/!?", line[i+1]) >= 0) {
				b.WriteString("\\<")
			} else {
				b.WriteByte('<')
			}
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// closingRun finds the next run of exactly n backticks at or after from.
func closingRun(line string, from, n int) int {
	for j := from; j < len(line); {
		if line[j] != '`' {
			j++
			continue
		}
		k := j
		for k < len(line) && line[k] == '`' {
			k++
		}
		if k-j == n {
			return j
		}
		j = k
	}
	return -1
}

// autolinkLen is the length of a CommonMark URI autolink at the start of s
// (<scheme:...>), or 0.
func autolinkLen(s string) int {
	i := 1
	for i < len(s) && i <= 33 && (isASCIILetter(s[i]) || (i > 1 && (s[i] >= '0' && s[i] <= '9' || s[i] == '+' || s[i] == '.' || s[i] == '-'))) {
		i++
	}
	if i < 3 || i >= len(s) || s[i] != ':' {
		return 0
	}
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '>':
			return j + 1
		case c == '<' || c == ' ' || c < 0x20:
			return 0
		}
	}
	return 0
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

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
