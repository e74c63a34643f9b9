package cli

import (
	"bytes"
	"os"
	"strconv"
)

// vmHWM is the process's resident high-water mark in bytes (VmHWM in
// /proc/self/status), which resetHWM can restart; 0 if it cannot be read.
func vmHWM() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if f := bytes.Fields(line); len(f) >= 2 && string(f[0]) == "VmHWM:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// resetHWM restarts the high-water mark from the current resident size
// (clear_refs 5) and reports whether it could.
func resetHWM() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}
