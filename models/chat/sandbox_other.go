//go:build !linux

package chat

// limitAddressSpace is a no-op where RLIMIT_AS is not enforced; the memory
// watchdog still bounds the renderer child.
func limitAddressSpace(uint64) {}
