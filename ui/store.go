package ui

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mlxchat/safefile"
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
	// MaxTokens is the /max an answer was cut at (note "max tokens"), so
	// that a loaded answer says "cut at /max 30 tokens while thinking" as
	// it did live.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Reasoning is an answer's reasoning (a reasoning model's thinking),
	// shown folded and sent back with the answer.
	Reasoning string `json:"reasoning,omitempty"`
	// Pinned marks a message kept in the never-trimmed prefix of the
	// cache (/pin).
	Pinned bool `json:"pinned,omitempty"`
	// Summarize marks a user message made by /summarize: Content is the
	// instruction, a blank line and the document.
	Summarize *savedSummarize `json:"summarize,omitempty"`
	// Summary, on the answer of a /summarize whose document was split,
	// holds the piece summaries.
	Summary *savedSummary `json:"summary,omitempty"`
	// orphan marks, after repairConversation, an answer with no question
	// before it (shown, not sent); never saved.
	orphan bool
}

// savedSummarize is what a /summarize asked.
type savedSummarize struct {
	Instruction string `json:"instruction,omitempty"` // "" = the default instruction
}

// savedSummary is the piece summaries of a /summarize answer.
type savedSummary struct {
	Pieces []savedPiece `json:"pieces"`
	// Inline says the answer's text is the pieces themselves (it was
	// stopped before they were combined).
	Inline bool `json:"inline,omitempty"`
}

// savedPiece is the summary of one piece of a summarized document: its
// place among the pieces and the byte range of the document it covers.
type savedPiece struct {
	Piece  int    `json:"piece"`
	Pieces int    `json:"pieces"`
	Start  int    `json:"start"`
	End    int    `json:"end"`
	Text   string `json:"text"`
}

// conversationFile is the JSON layout of a saved conversation (autosave,
// /save and /load):
//
//	{"version":1, "model":"...", "created":"RFC3339", "updated":"RFC3339",
//	 "system":"...", "messages":[{"role":"user","content":"..."}, ...],
//	 (a message may also have "display", "partial", "note", "max_tokens", "pinned",
//	 "summarize":{"instruction":"..."} and, on a /summarize answer,
//	 "summary":{"pieces":[{"piece":1,"pieces":9,"start":0,"end":4096,"text":"..."}]})
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
// The temporary file is named tempPrefix(path) plus a random suffix, so
// removeStaleTemps can recognise one that a killed process left behind.
func writeFileAtomic(path string, data []byte, dirPerm, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, tempPrefix(path)+"*")
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
	// The causes lose their *fs.PathError: they name the temporary file,
	// which the user never asked for ("writing X: write .X.tmp-1-2: no
	// space left on device").
	if err := errors.Join(safefile.Unwrap(werr), safefile.Unwrap(serr), safefile.Unwrap(cerr)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, safefile.Unwrap(err))
	}
	return nil
}

// tempPrefix is the name prefix of writeFileAtomic's temporary file for
// path: ".NAME.tmp-PID-" (the writer's process id, then a random suffix).
func tempPrefix(path string) string {
	return fmt.Sprintf(".%s.tmp-%d-", filepath.Base(path), os.Getpid())
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

// maxConversationBytes bounds a conversation file /load reads (a chat
// with several 10 MB pastes fits; /dev/zero does not).
const maxConversationBytes = 256 << 20

// loadConversation reads a conversation file and checks its roles. Only a
// regular file of at most maxConversationBytes is read: a FIFO, a device
// such as /dev/zero or a directory is refused at once, without blocking.
func loadConversation(path string) (conversationFile, error) {
	data, err := safefile.Read(path, maxConversationBytes)
	if err != nil {
		return conversationFile{}, err
	}
	return parseConversation(path, data)
}

// parseConversation decodes a conversation file's bytes (path names it in
// errors) and checks its version and roles.
func parseConversation(path string, data []byte) (conversationFile, error) {
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
//
// A new conversation's file is named from its start time when it is first
// written, and created exclusively then (createConversationFile), so two
// chats started in the same second never share a file. When a write fails (a full disk, a
// folder made read-only), the conversation moves once to a new folder under
// the system's temporary directory and the error says where it went.
type autosaver struct {
	mu      sync.Mutex
	dir     string    // folder of new conversation files ("" = autosave off)
	stamp   time.Time // names a new file
	path    string    // the file, once named ("" = not written yet)
	moved   bool      // already moved to a temporary folder after a failure
	snap    conversationFile
	dirty   bool
	lastErr error
	// save writes one snapshot (saveConversation; tests replace it).
	save func(path string, c conversationFile) error
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

// start begins a new conversation file in dir, named from t when it is
// first written ("" dir = autosave off).
func (a *autosaver) start(dir string, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dir, a.stamp, a.path = dir, t, ""
}

// adopt continues the conversation in an existing file (after /load).
func (a *autosaver) adopt(path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dir, a.path = filepath.Dir(path), path
}

// currentPath returns the autosave file ("" when autosave is off or the
// conversation has not been written yet).
func (a *autosaver) currentPath() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.path
}

// folder returns the folder new conversation files go to ("" = off).
func (a *autosaver) folder() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dir
}

// flush writes the snapshot if it changed since the last write. An empty
// conversation (no messages, no draft) is not written.
func (a *autosaver) flush() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.flushLocked()
}

