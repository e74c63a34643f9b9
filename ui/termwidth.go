package ui

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// Terminals lay out text one code point at a time (wcwidth): spacing
// combining marks such as Devanagari ा or Bengali ী take a column, while
// go-runewidth (used by glamour's word wrap) and grapheme-based widths
// (bubbletea's renderer) count them as zero. A line of Hindi or Bengali
// then runs past the window, the terminal wraps it on its own, and every
// later frame is drawn one row off. cellWidth counts as the terminal does,
// and fitWidth re-wraps whatever the libraries laid out too wide.

// cellWidth is the number of terminal columns r takes: 0 for nonspacing
// and enclosing marks, format characters and controls, 2 for East Asian
// wide and fullwidth characters and emoji, 1 for everything else.
func cellWidth(r rune) int {
	switch {
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return 0
	case r >= 0x1160 && r <= 0x11ff: // Hangul medial vowels and final consonants
		return 0
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	case runewidth.RuneWidth(r) == 2:
		return 2
	}
	return 1
}

// textWidth is the terminal width of s, skipping ANSI escape sequences.
func textWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			i += escapeLen(s[i:])
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += cellWidth(r)
		i += size
	}
	return n
}

// fitWidth breaks every line of s that is wider than width columns (as the
// terminal counts them) into several, keeping escape sequences intact and
// carrying the active SGR styling over to the continuation lines. Lines
// that fit are returned unchanged.
func fitWidth(s string, width int) string {
	if width <= 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	changed := false
	for i, l := range lines {
		if textWidth(l) > width {
			lines[i] = hardWrap(l, width)
			changed = true
		}
	}
	if !changed {
		return s
	}
	return strings.Join(lines, "\n")
}

// truncateLines cuts every line of s to at most width columns. Applied to
// what fitWidth already wrapped, it only drops the padding that layout
// libraries add when they undercount a line's width.
func truncateLines(s string, width int) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = truncateWidth(l, width)
	}
	return strings.Join(lines, "\n")
}

// truncateWidth cuts a single line to at most width columns.
func truncateWidth(s string, width int) string {
	if textWidth(s) <= width {
		return s
	}
	first, _, _ := strings.Cut(hardWrap(s, width), "\n")
	return first
}

// hardWrap splits one line into lines of at most width columns.
func hardWrap(line string, width int) string {
	var out strings.Builder
	var styles []string // SGR sequences in force since the last reset
	col := 0
	for i := 0; i < len(line); {
		if line[i] == 0x1b {
			n := escapeLen(line[i:])
			seq := line[i : i+n]
			if isSGR(seq) {
				if seq == "\x1b[0m" || seq == "\x1b[m" {
					styles = styles[:0]
				} else {
					styles = append(styles, seq)
				}
			}
			out.WriteString(seq)
			i += n
			continue
		}
		r, size := utf8.DecodeRuneInString(line[i:])
		w := cellWidth(r)
		if col+w > width && col > 0 {
			if len(styles) > 0 {
				out.WriteString("\x1b[0m")
			}
			out.WriteByte('\n')
			for _, st := range styles {
				out.WriteString(st)
			}
			col = 0
		}
		out.WriteString(line[i : i+size])
		col += w
		i += size
	}
	return out.String()
}

// escapeLen is the byte length of the escape sequence at the start of s
// (which begins with ESC): CSI up to its final byte, OSC/DCS/APC up to BEL
// or ST, anything else two bytes.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		for j := 2; j < len(s); j++ {
			if s[j] >= 0x40 && s[j] <= 0x7e {
				return j + 1
			}
		}
		return len(s)
	case ']', 'P', '_', '^':
		for j := 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return len(s)
	}
	return 2
}

func isSGR(seq string) bool {
	return len(seq) >= 3 && seq[1] == '[' && seq[len(seq)-1] == 'm'
}
