package ui

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"mlxchat/engine"
	"mlxchat/themes"
)

func newTestStatus(t *testing.T) *status {
	t.Helper()
	th, err := themes.Get("dark", true)
	if err != nil {
		t.Fatal(err)
	}
	return &status{theme: th}
}

// TestStatusLineByPhase: what the segments after the meter say in each
// phase.
func TestStatusLineByPhase(t *testing.T) {
	st := newTestStatus(t)
	st.setCache(engine.CacheState{Live: 100, Max: 1024, Seen: 100, Window: 512})
	st.stats = &engine.Stats{MemoryBytes: 3 << 29}
	tests := []struct {
		name  string
		phase phase
		setup func()
		want  []string
		not   []string
	}{
		{"idle", phaseIdle, func() {}, []string{"100/1024 live · 100 seen · 0 trimmed · swa 512", "mem 1.5 GiB"}, []string{"Esc stop", "prefill", "decode"}},
		{"prefill before the first chunk", phasePrefill, func() {}, []string{"prefill …", "Esc stop"}, nil},
		{"prefill of a long document, before the engine reports", phasePrefill, func() { st.sentBytes = 10 << 20 }, []string{"prefill · tokenizing 10.0 MiB…", "Esc stop"}, nil},
		{"prefill", phasePrefill, func() { st.prefill = &engine.PrefillProgress{Chunk: 2, Chunks: 6, TokPerSec: 412} },
			[]string{"prefill 2/6 chunks · 412 tok/s", "Esc stop"}, nil},
		{"decode", phaseDecode, func() { st.decodeTPS = 23.4 }, []string{"decode 23.4 tok/s", "Esc stop"}, []string{"prefill"}},
		{"stopping", phaseStopping, func() {}, []string{"stopping…"}, []string{"Esc stop"}},
		{"idle after an answer", phaseIdle, func() { st.prefill = nil }, []string{"decode 23.4 tok/s"}, []string{"Esc stop", "stopping"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			got := stripANSI(st.line(tc.phase, 160))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("status %q lacks %q", got, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("status %q has %q", got, w)
				}
			}
		})
	}
}

// TestFlashAgreesWithMeter: the flash's "✂ N" is how much the meter's
// trimmed count grew since the flash began, over several trims, and a new
// flash counts from where the meter then stands.
func TestFlashAgreesWithMeter(t *testing.T) {
	st := newTestStatus(t)
	st.setCache(engine.CacheState{Live: 60, Max: 64, Seen: 60, Trimmed: 0})
	flashOf := func() string {
		line := stripANSI(st.line(phaseDecode, 200))
		if i := strings.Index(line, "✂ "); i >= 0 {
			return strings.Fields(line[i:])[1]
		}
		return ""
	}
	// Trims arrive before the CacheState that counts them.
	st.trimmed()
	st.setCache(engine.CacheState{Live: 64, Max: 64, Seen: 80, Trimmed: 16})
	st.trimmed()
	st.setCache(engine.CacheState{Live: 64, Max: 64, Seen: 3267, Trimmed: 3203})
	if got := flashOf(); got != "3203" {
		t.Fatalf("flash shows %q, want the meter's 3203 trimmed", got)
	}
	st.flashOff(flashOffMsg{seq: st.flash.seq - 1}) // a stale timer
	if flashOf() == "" {
		t.Fatal("a stale timer ended the flash")
	}
	st.flashOff(flashOffMsg{seq: st.flash.seq})
	if got := flashOf(); got != "" {
		t.Fatalf("flash still shows %q after it ended", got)
	}
	st.trimmed()
	st.setCache(engine.CacheState{Live: 64, Max: 64, Seen: 3300, Trimmed: 3236})
	if got := flashOf(); got != "33" {
		t.Errorf("second flash shows %q, want 33 (3236-3203)", got)
	}
	// The cache started over: the count falls, the flash never goes negative.
	st.setCache(engine.CacheState{Live: 10, Max: 64, Seen: 10, Trimmed: 0})
	if got := flashOf(); got != "" {
		t.Errorf("flash shows %q after the cache started over", got)
	}
	st.setCache(engine.CacheState{Live: 64, Max: 64, Seen: 90, Trimmed: 26})
	if got := flashOf(); got != "26" {
		t.Errorf("flash after a restart shows %q, want 26", got)
	}
}

