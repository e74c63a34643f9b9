package cli

import (
	"runtime/debug"
	"testing"
)

// TestResetHWM checks that the bench can keep a buffer it used for a
// moment out of the peak it reports: after 128 MiB are touched and handed
// back, restarting the high-water mark brings it below the mark with them.
func TestResetHWM(t *testing.T) {
	buf := make([]byte, 128<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	with := vmHWM()
	if with < 128<<20 {
		t.Fatalf("VmHWM %d bytes with 128 MiB touched", with)
	}
	buf = nil
	debug.FreeOSMemory()
	if !resetHWM() {
		t.Fatal("writing 5 to /proc/self/clear_refs failed")
	}
	if after := vmHWM(); after <= 0 || after > with-(64<<20) {
		t.Fatalf("VmHWM %d bytes after the reset, %d with the buffer: want at least 64 MiB less", after, with)
	}
}
