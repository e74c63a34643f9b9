// Package bytesize formats byte counts for people, in binary units (B,
// KiB, MiB, GiB, TiB), one way for the whole program: the chat's status
// line and notices, and the command line's run, bench, list and rm print
// the same size the same way ("512 KiB", "3.4 MiB").
//
// It may import only the standard library; ui and cli import it.
package bytesize
