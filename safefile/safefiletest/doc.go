// Package safefiletest helps the tests of code that reads outside files
// through safefile: such a read of a named pipe or a device must fail at
// once, and Within turns one that hangs into a test failure instead of a
// test binary that never ends.
//
// It may import only the standard library; only tests import it.
package safefiletest
