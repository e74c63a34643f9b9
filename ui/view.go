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
	in := m.inputHeight()
	m.inputH = in
	m.ta.SetWidth(w)
	m.ta.SetHeight(in)
	vh := h - in - 2 - max(m.noticeH, 1) // rule, notice lines, status line
	if vh < 1 {
		vh = 1
	}
	wasBottom := m.vp.AtBottom()
	m.vp.Width = w
	m.vp.Height = vh
	if wasBottom {
		m.vp.GotoBottom()
	}
}

// refresh re-renders the conversation into the viewport. Finished turns
// come from their cache (rendered and fitted once); only a streaming
// answer's unfinished tail is rendered again on a frame.
func (m *model) refresh() {
	m.dirty = false
	parts := make([]string, 0, len(m.turns))
	for i := range m.turns {
		parts = append(parts, m.renderTurn(&m.turns[i]))
	}
	// fitWidth works line by line, so fitting each turn equals fitting the
	// joined text.
	content := strings.Join(parts, "\n\n")
	if len(m.turns) == 0 {
		content = fitWidth(m.welcome(), m.vp.Width)
	}
	wasBottom := m.vp.AtBottom() || m.vp.TotalLineCount() <= m.vp.Height
	m.vp.SetContent(content)
	if wasBottom {
		m.vp.GotoBottom()
	}
}