// TestMeterText: the meter's numbers at each level of compactness.
func TestMeterText(t *testing.T) {
	s := meterState{Live: 64, Max: 64, Seen: 723420, Trimmed: 2_500_000, Window: 8}
	for level, want := range []string{
		"64/64 live · 723420 seen · 2500000 trimmed · swa 8",
		"64/64 live · 723420 seen · 2500000 trimmed",
		"64/64 live · 723.4k seen · 2.5M trimmed",
		"64/64 live · 2.5M trimmed",
	} {
		if got := meterTextAt(s, level); got != want {
			t.Errorf("level %d: %q, want %q", level, got, want)
		}
	}
}

// TestNoticeLines: errors wrap to three lines; a longer one shows its
// cause first.
func TestNoticeLines(t *testing.T) {
	st := newTestStatus(t)
	st.setNotice("saved")
	if got := st.noticeLines(80, 30); len(got) != 1 || stripANSI(got[0]) != "• saved" {
		t.Errorf("notice %q", got)
	}
	long := fmt.Errorf("autosave: writing %s: %w", strings.Repeat("/very/long/path", 30), &osPathError{syscall.ENOSPC})
	st.setError(long)
	got := st.noticeLines(60, 30)
	if len(got) != maxNoticeLines {
		t.Fatalf("long error takes %d lines, want %d", len(got), maxNoticeLines)
	}
	if !strings.HasPrefix(stripANSI(got[0]), "✗ no space left on device — autosave") {
		t.Errorf("cause not first: %q", got[0])
	}
	st.setError(errors.New("short"))
	if got := st.noticeLines(60, 6); len(got) != 1 || stripANSI(got[0]) != "✗ short" {
		t.Errorf("short error %q", got)
	}
}

// osPathError is an error wrapping an errno, as a failed write returns.
type osPathError struct{ errno syscall.Errno }

func (e *osPathError) Error() string { return e.errno.Error() }
func (e *osPathError) Unwrap() error { return e.errno }

// TestNoticeKeepsCauseVisible: an error notice that word-wraps to more
// lines than it may take shows its cause first, also when its length
// alone would fit those lines: QA's full-disk notice at 120 columns (335
// characters, under 3 × 118, but four lines once its long paths wrapped)
// was cut to "... no space …", hiding why the save failed.
func TestNoticeKeepsCauseVisible(t *testing.T) {
	enospc := &os.PathError{Op: "write", Path: "/tmp/qa/fullst/mlxchat/conversations/..2026-12-04T18-28-33.json.tmp-12914-2040503735.tmp-12914-4261038710", Err: syscall.ENOSPC}
	inner := fmt.Errorf("writing /tmp/qa/fullst/mlxchat/conversations/.2026-12-04T18-28-33.json.tmp-12914-2040503735: %w", enospc)
	moved := &movedError{from: "/tmp/qa/fullst/mlxchat/conversations", to: "/tmp/mlxchat-conversations-35027617/2026-12-04T18-28-33.json", cause: inner}
	for _, width := range []int{200, 120, 100, 80, 60} {
		st := newTestStatus(t)
		st.setError(fmt.Errorf("autosave: %w", moved))
		lines := st.noticeLines(width, 40)
		if len(lines) > maxNoticeLines {
			t.Errorf("width %d: %d lines", width, len(lines))
		}
		if got := flatNotice(lines); !strings.Contains(got, "no space left on device") {
			t.Errorf("width %d: the cause is not visible:\n%s", width, strings.Join(lines, "\n"))
		}
	}
}

// flatNotice joins notice lines as one text, without marks and styles.
func flatNotice(lines []string) string {
	var parts []string
	for _, l := range lines {
		parts = append(parts, strings.TrimSpace(strings.TrimLeft(stripANSI(l), "✗•✂ ")))
	}
	return strings.Join(parts, " ")
}
