package ui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// stateDirs is where this session keeps its files.
type stateDirs struct {
	// root holds history.json; conversations holds the autosaves. Both ""
	// when nothing can be written (the conversation lives in memory only).
	root, conversations string
	// warning, when set, says once why the state dir was not used.
	warning string
}

// prepareStateDir checks that dir (the state dir) can hold this session's
// files: it makes dir/conversations and writes and removes a probe file
// there. A dir that is unusable (a regular file, read-only, full) is
// replaced by a new folder under the system's temporary directory, or, if
// that fails too, by nothing (memory only); warning then says which and why.
// Stale temporary files of earlier, killed sessions are removed on the way.
func prepareStateDir(dir string) stateDirs {
	err := probeDir(filepath.Join(dir, "conversations"))
	if err == nil {
		removeStaleFiles(dir, time.Now())
		removeStaleFiles(filepath.Join(dir, "conversations"), time.Now())
		return stateDirs{root: dir, conversations: filepath.Join(dir, "conversations")}
	}
	tmp, terr := os.MkdirTemp("", "mlxchat-state-")
	if terr == nil {
		if terr = probeDir(filepath.Join(tmp, "conversations")); terr == nil {
			return stateDirs{root: tmp, conversations: filepath.Join(tmp, "conversations"),
				warning: fmt.Sprintf("%s: state dir %s is unusable; this session saves to %s", causeOf(err), dir, tmp)}
		}
		os.RemoveAll(tmp)
	}
	return stateDirs{warning: fmt.Sprintf("%s: state dir %s is unusable (and so is a temporary one: %v); the conversation is kept in memory only, /save FILE still works", causeOf(err), dir, causeOf(terr))}
}

// probeDir makes dir and proves a file can be written in it.
func probeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("writing in %s: %w", dir, err)
	}
	_, werr := f.Write([]byte("mlxchat\n"))
	serr := f.Sync()
	cerr := f.Close()
	os.Remove(f.Name())
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("writing in %s: %w", dir, err)
	}
	return nil
}

// causeOf is the innermost error of err's chain (e.g. "no space left on
// device" out of "writing X: write Y: no space left on device"), the part a
// user needs to see first.
func causeOf(err error) error {
	for err != nil {
		next := errors.Unwrap(err)
		if next == nil {
			if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
				next = j.Unwrap()[0]
			}
		}
		if next == nil {
			return err
		}
		err = next
	}
	return err
}

// Names of the files a killed session can leave behind: writeFileAtomic's
// temporary files (".NAME.tmp-PID-RANDOM", and the older ".NAME.tmpRANDOM"
// without a process id) and probeDir's ".probe-RANDOM".
var (
	tempFileRE   = regexp.MustCompile(`^\..+\.tmp-(\d+)-\d+$`)
	legacyTempRE = regexp.MustCompile(`^\..+\.json\.tmp\d+$`)
	probeFileRE  = regexp.MustCompile(`^\.probe-\d+$`)
)

// Ages after which removeStaleFiles treats a file as abandoned when it
// cannot tell from the process id.
const (
	staleTempAge  = time.Hour        // a temp file whose process id is alive (or reused)
	staleOtherAge = 10 * time.Minute // legacy temp files, probes, empty reserved files
)

// removeStaleFiles removes, in dir, the temporary files that earlier
// sessions killed during a save left behind: only files named like ours
// (see tempFileRE), and only when the process that wrote one is gone, or
// the file is old. A conversation file that was reserved but never
// written (empty, older than staleOtherAge) goes too. It returns how many
// files it removed; errors are ignored (this is tidying up).
func removeStaleFiles(dir string, now time.Time) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		age := now.Sub(info.ModTime())
		name := e.Name()
		stale := false
		switch {
		case tempFileRE.MatchString(name):
			pid, _ := strconv.Atoi(tempFileRE.FindStringSubmatch(name)[1])
			stale = age > staleTempAge || (pid != os.Getpid() && !processAlive(pid))
		case legacyTempRE.MatchString(name), probeFileRE.MatchString(name):
			stale = age > staleOtherAge
		case filepath.Ext(name) == ".json" && info.Size() == 0:
			stale = age > staleOtherAge
		}
		if stale && os.Remove(filepath.Join(dir, name)) == nil {
			n++
		}
	}
	return n
}

// processAlive reports whether a process with this id exists (signal 0).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
