package ui

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"mlxchat/engine"
	"mlxchat/themes"
)

// flashDuration is how long the meter flashes after a trim.
const flashDuration = 800 * time.Millisecond

// maxNoticeLines is how many lines a notice may wrap to (the conversation
// gives up the room); completions and key hints take one line.
const maxNoticeLines = 3

// status is the bottom of the screen below the editor: the notice line
// (errors, confirmations) and the status line (the live-window meter,
// prefill or summarize progress, decode speed, memory).
type status struct {
	theme themes.Theme
	meter meterState
	flash flash
	// decodeTPS is the decode speed of the running (or last) answer.
	decodeTPS float64
	stats     *engine.Stats
	// prefill and summarize are the progress of the running request.
	prefill   *engine.PrefillProgress
	summarize *engine.SummarizeProgress
	// sentBytes is the size of the text the running request sends, shown
	// while the engine renders and tokenizes it, before its first progress.
	sentBytes int
	notice    notice
	// queued names what waits to be sent (model.queuedLabel: "1 msg
	// queued"; "" = nothing).
	queued string
}

// flash is the meter's highlight after a trim. It shows how many tokens
// the meter's trimmed count grew by since the flash began, so its "✂ N"
// always agrees with the meter.
type flash struct {
	on   bool
	seq  int
	base int // the meter's Trimmed when the flash began
}

// flashOffMsg ends the flash started with the same seq.
type flashOffMsg struct{ seq int }

// notice is the one message the notice line shows.
type notice struct {
	text string
	err  bool
	// warn marks a warning (the fit check's): shown with ✂ in the Cut
	// style.
	warn bool
	// cause is the innermost cause of an error notice ("no space left on
	// device"); when the notice is too wide it is shown first.
	cause string
	// hint follows the text (a failed command's recallHint).
	hint string
}

// setNotice shows a confirmation.
func (s *status) setNotice(text string) { s.notice = notice{text: sanitize(text)} }

// setWarning shows a warning.
func (s *status) setWarning(text string) { s.notice = notice{text: oneLine(text), warn: true} }

// setError shows an error.
func (s *status) setError(err error) {
	s.notice = notice{text: oneLine(err.Error()), err: true}
	var errno syscall.Errno
	if c := causeOf(err); c != err && errors.As(c, &errno) {
		if cause := oneLine(c.Error()); cause != "" && strings.HasSuffix(s.notice.text, cause) {
			s.notice.cause = cause
		}
	}
}

// clearNotice empties the notice line.
func (s *status) clearNotice() { s.notice = notice{} }

// oneLine makes text safe for the one-line notice area.
func oneLine(s string) string { return sanitize(strings.ReplaceAll(s, "\n", " ")) }

// trimmed starts (or extends) the flash for a Trim event.
func (s *status) trimmed() tea.Cmd {
	if !s.flash.on {
		s.flash.base = s.meter.Trimmed
	}
	s.flash.on = true
	s.flash.seq++
	seq := s.flash.seq
	return tea.Tick(flashDuration, func(time.Time) tea.Msg { return flashOffMsg{seq: seq} })
}

// flashOff ends the flash if msg is from its latest Trim.
func (s *status) flashOff(msg flashOffMsg) {
	if msg.seq == s.flash.seq {
		s.flash.on = false
	}
}

// setCache takes a CacheState for the meter.
func (s *status) setCache(e engine.CacheState) {
	s.meter = meterState{Live: e.Live, Max: e.Max, Seen: e.Seen, Trimmed: e.Trimmed, Window: e.Window,
		Pinned: e.Pinned, Sink: e.Sink, KVBytes: e.KVBytes, KVBits: e.KVBits}
	if s.meter.Trimmed < s.flash.base {
		s.flash.base = 0 // the cache started over
	}
}

// emptied zeroes the meter's counts (the cache was cleared).
func (s *status) emptied() {
	s.meter.Live, s.meter.Seen, s.meter.Trimmed, s.meter.Pinned, s.meter.KVBytes = 0, 0, 0, 0, 0
	s.flash.base = 0
}

// started resets the progress (at a request's start and end).
func (s *status) started() {
	s.prefill, s.summarize, s.sentBytes = nil, nil, 0
}

// newRequest resets the progress and the decode speed for a request that
// starts: the speed shown is the running request's, once it has one (a
// /summarize streams no tokens until its final answer, and "decode 925.5
// tok/s" of the last answer stayed beside "summarize 3/12"), else none.
func (s *status) newRequest() {
	s.started()
	s.decodeTPS = 0
}

// tokenizing is the progress shown before the engine's first: "…", or
// for a long text, which takes the engine a few seconds to render and
// tokenize, its size ("· tokenizing 10.0 MiB…").
func (s *status) tokenizing() string {
	if s.sentBytes < asyncCountBytes {
		return "…"
	}
	return "· tokenizing " + formatBytes(int64(s.sentBytes)) + "…"
}

// flashDrop is the "✂ N" of the flash: tokens trimmed since it began.
func (s *status) flashDrop() int {
	if !s.flash.on {
		return 0
	}
	return max(s.meter.Trimmed-s.flash.base, 0)
}

