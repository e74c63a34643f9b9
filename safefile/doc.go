// Package safefile reads files whose names come from outside the program:
// a path typed in the chat, a state or config directory, a downloaded
// model's files. Such a name may be a named pipe (reading it waits for a
// writer forever), a device such as /dev/zero (reading it never ends), a
// directory, or a file that grows while it is read; each is an error at
// once, naming the path and what it is, never a hang or memory run out.
//
// It may import only the standard library and mlxchat/bytesize; ui and
// models import it.
package safefile
