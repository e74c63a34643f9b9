package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// conversationVersion is the version of the conversation file format.
const conversationVersion = 1

// savedMessage is one turn in a conversation file. Content is exactly what
// was sent to (or received from) the model; Display, when set, is the
// shorter form shown on screen (pastes collapsed).
type savedMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Display string `json:"display,omitempty"`
	// Partial marks an answer that did not end by itself: stopped by Esc,
	// cut by /max, failed, or saved while it was still streaming.
	Partial bool `json:"partial,omitempty"`
	// Note says why a partial answer ended: "stopped", "max tokens",
	// "failed", "repeating", or "interrupted" (the chat ended or was
	// killed while the answer streamed).
	Note string `json:"note,omitempty"`
}

// conversationFile is the JSON layout of a saved conversation (autosave,
// /save and /load):
//
//	{"version":1, "model":"...", "created":"RFC3339", "updated":"RFC3339",
//	 "system":"...", "messages":[{"role":"user","content":"..."}, ...],
//	 "draft":"...", "draft_pastes":[{"label":"[pasted: ...]","content":"..."}]}
type conversationFile struct {
	Version     int            `json:"version"`
	Model       string         `json:"model,omitempty"`
	Created     time.Time      `json:"created"`
	Updated     time.Time      `json:"updated"`
	System      string         `json:"system,omitempty"`
	Messages    []savedMessage `json:"messages"`
	Draft       string         `json:"draft,omitempty"`
	DraftPastes []pasteBlock   `json:"draft_pastes,omitempty"`
}

// writeFileAtomic writes data to path with permissions perm through a
// temporary file in the same directory and a rename, so a crash leaves
// either the old or the new file. Missing folders are made with dirPerm.
func writeFileAtomic(path string, data []byte, dirPerm, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	werr := f.Chmod(perm)
	if werr == nil {
		_, werr = f.Write(data)
	}
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// saveConversation writes c to path atomically as indented JSON.
func saveConversation(path string, c conversationFile) error {
	c.Version = conversationVersion
	if c.Messages == nil {
		c.Messages = []savedMessage{}
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding conversation for %s: %w", path, err)
	}
	return writeFileAtomic(path, append(data, '\n'), 0o700, 0o600)
}

// loadConversation reads a conversation file and checks its roles.
func loadConversation(path string) (conversationFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return conversationFile{}, fmt.Errorf("loading conversation: %w", err)
	}
	var c conversationFile
	if err := json.Unmarshal(data, &c); err != nil {
		return conversationFile{}, fmt.Errorf("loading %s: not a conversation file: %w", path, err)
	}
	if c.Version > conversationVersion {
		return conversationFile{}, fmt.Errorf("loading %s: version %d, expected at most %d", path, c.Version, conversationVersion)
	}
	for i, m := range c.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return conversationFile{}, fmt.Errorf("loading %s: message %d has role %q, expected user or assistant", path, i+1, m.Role)
		}
	}
	return c, nil
}

// resolveConversationPath maps a /save or /load argument to a file: a bare
// name (no directory part) lives in dir; ".json" is added when the name has
// no extension. A leading "~/" is the home directory.
func resolveConversationPath(dir, name string) string {
	if strings.HasPrefix(name, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			name = filepath.Join(home, name[2:])
		}
	}
	if filepath.Ext(name) == "" {
		name += ".json"
	}
	if !strings.ContainsRune(name, os.PathSeparator) && !strings.Contains(name, "/") {
		return filepath.Join(dir, name)
	}
	return name
}

// autosaver keeps the newest snapshot of the conversation and writes it to
// disk. It is shared between the bubbletea model (which updates it after
// every change) and Run (which flushes it on every exit path, a panic
// included). It is safe for concurrent use.
type autosaver struct {
	mu      sync.Mutex
	path    string // "" = autosave off
	snap    conversationFile
	dirty   bool
	lastErr error
}

// set records a new snapshot; write says whether to write it now.
func (a *autosaver) set(c conversationFile, write bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.snap = c
	a.dirty = true
	if write {
		return a.flushLocked()
	}
	return nil
}

// setPath switches the autosave file (after /clear or /load).
func (a *autosaver) setPath(p string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.path = p
}

// currentPath returns the autosave file ("" when autosave is off).
func (a *autosaver) currentPath() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.path
}

// flush writes the snapshot if it changed since the last write. An empty
// conversation (no messages, no draft) is not written.
func (a *autosaver) flush() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.flushLocked()
}

func (a *autosaver) flushLocked() error {
	if a.path == "" || !a.dirty {
		return nil
	}
	if len(a.snap.Messages) == 0 && a.snap.Draft == "" && a.snap.System == "" {
		a.dirty = false
		return nil
	}
	err := saveConversation(a.path, a.snap)
	a.lastErr = err
	if err == nil {
		a.dirty = false
	}
	return err
}

// newConversationPath names a fresh autosave file in dir from the time.
func newConversationPath(dir string, now time.Time) string {
	base := now.Format("2006-01-02T15-04-05")
	p := filepath.Join(dir, base+".json")
	for i := 2; ; i++ {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return p
		}
		p = filepath.Join(dir, fmt.Sprintf("%s-%d.json", base, i))
	}
}

// historyFile is the JSON layout of the input history (state dir,
// history.json): newest last.
type historyFile struct {
	Entries []historyEntry `json:"entries"`
}

// historyEntry is one sent input: the editor text (with paste labels) and
// the pastes those labels stand for.
type historyEntry struct {
	Text   string       `json:"text"`
	Pastes []pasteBlock `json:"pastes,omitempty"`
}

// loadHistory reads the input history; a missing file is an empty history.
func loadHistory(path string) ([]historyEntry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loading input history: %w", err)
	}
	var h historyFile
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("loading input history %s: %w", path, err)
	}
	return h.Entries, nil
}

// saveHistory writes the last limit entries atomically.
func saveHistory(path string, entries []historyEntry, limit int) error {
	if limit > 0 && len(entries) > limit {
		entries = entries[len(entries)-limit:]
	}
	data, err := json.Marshal(historyFile{Entries: entries})
	if err != nil {
		return fmt.Errorf("encoding input history: %w", err)
	}
	return writeFileAtomic(path, data, 0o700, 0o600)
}
