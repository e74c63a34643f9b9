package ui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"

	"mlxchat/themes"
)

// palette is the command palette: while a /command is typed it shows on
// the notice line what it does (or, for a partial name, the commands it
// may become), and Tab completes it (Complete), listing the candidates
// when several remain.
type palette struct {
	// cands are the candidates of the last Tab, shown until the next key.
	cands []string
}

// tab completes the command line in v; it returns the new line and
// whether it changed.
func (p *palette) tab(v string) (string, bool) {
	nv, cands := Complete(v, themes.Names())
	p.cands = cands
	return nv, nv != v
}

// reset hides the candidates.
func (p *palette) reset() { p.cands = nil }

// line is the palette's notice line for the editor's text v, or "" when
// it has nothing to show: the Tab candidates, else the synopsis and help
// of the command being typed (all commands matching a partial name).
func (p *palette) line(v string, t themes.Theme, width int) string {
	if len(p.cands) > 0 {
		return ansi.Truncate(t.Dim.Render("  "+strings.Join(p.cands, "  ")), width, "…")
	}
	if !IsCommand(v) || strings.Contains(v, "\n") {
		return ""
	}
	s := strings.TrimLeft(v, " ")[1:]
	name, _, hasArg := strings.Cut(s, " ")
	name = strings.ToLower(name)
	var matches []commandSpec
	for _, c := range commandTable {
		if string(c.name) == name || (!hasArg && strings.HasPrefix(string(c.name), name)) {
			matches = append(matches, c)
		}
	}
	switch {
	case len(matches) == 0:
		return ""
	case len(matches) == 1 || string(matches[0].name) == name:
		c := matches[0]
		return ansi.Truncate(t.Dim.Render("  "+c.synopsis()+"  "+c.help), width, "…")
	}
	names := make([]string, len(matches))
	for i, c := range matches {
		names[i] = "/" + string(c.name)
	}
	return ansi.Truncate(t.Dim.Render("  "+strings.Join(names, "  ")), width, "…")
}

// synopsis is "/name ARGS".
func (c commandSpec) synopsis() string {
	s := "/" + string(c.name)
	if c.args != "" {
		s += " " + c.args
	}
	return s
}
