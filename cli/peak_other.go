//go:build !linux

package cli

// vmHWM is peakRSS where the kernel has no resettable high-water mark.
func vmHWM() int64 { return peakRSS() }

// resetHWM cannot restart the peak here.
func resetHWM() bool { return false }
