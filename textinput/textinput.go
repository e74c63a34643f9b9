package textinput

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"mlxchat/bytesize"
)

// MaxBytes bounds a text input: a file /read attaches, or the prompt or
// document `run` reads (32 MiB, millions of tokens).
const MaxBytes = 32 << 20

// NotTextError is the error of an input that is not text to give a model:
// a binary file, one over the size limit, a directory. A failure to open
// or read the input is another error, so a caller can tell bad input from
// a failing disk (errors.As).
type NotTextError struct {
	msg string
}

func (e *NotTextError) Error() string { return e.msg }

// notText makes a NotTextError from a format.
func notText(format string, args ...any) error {
	return &NotTextError{msg: fmt.Sprintf(format, args...)}
}

// Check returns data as text, or a NotTextError naming the input (name: a
// file path, "--prompt-file F", "stdin") when it holds a NUL byte or is
// not valid UTF-8, with the offset of the first bad byte. A leading UTF-8 byte
// order mark is dropped and CRLF line ends become LF. Empty text is the
// caller's to refuse, in its own words.
func Check(name string, data []byte) (string, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return "", notText("%s is not a text file (a NUL byte at offset %d), expected UTF-8 text", name, i)
	}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		return "", notText("%s is not a UTF-8 text file (an invalid byte at offset %d)", name, i)
	}
	return strings.ReplaceAll(string(data), "\r\n", "\n"), nil
}

// Read reads r to its end, at most limit bytes, and returns the text
// (Check); name names r in errors. More than limit bytes is a
// NotTextError naming the limit, after reading limit+1 bytes, so a huge or endless
// input (/dev/zero) fails at once.
func Read(r io.Reader, name string, limit int64) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // name says which file; "read PATH: " would say it again
		}
		return "", fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return "", notText("%s is over %s, expected at most %s of text", name, bytesize.Format(limit), bytesize.Format(limit))
	}
	return Check(name, data)
}

// ReadFile reads the text of the file at path with Read (name names it in
// errors). A regular file larger than limit is refused by its size before
// anything is read, a directory as such (NotTextError); a pipe or a device is read up to
// the limit. The file is opened without blocking, so a named pipe that
// nobody writes to reads as empty instead of hanging.
func ReadFile(path, name string, limit int64) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case st.IsDir():
		return "", notText("%s is a directory, expected a text file", name)
	case st.Mode().IsRegular() && st.Size() > limit:
		return "", notText("%s is %s, expected at most %s of text", name, bytesize.Format(st.Size()), bytesize.Format(limit))
	}
	return Read(f, name, limit)
}
