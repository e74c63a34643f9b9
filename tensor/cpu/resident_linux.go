package cpu

import "golang.org/x/sys/unix"

// adviseHugePages asks the kernel to back mem with transparent huge pages
// (honoured when THP is "always" or "madvise"). Best effort.
func adviseHugePages(mem []byte) { _ = unix.Madvise(mem, unix.MADV_HUGEPAGE) }
