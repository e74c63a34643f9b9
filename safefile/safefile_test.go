package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRead: a regular file within the bound is read whole; anything else
// is one line naming the path and what it is, at once (a FIFO with no
// writer, /dev/zero and a directory never block or run memory out); a
// missing file is fs.ErrNotExist.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	over := filepath.Join(dir, "over.json")
	if err := os.WriteFile(over, make([]byte, 2<<10+1), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 3<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, want string // want: the error, or "" for the content of small
	}{
		{small, ""},
		{big, big + " is 3 KiB, expected at most 2 KiB"},
		{over, over + " is 2049 bytes, expected at most 2048"},
		{fifo, fifo + " is a named pipe (FIFO), expected a regular file"},
		{zero, zero + " is a character device, expected a regular file"},
		{dir, dir + " is a directory, expected a regular file"},
	}
	for _, tc := range tests {
		done := make(chan struct{})
		var data []byte
		var err error
		go func() { data, err = Read(tc.path, 2<<10); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) hangs", tc.path)
		}
		switch {
		case tc.want == "" && (err != nil || string(data) != `{"a":1}`):
			t.Errorf("Read(%s) = %q, %v", tc.path, data, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("Read(%s) error %v, want %q", tc.path, err, tc.want)
		}
	}
	_, err := Read(filepath.Join(dir, "missing"), 1)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	rerr := os.Rename(filepath.Join(dir, "missing"), filepath.Join(dir, "other"))
	if got := Unwrap(rerr); !errors.Is(got, fs.ErrNotExist) || strings.Contains(got.Error(), "missing") {
		t.Errorf("Unwrap(%v) = %v, want the cause without the paths", rerr, got)
	}
	if Unwrap(err) == err || !errors.Is(Unwrap(err), fs.ErrNotExist) || strings.Contains(Unwrap(err).Error(), "missing") {
		t.Errorf("Unwrap(%v) = %v, want the cause without the path", err, Unwrap(err))
	}
}
