// Package textinput decides whether bytes are text to give a model: the
// chat's /read and @path attachments and `mlxchat run`'s --prompt-file and
// stdin go through Check, so a binary file (a NUL byte, invalid UTF-8) is
// refused the same way everywhere, with one line naming the input and the
// offset of the first bad byte, and read a stream through Read, which stops
// at a size limit (MaxBytes) instead of reading a huge or endless input.
//
// It may import only the standard library and bytesize; ui and cli import
// it.
package textinput