// line is the status line for phase: the meter followed by progress or
// speed, a stop hint while busy, and memory; segments that do not fit are
// left out whole, from the end.
func (s *status) line(p phase, width int) string {
	sep := s.theme.Dim.Render(" │ ")
	var segs []string
	if p == phaseSummarize && s.summarize != nil {
		sp := s.summarize
		seg := fmt.Sprintf("summarize %d/%d", sp.Piece, sp.Pieces)
		if sp.Phase == engine.PhaseReduce {
			seg = fmt.Sprintf("summarize · combining %d/%d", sp.Piece, sp.Pieces)
		}
		segs = append(segs, s.theme.Accent.Render(seg))
	}
	if p == phaseSummarize && s.summarize == nil {
		segs = append(segs, s.theme.Accent.Render("summarize "+s.tokenizing()))
	}
	switch {
	case s.prefill != nil && s.prefill.Chunks > 0 && (p == phasePrefill || (p == phaseSummarize && s.prefill.Chunk < s.prefill.Chunks)):
		pp := s.prefill
		seg := fmt.Sprintf("prefill %d/%d chunks", pp.Chunk, pp.Chunks)
		if pp.TokPerSec > 0 {
			seg += " · " + s.theme.Accent.Render(fmt.Sprintf("%.0f", pp.TokPerSec)) + " tok/s"
		}
		segs = append(segs, seg)
	case p == phasePrefill:
		segs = append(segs, "prefill "+s.tokenizing())
	case s.decodeTPS > 0:
		segs = append(segs, fmt.Sprintf("decode %s tok/s", s.theme.Accent.Render(fmt.Sprintf("%.1f", s.decodeTPS))))
	}
	if s.queued != "" {
		segs = append(segs, s.theme.Accent.Render(s.queued))
	}
	switch p {
	case phasePrefill, phaseDecode, phaseSummarize:
		segs = append(segs, s.theme.Dim.Render("Esc stop"))
	case phaseStopping:
		segs = append(segs, s.theme.Dim.Render("stopping…"))
	}
	if s.stats != nil && s.stats.MemoryBytes > 0 {
		segs = append(segs, "mem "+formatBytes(s.stats.MemoryBytes))
	}
	// The meter gets more compact before the first segment (progress or
	// decode speed) is left out.
	line := s.meterView(0)
	for level := 1; level < meterLevels && len(segs) > 0 &&
		lipgloss.Width(line)+lipgloss.Width(sep)+lipgloss.Width(segs[0]) > width; level++ {
		line = s.meterView(level)
	}
	for _, seg := range segs {
		if lipgloss.Width(line)+lipgloss.Width(sep)+lipgloss.Width(seg) > width {
			break
		}
		line += sep + seg
	}
	return ansi.Truncate(s.theme.Status.Render(line), width, "…")
}

// meterView renders "kv ▕██████▌   ▏ 1024/1024 live · ..." with styles, in
// the form meterTextAt gives for level; a recent trim shows the bar in the
// flash style and "✂ N" at the end.
func (s *status) meterView(level int) string {
	bar := meterBar(s.meter.Live, s.meter.Max, meterWidth)
	barStyle := s.theme.MeterFill
	if s.flash.on {
		barStyle = s.theme.MeterFlash
	}
	out := "kv ▕" + barStyle.Render(bar) + "▏ " + meterTextAt(s.meter, level)
	if n := s.flashDrop(); n > 0 {
		out += " " + s.theme.MeterFlash.Render(fmt.Sprintf("✂ %d", n))
	}
	return out
}

// noticeLines is the notice wrapped to at most maxNoticeLines (and a
// third of the screen); an error longer still shows its cause first.
func (s *status) noticeLines(width, height int) []string {
	limit := max(1, min(maxNoticeLines, height/3))
	w := max(width-2, 1)
	n := s.notice
	text := n.text + n.hint
	lines := strings.Split(ansi.Wrap(text, w, ""), "\n")
	if len(lines) > limit && n.err {
		text = causeFirst(n.text, n.cause) + n.hint
		lines = strings.Split(ansi.Wrap(text, w, ""), "\n")
	}
	if len(lines) > limit {
		lines = lines[:limit]
		lines[limit-1] = ansi.Truncate(lines[limit-1]+" …", w, "…")
	}
	style, mark := s.theme.Info, "• "
	switch {
	case n.err:
		style, mark = s.theme.Error, "✗ "
	case n.warn:
		style, mark = s.theme.Cut, "✂ "
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if i > 0 {
			mark = "  "
		}
		out[i] = ansi.Truncate(style.Render(mark+l), width, "…")
	}
	return out
}

// causeFirst moves the cause a notice ends with (": no space left on
// device") to its front, so that truncating the rest never hides why it
// failed; a notice that does not end with cause is returned as is.
// noticeLines calls it when the wrapped notice takes too many lines:
// long paths wrap early, so a notice's length alone does not tell.
func causeFirst(notice, cause string) string {
	if cause == "" || !strings.HasSuffix(notice, cause) {
		return notice
	}
	rest := strings.TrimSuffix(strings.TrimSuffix(notice, cause), ": ")
	return cause + " — " + rest
}
