package cpu

import (
	"bytes"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePageSize is the size of a transparent huge page on the machines this
// runs on (x86-64 and arm64 with 4 KiB base pages).
const hugePageSize = 2 << 20

// thpPath holds the kernel's transparent huge page policy.
const thpPath = "/sys/kernel/mm/transparent_hugepage/enabled"

// hugePagesUsable reports whether anonymous memory can be backed by
// transparent huge pages: the policy in thpPath is "always" or "madvise"
// (the word in brackets), not "never", and the file is readable.
func hugePagesUsable() bool {
	data, err := os.ReadFile(thpPath)
	if err != nil {
		return false
	}
	return bytes.Contains(data, []byte("[always]")) || bytes.Contains(data, []byte("[madvise]"))
}

// mapHuge returns n bytes (rounded up to whole huge pages) of zeroed
// anonymous memory starting on a huge-page boundary and advised for
// transparent huge pages. Free it with unmapHuge.
func mapHuge(n int) ([]byte, error) {
	n = (n + hugePageSize - 1) &^ (hugePageSize - 1)
	total := uintptr(n + hugePageSize)
	raw, err := unix.MmapPtr(-1, 0, nil, total, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mmap of %d bytes: %w", total, err)
	}
	// Keep the aligned part only, so that the kernel can back every 2 MiB
	// of it with one page.
	base := uintptr(raw)
	head := (hugePageSize - base%hugePageSize) % hugePageSize
	if head > 0 {
		_ = unix.MunmapPtr(raw, head)
	}
	if tail := total - head - uintptr(n); tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(raw, head+uintptr(n)), tail)
	}
	mem := unsafe.Slice((*byte)(unsafe.Add(raw, head)), n)
	if err := unix.Madvise(mem, unix.MADV_HUGEPAGE); err != nil {
		_ = unmapHuge(mem)
		return nil, fmt.Errorf("madvise(MADV_HUGEPAGE): %w", err)
	}
	return mem, nil
}

// unmapHuge frees memory from mapHuge.
func unmapHuge(mem []byte) error {
	return unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(mem)), uintptr(len(mem)))
}

// dropFilePages removes the whole pages inside b, part of a read-only
// file mapping, from the process's page tables (MADV_DONTNEED): they stay
// in the page cache and fault back in if read again, so the process no
// longer holds them twice after copying them elsewhere.
func dropFilePages(b []byte) error {
	page := uintptr(os.Getpagesize())
	lo := (dataPtr(b) + page - 1) &^ (page - 1)
	hi := (dataPtr(b) + uintptr(len(b))) &^ (page - 1)
	if hi <= lo {
		return nil
	}
	return unix.Madvise(b[lo-dataPtr(b):hi-dataPtr(b)], unix.MADV_DONTNEED)
}

// lowerThreadPriority gives the calling OS thread the lowest scheduling
// priority (nice 19), so that it runs when the cores are otherwise idle.
// The caller must have locked its goroutine to the thread.
func lowerThreadPriority() {
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
}
