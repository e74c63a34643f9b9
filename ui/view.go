package ui

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

func stripANSI(s string) string { return ansi.Strip(s) }

// sanitize makes text safe to draw: a model (or a loaded file) can produce
// control bytes such as ESC or CR that would move the terminal's cursor and
// corrupt the screen. C0 controls become their Unicode control pictures
// (ESC -> ␛), DEL ␡, C1 controls and bidirectional overrides U+FFFD; tabs
// become four spaces; newlines stay.
func sanitize(s string) string {
	clean := true
	for _, r := range s {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0) || isBidiControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20:
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune('␡')
		case r >= 0x80 && r < 0xa0, isBidiControl(r):
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x2028 || r == 0x2029
}

// layout sizes the editor and the conversation to the window.
func (m *model) layout() {
	w, h := m.width, m.height
	if w < 10 {
		w = 10
	}
	in := m.ed.wantHeight(m.height)
	m.ed.resize(w, in)
	vh := h - in - 2 - max(m.noticeH, 1) // rule, notice lines, status line
	if vh < 1 {
		vh = 1
	}
	m.tr.resize(m.width, w, vh)
}

func (m *model) welcome() string {
	if m.phase == phaseLoading {
		return ""
	}
	return m.theme.Dim.Render(fmt.Sprintf("  %s is ready. Type a message; /help lists commands.", m.shortModel()))
}

// shortModel is the model name for labels: the last path element.
func (m *model) shortModel() string {
	n := m.displayModel()
	if n == "" {
		return "model"
	}
	return filepath.Base(strings.TrimRight(n, "/"))
}

// View draws the screen: the conversation (or the loading view), a rule,
// the editor, the notice area and the status line.
func (m *model) View() string {
	if m.phase == phaseQuit {
		return ""
	}
	top := m.tr.view(m.width)
	if m.phase == phaseLoading {
		top = m.loadingView()
	}
	rule := strings.Repeat("─", m.width)
	if !m.tr.atBottom() {
		more := fmt.Sprintf(" ↓ %d%% · PgDn ", int(m.tr.vp.ScrollPercent()*100))
		if lipgloss.Width(more)+2 < m.width {
			rule = strings.Repeat("─", m.width-lipgloss.Width(more)-2) + more + "──"
		}
	}
	parts := []string{top, m.theme.Border.Render(rule), m.ed.view()}
	for _, l := range m.noticeLines() {
		parts = append(parts, truncateWidth(l, m.width))
	}
	parts = append(parts, truncateWidth(m.st.line(m.phase, m.width), m.width))
	return strings.Join(parts, "\n")
}

// noticeLines is the message area: Tab candidates, errors and
// confirmations, the palette's help for a command being typed, or key
// hints for the phase.
func (m *model) noticeLines() []string {
	v := m.ed.value()
	if len(m.pal.cands) > 0 {
		return []string{m.pal.line(v, m.theme, m.width)}
	}
	if m.st.notice.text != "" && (m.st.notice.err || !IsCommand(v)) {
		return m.st.noticeLines(m.width, m.height)
	}
	if l := m.pal.line(v, m.theme, m.width); l != "" {
		return []string{l}
	}
	if m.st.notice.text != "" {
		return m.st.noticeLines(m.width, m.height)
	}
	hint := "Enter send · Alt+Enter newline · ↑↓ history · Tab complete · /help · Ctrl+C twice quit"
	if m.phase.busy() {
		hint = "Esc stop · PgUp/PgDn scroll · Ctrl+C twice quit"
	}
	return []string{ansi.Truncate(m.theme.Dim.Render(hint), m.width, "…")}
}

// fitNotice gives the notice area the lines the notice needs.
func (m *model) fitNotice() {
	if n := len(m.noticeLines()); n != m.noticeH {
		m.noticeH = n
		m.layout()
	}
}

// loadingView fills the conversation area until the engine is ready; the
// editor below already takes input.
func (m *model) loadingView() string {
	l := &m.load
	var b strings.Builder
	b.WriteString(m.theme.Accent.Render("mlxchat") + "\n\n")
	b.WriteString("loading " + m.theme.ModelLabel.Render(m.displayModel()) + "\n\n")
	stage := l.stage
	if stage == "" {
		stage = "starting"
	}
	if l.total > 0 {
		pct := min(float64(l.done)/float64(l.total), 1)
		l.prog.Width = min(max(m.width-8, 10), 60)
		b.WriteString(stage + "\n")
		b.WriteString(l.prog.ViewAs(pct) + "\n")
		if l.total >= 1<<16 { // bytes; smaller totals are step counts
			b.WriteString(m.theme.Dim.Render(fmt.Sprintf("%s / %s", formatBytes(l.done), formatBytes(l.total))))
		} else {
			b.WriteString(m.theme.Dim.Render(fmt.Sprintf("%d / %d", l.done, l.total)))
		}
	} else {
		b.WriteString(l.spin.View() + " " + stage)
		if l.done > 0 {
			b.WriteString(m.theme.Dim.Render(fmt.Sprintf("  %s", formatBytes(l.done))))
		}
	}
	return lipgloss.Place(m.width, m.tr.vp.Height, lipgloss.Center, lipgloss.Center, b.String())
}
