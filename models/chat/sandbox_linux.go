package chat

import "syscall"

// limitAddressSpace makes a single huge allocation in the renderer child
// fail at once (the child then dies with "out of memory") instead of relying
// on the memory watchdog alone.
func limitAddressSpace(lim uint64) {
	if raceEnabled {
		return
	}
	_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim})
}
