package ui

import (
	"fmt"
	"strings"
)

// meterWidth is the number of cells of the live-window bar.
const meterWidth = 10

// meterState is what the status line shows about the KV cache.
type meterState struct {
	Live, Max, Seen, Trimmed, Window int
}

// eighths are the partial-cell glyphs, index = eighths filled (0..8).
var eighths = []string{" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉", "█"}

// meterBar returns the bar body (exactly width cells) for live of max keys.
// max <= 0 means unlimited: the bar shows ∞ centred.
func meterBar(live, max, width int) string {
	if width <= 0 {
		return ""
	}
	if max <= 0 {
		left := (width - 1) / 2
		return strings.Repeat(" ", left) + "∞" + strings.Repeat(" ", width-1-left)
	}
	if live < 0 {
		live = 0
	}
	if live > max {
		live = max
	}
	// Round to the nearest eighth of a cell.
	e := (live*width*8 + max/2) / max
	if live > 0 && e == 0 {
		e = 1 // a non-empty cache never looks empty
	}
	full, part := e/8, e%8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	n := full
	if part > 0 && n < width {
		b.WriteString(eighths[part])
		n++
	}
	b.WriteString(strings.Repeat(" ", width-n))
	return b.String()
}

// meterText is the numbers after the bar, e.g.
// "1024/1024 live · 2631 seen · 1607 trimmed · swa 512".
func meterText(s meterState) string {
	max := "∞"
	if s.Max > 0 {
		max = fmt.Sprint(s.Max)
	}
	t := fmt.Sprintf("%d/%s live · %d seen · %d trimmed", s.Live, max, s.Seen, s.Trimmed)
	if s.Window > 0 {
		t += fmt.Sprintf(" · swa %d", s.Window)
	}
	return t
}

// meterPlain is the whole meter without styles:
// "kv ▕██████▌   ▏ 1024/1024 live · 2631 seen · 1607 trimmed · swa 512".
func meterPlain(s meterState) string {
	return "kv ▕" + meterBar(s.Live, s.Max, meterWidth) + "▏ " + meterText(s)
}