func (m *model) welcome() string {
	if !m.ready {
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

// renderTurn renders one block fitted to the viewport width, from cache
// when nothing changed.
func (m *model) renderTurn(t *turn) string {
	w := m.width
	if t.stream == nil && t.outOK && t.outWide == w && t.outFit == m.vp.Width {
		return t.out
	}
	var out string
	switch t.kind {
	case turnUser:
		body := sanitize(t.display)
		for _, p := range t.pastes {
			body = strings.Replace(body, p.Label, m.theme.Paste.Render(p.Label), 1)
		}
		out = m.theme.UserLabel.Render("you") + "\n" + indent(ansi.Wrap(m.theme.UserText.Render(body), w-2, ""), "  ")
	case turnAssistant:
		label := m.theme.ModelLabel.Render(m.shortModel())
		if t.note != "" {
			label += m.theme.Dim.Render(" · " + t.note)
		}
		var body string
		if t.stream != nil {
			body = t.stream.update(m.md, sanitize)
			if body == "" {
				body = "  " + m.theme.Dim.Render("…")
			}
		} else {
			body = m.md.render(sanitize(t.content))
		}
		out = label + "\n" + body
	case turnInfo:
		out = indent(m.theme.Info.Render(ansi.Wrap(sanitize(t.content), w-2, "")), "  ")
	case turnError:
		out = indent(m.theme.Error.Render(ansi.Wrap(sanitize(t.content), w-2, "")), "  ")
	}
	out = fitWidth(out, m.vp.Width)
	if t.stream == nil {
		t.out, t.outOK, t.outWide, t.outFit = out, true, w, m.vp.Width
	}
	return out
}

func indent(s, pad string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n")
}

// View draws the screen.
func (m *model) View() string {
	if m.quitting {
		return ""
	}
	top := truncateLines(m.vp.View(), m.width)
	if !m.ready {
		top = m.loadingView()
	}
	rule := strings.Repeat("─", m.width)
	if !m.vp.AtBottom() {
		more := fmt.Sprintf(" ↓ %d%% · PgDn ", int(m.vp.ScrollPercent()*100))
		if lipgloss.Width(more)+2 < m.width {
			rule = strings.Repeat("─", m.width-lipgloss.Width(more)-2) + more + "──"
		}
	}
	parts := []string{top, m.theme.Border.Render(rule), m.ta.View()}
	for _, l := range m.noticeLines() {
		parts = append(parts, truncateWidth(l, m.width))
	}
	parts = append(parts, truncateWidth(m.statusLine(), m.width))
	return strings.Join(parts, "\n")
}

// maxNoticeLines is how many lines a notice may wrap to (the conversation
// gives up the room); completions and key hints take one line.
const maxNoticeLines = 3

// noticeLines is the message area: errors, confirmations, completions, or
// key hints. Errors and confirmations wrap (wrapNotice).
func (m *model) noticeLines() []string {
	var s string
	switch {
	case len(m.completions) > 0:
		s = m.theme.Dim.Render("  " + strings.Join(m.completions, "  "))
	case m.notice != "":
		return m.wrapNotice()
	case m.gen != nil:
		s = m.theme.Dim.Render("Esc stop · PgUp/PgDn scroll · Ctrl+C twice quit")
	default:
		s = m.theme.Dim.Render("Enter send · Alt+Enter newline · ↑↓ history · Tab complete · /help · Ctrl+C twice quit")
	}
	return []string{ansi.Truncate(s, m.width, "…")}
}

// wrapNotice wraps the notice to at most maxNoticeLines (and a third of
// the screen); an error longer still shows its cause first (causeFirst).
func (m *model) wrapNotice() []string {
	limit := max(1, min(maxNoticeLines, m.height/3))
	w := max(m.width-2, 1)
	text := m.notice
	lines := strings.Split(ansi.Wrap(text, w, ""), "\n")
	if len(lines) > limit && m.noticeErr {
		text = causeFirst(m.notice, m.noticeCause, w*limit)
		lines = strings.Split(ansi.Wrap(text, w, ""), "\n")
	}
	if len(lines) > limit {
		lines = lines[:limit]
		lines[limit-1] = ansi.Truncate(lines[limit-1]+" …", w, "…")
	}
	style, mark := m.theme.Info, "• "
	if m.noticeErr {
		style, mark = m.theme.Error, "✗ "
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if i > 0 {
			mark = "  "
		}
		out[i] = ansi.Truncate(style.Render(mark+l), m.width, "…")
	}
	return out
}

// fitNotice gives the notice area the lines the notice needs.
func (m *model) fitNotice() {
	if n := len(m.noticeLines()); n != m.noticeH {
		m.noticeH = n
		m.layout()
	}
}

// causeFirst returns notice as is when it fits width cells; otherwise,
// when it ends with its cause (": no space left on device"), the cause
// moves to the front, so truncating the rest never hides why it failed.
func causeFirst(notice, cause string, width int) string {
	if cause == "" || lipgloss.Width(notice) <= width {
		return notice
	}
	rest := strings.TrimSuffix(strings.TrimSuffix(notice, cause), ": ")
	return cause + " — " + rest
}

// statusLine is the live-window meter followed by speed, a stop hint while
// answering, and memory; segments that do not fit are left out whole, in
// that order of priority from the end.
func (m *model) statusLine() string {
	sep := m.theme.Dim.Render(" │ ")
	var segs []string
	if g := m.gen; g != nil && !g.inDecode {
		if p := g.prefill; p.Chunks > 0 {
			seg := fmt.Sprintf("prefill %d/%d chunks", p.Chunk, p.Chunks)
			if p.TokPerSec > 0 {
				seg += " · " + m.theme.Accent.Render(fmt.Sprintf("%.0f", p.TokPerSec)) + " tok/s"
			}
			segs = append(segs, seg)
		} else {
			segs = append(segs, "prefill …")
		}
	} else if m.decodeTPS > 0 {
		segs = append(segs, fmt.Sprintf("decode %s tok/s", m.theme.Accent.Render(fmt.Sprintf("%.1f", m.decodeTPS))))
	}
	if m.gen != nil {
		segs = append(segs, m.theme.Dim.Render("Esc stop"))
	}
	if m.stats != nil && m.stats.MemoryBytes > 0 {
		segs = append(segs, "mem "+formatBytes(m.stats.MemoryBytes))
	}
	// The meter gets more compact before the first segment (prefill
	// progress or decode speed) is left out.
	line := m.meterView(0)
	for level := 1; level < meterLevels && len(segs) > 0 &&
		lipgloss.Width(line)+lipgloss.Width(sep)+lipgloss.Width(segs[0]) > m.width; level++ {
		line = m.meterView(level)
	}
	for _, seg := range segs {
		if lipgloss.Width(line)+lipgloss.Width(sep)+lipgloss.Width(seg) > m.width {
			break
		}
		line += sep + seg
	}
	return ansi.Truncate(m.theme.Status.Render(line), m.width, "…")
}

// meterView renders "kv ▕██████▌   ▏ 1024/1024 live · ..." with styles, in
// the form meterTextAt gives for level; a recent trim shows the bar in the
// flash style and "✂ N" at the end.
func (m *model) meterView(level int) string {
	bar := meterBar(m.meter.Live, m.meter.Max, meterWidth)
	barStyle := m.theme.MeterFill
	if m.flash {
		barStyle = m.theme.MeterFlash
	}
	s := "kv ▕" + barStyle.Render(bar) + "▏ " + meterTextAt(m.meter, level)
	if m.flash && m.flashDrop > 0 {
		s += " " + m.theme.MeterFlash.Render(fmt.Sprintf("✂ %d", m.flashDrop))
	}
	return s
}

// loadingView fills the conversation area until the engine is ready; the
// editor below already takes input.
func (m *model) loadingView() string {
	var b strings.Builder
	b.WriteString(m.theme.Accent.Render("mlxchat") + "\n\n")
	b.WriteString("loading " + m.theme.ModelLabel.Render(m.displayModel()) + "\n\n")
	stage := m.load.stage
	if stage == "" {
		stage = "starting"
	}
	if m.load.total > 0 {
		pct := float64(m.load.done) / float64(m.load.total)
		if pct > 1 {
			pct = 1
		}
		w := m.width - 8
		if w > 60 {
			w = 60
		}
		if w < 10 {
			w = 10
		}
		m.prog.Width = w
		b.WriteString(stage + "\n")
		b.WriteString(m.prog.ViewAs(pct) + "\n")
		if m.load.total >= 1<<16 { // bytes; smaller totals are step counts
			b.WriteString(m.theme.Dim.Render(fmt.Sprintf("%s / %s", formatBytes(m.load.done), formatBytes(m.load.total))))
		} else {
			b.WriteString(m.theme.Dim.Render(fmt.Sprintf("%d / %d", m.load.done, m.load.total)))
		}
	} else {
		b.WriteString(m.spin.View() + " " + stage)
		if m.load.done > 0 {
			b.WriteString(m.theme.Dim.Render(fmt.Sprintf("  %s", formatBytes(m.load.done))))
		}
	}
	return lipgloss.Place(m.width, m.vp.Height, lipgloss.Center, lipgloss.Center, b.String())
}
