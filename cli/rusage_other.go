//go:build !unix

package cli

import "runtime"

// peakRSS falls back to the Go runtime's obtained memory where getrusage
// does not exist.
func peakRSS() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys)
}
