package hub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// errDiskFull marks errors caused by a full disk; their message starts
// with "no space left on device" so the cause survives a cut-off line.
var errDiskFull = errors.New("no space left on device")

// diskFullError is a write that failed, or a download that would not
// fit, because the disk is full; msg says where and what to do.
type diskFullError struct{ msg string }

func (e *diskFullError) Error() string { return "no space left on device: " + e.msg }

func (e *diskFullError) Is(target error) bool {
	return target == errDiskFull || target == syscall.ENOSPC
}

// diskError turns ENOSPC and EDQUOT from writing path into a
// diskFullError; other errors are returned as they are.
func diskError(err error, path string) error {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return &diskFullError{msg: fmt.Sprintf("writing %s; free space and run again (a partial download resumes)", path)}
	case errors.Is(err, syscall.EDQUOT):
		return &diskFullError{msg: fmt.Sprintf("disk quota exceeded writing %s; free space and run again (a partial download resumes)", path)}
	}
	return err
}

// wrapWrite is "what path: err", or err alone when the disk is full (its
// message leads with the cause and names path already).
func wrapWrite(what, path string, err error) error {
	if d := diskError(err, path); d != err {
		return d
	}
	return fmt.Errorf("%s %s: %w", what, path, err)
}

// freeBytes is the space available to this user on the filesystem of dir.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)), nil
}

// checkFreeSpace fails before a download starts when the files still to
// fetch (their listed sizes, less what complete blobs and partial
// downloads already hold) do not fit on the disk.
func checkFreeSpace(repoDir string, files []remoteFile) error {
	var need int64
	for _, f := range files {
		if f.size < 0 {
			continue
		}
		blob := filepath.Join(repoDir, "blobs", f.etag)
		if st, err := os.Stat(blob); err == nil && st.Size() == f.size {
			continue
		}
		n := f.size
		if st, err := os.Stat(blob + ".incomplete"); err == nil && st.Size() <= f.size {
			n -= st.Size()
		}
		need += n
	}
	free, err := freeBytes(repoDir)
	if err != nil || need <= free {
		return nil // unknown free space: the writes will tell
	}
	return &diskFullError{msg: fmt.Sprintf("the download needs %s more, %s is free in %s", humanSize(need), humanSize(free), repoDir)}
}

// humanSize formats a byte count as KiB, MiB or GiB.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}
