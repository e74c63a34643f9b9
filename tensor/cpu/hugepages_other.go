//go:build !linux

package cpu

import "errors"

const hugePageSize = 2 << 20

// hugePagesUsable is false: only Linux backs anonymous memory with
// transparent huge pages on request.
func hugePagesUsable() bool { return false }

func mapHuge(n int) ([]byte, error) { return nil, errors.New("huge pages are Linux only") }

func unmapHuge(mem []byte) error { return nil }

func dropFilePages(b []byte) error { return nil }

func lowerThreadPriority() {}
