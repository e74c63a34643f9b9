package textinput

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       string // the text, or with err the error
		err        bool
	}{
		{"plain", "hello\nworld\n", "hello\nworld\n", false},
		{"BOM and CRLF", "\uFEFFa\r\nb\r\n", "a\nb\n", false},
		{"lone CR kept", "a\rb", "a\rb", false},
		{"multibyte", "café ✓ 🐈", "café ✓ 🐈", false},
		{"empty is the caller's", "", "", false},
		{"NUL", "\x89PNG\r\n\x1a\n\x00\x00", "NUL is not a text file (a NUL byte at offset 8), expected UTF-8 text", true},
		{"UTF-16", "\xff\xfeh\x00i\x00", "UTF-16 is not a text file (a NUL byte at offset 3), expected UTF-8 text", true},
		{"Latin-1", "caf\xe9", "Latin-1 is not a UTF-8 text file (an invalid byte at offset 3)", true},
		{"cut rune", "ok \xe2\x9c", "cut rune is not a UTF-8 text file (an invalid byte at offset 3)", true},
	} {
		got, err := Check(tc.name, []byte(tc.data))
		switch {
		case tc.err && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: Check = %q, %v; want the error %q", tc.name, got, err, tc.want)
		case !tc.err && (err != nil || got != tc.want):
			t.Errorf("%s: Check = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// failingReader fails after giving some bytes.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errors.New("device gone")
	}
	k := min(r.n, len(p))
	for i := range p[:k] {
		p[i] = 'a'
	}
	r.n -= k
	return k, nil
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     io.Reader
		limit int64
		want  string
		err   string
	}{
		{"stdin", strings.NewReader("hi\r\n"), 16, "hi\n", ""},
		{"stdin", strings.NewReader(strings.Repeat("a", 16)), 16, strings.Repeat("a", 16), ""},
		{"stdin", strings.NewReader(strings.Repeat("a", 17)), 16, "", "stdin is over 16 B, expected at most 16 B of text"},
		{"stdin", strings.NewReader("a\x00b"), 16, "", "stdin is not a text file (a NUL byte at offset 1), expected UTF-8 text"},
		{"stdin", &failingReader{n: 3}, 16, "", "reading stdin: device gone"},
		// A file's read error names its path again: QA's "/read:
		// reading /proc/self/mem: read /proc/self/mem: input/output error".
		{"/proc/self/mem", iotest.ErrReader(&fs.PathError{Op: "read", Path: "/proc/self/mem", Err: syscall.EIO}), 16, "",
			"reading /proc/self/mem: input/output error"},
	} {
		got, err := Read(tc.r, tc.name, tc.limit)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Read: %q, %v; want the error %q", got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Read: %q, %v; want %q", got, err, tc.want)
		}
	}
}

// TestReadFile: a text file reads; a huge one is refused by its size, a
// directory as such, a device at the limit; a named pipe nobody writes to
// reads as empty at once instead of hanging.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := write("huge.txt", "")
	if err := os.Truncate(huge, 40<<30); err != nil { // sparse: 40 GiB of holes
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path      string
		limit     int64
		want, err string
	}{
		{write("ok.txt", "\uFEFFline one\r\nline two\r\n"), MaxBytes, "line one\nline two\n", ""},
		{write("bin", "ELF\x00\x01"), MaxBytes, "", "F is not a text file (a NUL byte at offset 3), expected UTF-8 text"},
		{huge, MaxBytes, "", "F is 40.0 GiB, expected at most 32.0 MiB of text"},
		{dir, MaxBytes, "", "F is a directory, expected a text file"},
		{filepath.Join(dir, "missing"), MaxBytes, "", "F: no such file or directory"},
		{"/dev/zero", 1 << 10, "", "F is over 1 KiB, expected at most 1 KiB of text"},
		{fifo, MaxBytes, "", ""},
	} {
		type result struct {
			text string
			err  error
		}
		done := make(chan result, 1)
		go func() {
			text, err := ReadFile(tc.path, "F", tc.limit)
			done <- result{text, err}
		}()
		var got string
		var err error
		select {
		case r := <-done:
			got, err = r.text, r.err
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ReadFile still reading after 10 s", tc.path)
		}
		if tc.err != "" {
			var nt *NotTextError
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: %q, %v; want the error %q", tc.path, got, err, tc.err)
			} else if isNotText := errors.As(err, &nt); isNotText == strings.Contains(tc.err, "no such file") {
				t.Errorf("%s: NotTextError %v for %q", tc.path, isNotText, err)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
}
