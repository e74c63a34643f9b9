//go:build !linux

package cpu

// adviseHugePages does nothing where there is no MADV_HUGEPAGE.
func adviseHugePages(mem []byte) {}
