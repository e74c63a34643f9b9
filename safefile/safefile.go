package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"mlxchat/bytesize"
)

// Read reads path if it is a regular file of at most limit bytes. It
// opens without blocking (O_NONBLOCK: a FIFO with no writer would
// otherwise wait forever), checks the kind of file on the open descriptor
// (so a link is judged by what it points to, and a swap after a check
// cannot slip through), and reads at most limit+1 bytes, so a file that
// grows while it is read cannot run memory out either. An error that
// opening returns is the *fs.PathError itself, so errors.Is(err,
// fs.ErrNotExist) tells a missing file; the others are one line naming
// path: "PATH is a named pipe (FIFO), expected a regular file".
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, Unwrap(err))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, expected a regular file", path, Kind(st.Mode()))
	}
	if st.Size() > limit {
		return nil, tooBig(path, st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, Unwrap(err))
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past %s while it was read", path, bytesize.Format(limit))
	}
	return data, nil
}

// tooBig is the error for a file of size bytes over limit: in binary
// units, or in bytes where those would read the same ("is 2.0 MiB,
// expected at most 2.0 MiB" for one byte over).
func tooBig(path string, size, limit int64) error {
	got, want := bytesize.Format(size), bytesize.Format(limit)
	if got == want {
		return fmt.Errorf("%s is %d bytes, expected at most %d", path, size, limit)
	}
	return fmt.Errorf("%s is %s, expected at most %s", path, got, want)
}

// Kind names a file mode for an error about a file that should have been
// a regular one: "a directory", "a named pipe (FIFO)", "a character
// device"...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

// Unwrap drops the *fs.PathError (or, from a rename, *os.LinkError)
// wrapper of err, so a message that names the path already does not repeat
// it, or name a temporary file instead ("open PATH: no such file"); what
// errors.Is finds in it (fs.ErrNotExist, fs.ErrPermission) stays.
func Unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
