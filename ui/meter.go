package ui

import (
	"fmt"
	"strings"
)

// meterWidth is the number of cells of the live-window bar.
const meterWidth = 10

// meterState is what the status line shows about the KV cache: live
// keys of the cap, tokens seen and trimmed, the sliding window, pinned
// tokens, and the cache's memory and precision. Pinned counts the pinned
// messages' tokens beside the sink (engine.CacheState.Pinned), the one
// definition the pin notice and /stats use too (pinnedTokens); Sink, the
// sink's size, is not shown.
type meterState struct {
	Live, Max, Seen, Trimmed, Window int
	Pinned, Sink                     int
	KVBytes                          int64
	KVBits                           int
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
// "1024/1024 live · 2631 seen · 1607 trimmed · 120 pinned · swa 512 · KV 1.2 MB (8-bit)"
// (pinned, the sliding window and the KV memory only when there are).
func meterText(s meterState) string { return meterTextAt(s, 0) }

// meterLevels is how many forms meterTextAt has, from full (0) to the most
// compact.
const meterLevels = 4

// meterTextAt is meterText made shorter as level grows, for a status line
// that must also fit the prefill progress: 1 drops the sliding window and
// the KV memory, 2 abbreviates large counts (12.3k), 3 also drops the seen
// count.
func meterTextAt(s meterState, level int) string {
	max := "∞"
	if s.Max > 0 {
		max = fmt.Sprint(s.Max)
	}
	num := func(n int) string { return fmt.Sprint(n) }
	if level >= 2 {
		num = shortCount
	}
	t := fmt.Sprintf("%d/%s live", s.Live, max)
	if level < 3 {
		t += " · " + num(s.Seen) + " seen"
	}
	t += " · " + num(s.Trimmed) + " trimmed"
	if s.Pinned > 0 {
		t += " · " + num(s.Pinned) + " pinned"
	}
	if level > 0 {
		return t
	}
	if s.Window > 0 {
		t += fmt.Sprintf(" · swa %d", s.Window)
	}
	if s.KVBytes > 0 {
		t += " · KV " + formatBytes(s.KVBytes)
		if s.KVBits == 16 || s.KVBits == 8 {
			t += fmt.Sprintf(" (%d-bit)", s.KVBits)
		}
	}
	return t
}

// shortCount abbreviates counts of 10,000 and more: 12345 -> "12.3k",
// 2500000 -> "2.5M".
func shortCount(n int) string {
	switch {
	case n < 10_000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
}

// meterPlain is the whole meter without styles:
// "kv ▕██████▌   ▏ 1024/1024 live · 2631 seen · 1607 trimmed · swa 512".
func meterPlain(s meterState) string {
	return "kv ▕" + meterBar(s.Live, s.Max, meterWidth) + "▏ " + meterText(s)
}