func (a *autosaver) flushLocked() error {
	if a.dir == "" || !a.dirty {
		return nil
	}
	if len(a.snap.Messages) == 0 && a.snap.Draft == "" && a.snap.System == "" {
		a.dirty = false
		return nil
	}
	err := a.writeLocked()
	if err != nil && !a.moved {
		// Keep working: move this conversation to a temporary folder.
		a.moved = true
		if tmp, terr := os.MkdirTemp("", "mlxchat-conversations-"); terr == nil {
			from := a.path
			if from == "" {
				from = a.dir
			}
			a.dir, a.path = tmp, ""
			if werr := a.writeLocked(); werr == nil {
				err = &movedError{from: from, to: a.path, cause: err}
			} else {
				err = fmt.Errorf("%w; the fallback %s failed too: %v", err, tmp, werr)
			}
		}
	}
	a.lastErr = err
	if err == nil {
		a.dirty = false
	}
	return err
}

// writeLocked names the file if needed and writes the snapshot.
func (a *autosaver) writeLocked() error {
	save := a.save
	if save == nil {
		save = saveConversation
	}
	if a.path == "" {
		p, err := createConversationFile(a.dir, a.stamp, a.snap, save)
		if err != nil {
			return err
		}
		a.path = p
		return nil
	}
	return save(a.path, a.snap)
}

// movedError reports a conversation that could not be written where it
// was and is saved in a temporary folder instead. The conversation is
// safe, so the UI shows it as a warning naming both places.
type movedError struct {
	from, to string
	cause    error
}

func (e *movedError) Error() string {
	return fmt.Sprintf("saving to %s instead: %v", e.to, e.cause)
}

func (e *movedError) Unwrap() error { return e.cause }

// maxNameTries bounds the search for a free conversation file name.
const maxNameTries = 1000

// createConversationFile writes c as a new conversation file in dir named
// from t ("2006-01-02T15-04-05.json", then "-2", "-3"... when taken) and
// returns its path. The name is taken atomically and exclusively: c is
// written to a temporary file first, which is then hard-linked to the
// first free name (a link never replaces an existing file), so no other
// process can pick the same name and no kill leaves an empty or partial
// file under it. Where hard links are not supported, the name is reserved
// with O_EXCL and the temporary file renamed over it.
func createConversationFile(dir string, t time.Time, c conversationFile, save func(string, conversationFile) error) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	base := t.Format("2006-01-02T15-04-05")
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, fmt.Sprintf("%s%d", tempPrefix(base+".json"), binary.BigEndian.Uint32(rnd[:])))
	if err := save(tmp, c); err != nil {
		os.Remove(tmp)
		return "", err
	}
	defer os.Remove(tmp)
	linkOK := true
	for i := 1; i <= maxNameTries; i++ {
		name := base + ".json"
		if i > 1 {
			name = fmt.Sprintf("%s-%d.json", base, i)
		}
		p := filepath.Join(dir, name)
		if linkOK {
			err := os.Link(tmp, p)
			if err == nil {
				return p, nil
			}
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			linkOK = false // no hard links here: reserve, then rename
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("creating a conversation file in %s: %w", dir, err)
		}
		f.Close()
		if err := os.Rename(tmp, p); err != nil {
			os.Remove(p)
			return "", fmt.Errorf("writing %s: %w", p, err)
		}
		return p, nil
	}
	return "", fmt.Errorf("creating a conversation file in %s: %d names starting %s are taken", dir, maxNameTries, base)
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
// It is read as /load reads a conversation (safefile.Read, with the
// same bound: entries keep their pastes), so a FIFO or a device there is
// an error, not a hang or memory run out.
func loadHistory(path string) ([]historyEntry, error) {
	data, err := safefile.Read(path, maxConversationBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loading input history: %w", err)
	}
	return parseHistory(path, data)
}

// parseHistory decodes the input history read from path (its fuzz target
// is FuzzParseHistory).
func parseHistory(path string, data []byte) ([]historyEntry, error) {
	var h historyFile
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("loading input history %s: %w", path, err)
	}
	return h.Entries, nil
}

// openHistory loads the input history at path for a session. A history
// that cannot be read (corrupt JSON, a FIFO, a device, a directory) is
// moved aside with rename, to path.bad-TIME, so the session's first new
// entry does not overwrite what the user typed before; the error says
// where it went. When it cannot be moved, save is false: the session
// keeps its history in memory only and leaves the file as it is.
func openHistory(path string, now time.Time, rename func(from, to string) error) (entries []historyEntry, save bool, err error) {
	entries, err = loadHistory(path)
	if err == nil {
		return entries, true, nil
	}
	kept := path + ".bad-" + now.Format("20060102-150405")
	if rerr := rename(path, kept); rerr != nil {
		return nil, false, fmt.Errorf("%w; this session does not save its input history, so that file is left as it is (moving it aside: %v)", err, rerr)
	}
	return nil, true, fmt.Errorf("%w; kept it as %s and started a new history", err, kept)
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
