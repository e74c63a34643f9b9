package themes

import (
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Theme is one complete look of the chat: lipgloss styles for every part of
// the screen plus the name of the glamour style used for model answers.
type Theme struct {
	// Name is the identifier used by --theme, /theme and the config file.
	Name string
	// Glamour is the glamour standard style name ("dark", "light", "notty",
	// ...) used to render markdown answers.
	Glamour string

	// UserLabel styles the "you" label in front of a user turn.
	UserLabel lipgloss.Style
	// UserText styles the text of a user turn.
	UserText lipgloss.Style
	// ModelLabel styles the model-name label in front of an answer.
	ModelLabel lipgloss.Style
	// Info styles notices (command results, help, /stats output).
	Info lipgloss.Style
	// Error styles one-line error notices.
	Error lipgloss.Style
	// Dim styles secondary text (hints, units, separators).
	Dim lipgloss.Style
	// Accent styles highlighted values (speeds, names).
	Accent lipgloss.Style
	// Status styles the whole status line.
	Status lipgloss.Style
	// MeterFill styles the filled part of the live-window bar.
	MeterFill lipgloss.Style
	// MeterEmpty styles the empty part of the live-window bar.
	MeterEmpty lipgloss.Style
	// MeterFlash styles the bar for a moment after a trim.
	MeterFlash lipgloss.Style
	// Paste styles a collapsed paste block in the input and the conversation.
	Paste lipgloss.Style
	// Prompt styles the input prompt glyph.
	Prompt lipgloss.Style
	// Border styles the rule between conversation and input.
	Border lipgloss.Style
	// Trimmed styles conversation text the model no longer attends
	// (outside the live window): faint, in the dim colour.
	Trimmed lipgloss.Style
	// Cut styles the marker line where a message is cut by the live
	// window, and the fit-check warning.
	Cut lipgloss.Style
	// Fold styles the header line of a folded or unfolded part of an
	// answer (piece summaries; thinking).
	Fold lipgloss.Style
	// Progress is the colour (hex) of the model-loading progress bar.
	Progress string
}

// palette is the handful of colours a theme is built from.
type palette struct {
	fg, dim, accent, user, model, info, err, fill, empty, flash, paste, border, progress string
}

func build(name, glamour string, p palette, noColor bool) Theme {
	c := func(s lipgloss.Style, col string) lipgloss.Style {
		if noColor || col == "" {
			return s
		}
		return s.Foreground(lipgloss.Color(col))
	}
	t := Theme{
		Name:       name,
		Glamour:    glamour,
		UserLabel:  c(lipgloss.NewStyle().Bold(true), p.user),
		UserText:   c(lipgloss.NewStyle(), p.fg),
		ModelLabel: c(lipgloss.NewStyle().Bold(true), p.model),
		Info:       c(lipgloss.NewStyle(), p.info),
		Error:      c(lipgloss.NewStyle().Bold(true), p.err),
		Dim:        c(lipgloss.NewStyle(), p.dim),
		Accent:     c(lipgloss.NewStyle().Bold(true), p.accent),
		Status:     c(lipgloss.NewStyle(), p.fg),
		MeterFill:  c(lipgloss.NewStyle(), p.fill),
		MeterEmpty: c(lipgloss.NewStyle(), p.empty),
		MeterFlash: c(lipgloss.NewStyle().Bold(true), p.flash),
		Paste:      c(lipgloss.NewStyle().Italic(true), p.paste),
		Prompt:     c(lipgloss.NewStyle().Bold(true), p.accent),
		Border:     c(lipgloss.NewStyle(), p.border),
		Trimmed:    c(lipgloss.NewStyle().Faint(true), p.dim),
		Cut:        c(lipgloss.NewStyle().Bold(true), p.flash),
		Fold:       c(lipgloss.NewStyle().Italic(true), p.dim),
		Progress:   p.progress,
	}
	if noColor {
		// Without colour the flash must still be visible: reverse video.
		t.MeterFlash = lipgloss.NewStyle().Reverse(true)
		t.Glamour = "notty"
		t.Progress = ""
	}
	return t
}

var palettes = map[string]struct {
	glamour string
	p       palette
}{
	"dark": {"dark", palette{
		fg: "#c0caf5", dim: "#737aa2", accent: "#7aa2f7", user: "#9ece6a", model: "#bb9af7",
		info: "#7dcfff", err: "#f7768e", fill: "#7aa2f7", empty: "#3b4261", flash: "#ff9e64",
		paste: "#e0af68", border: "#3b4261", progress: "#7aa2f7",
	}},
	"light": {"light", palette{
		fg: "#343b58", dim: "#6c6e75", accent: "#2959aa", user: "#385f0d", model: "#7b43ba",
		info: "#006c86", err: "#b6003a", fill: "#2959aa", empty: "#c0c4d6", flash: "#b15c00",
		paste: "#8f5e15", border: "#c0c4d6", progress: "#2959aa",
	}},
	"high-contrast": {"dark", palette{
		fg: "#ffffff", dim: "#d0d0d0", accent: "#ffff00", user: "#00ff00", model: "#00ffff",
		info: "#ffffff", err: "#ff0000", fill: "#ffffff", empty: "#808080", flash: "#ffff00",
		paste: "#ff00ff", border: "#ffffff", progress: "#ffffff",
	}},
}

// Default is the theme name used when none is configured.
const Default = "dark"

// Names returns the available theme names, sorted.
func Names() []string {
	names := make([]string, 0, len(palettes))
	for n := range palettes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Get returns the theme called name (case-insensitive; "" means Default).
// With noColor (the caller passes true when NO_COLOR is set) every colour is
// dropped and only bold/italic/reverse remain, and glamour uses "notty".
func Get(name string, noColor bool) (Theme, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if key == "" {
		key = Default
	}
	e, ok := palettes[key]
	if !ok {
		return Theme{}, fmt.Errorf("unknown theme %q (expected one of %s)", name, strings.Join(Names(), ", "))
	}
	return build(key, e.glamour, e.p, noColor), nil
}
