package ui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/safefile"
	"mlxchat/textinput"
)

// maxAttachBytes bounds a file /read or @path attaches.
const maxAttachBytes = textinput.MaxBytes

// attachment is a text file read for /read or an @path.
type attachment struct {
	ref   string // "@path" as typed ("" for /read)
	block pasteBlock
}

// attachedMsg carries files read off the UI goroutine: for /read one,
// for a message every @path in it; err (one line, naming the file) when
// any failed, then nothing is attached.
type attachedMsg struct {
	items []attachment
	// text is the editor's text the @paths were found in ("" for /read):
	// the message is sent only if it is unchanged.
	text string
	// cmd is the /read command line ("" for a message's @paths).
	cmd string
	err error
}

// readTextFile reads path as a text file to attach: a regular file of at
// most maxAttachBytes, valid UTF-8 without NUL bytes (textinput.Check,
// which `mlxchat run` uses too: a binary file is refused), a UTF-8 BOM
// dropped and CRLF line ends made LF, and not empty.
func readTextFile(path string) (string, error) {
	data, err := safefile.Read(path, maxAttachBytes)
	if err != nil {
		return "", err
	}
	text, err := textinput.Check(path, data)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(text) == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return text, nil
}

// expandHome turns a leading "~/" into the home directory.
func expandHome(p string) string {
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[2:])
		}
	}
	return p
}

// fileLabel is a file block's label, e.g. "[file notes.md: 2,631 tokens,
// 11 KB]"; seq > 1 adds " #seq" so that blocks stay distinct.
func fileLabel(name string, tokens int, estimated bool, nbytes, seq int) string {
	l := pasteLabel(tokens, estimated, nbytes, seq)
	return strings.Replace(l, "[pasted", "[file "+sanitize(strings.ReplaceAll(name, "]", ")")), 1)
}

// readAttachments reads the files of refs (the /read path or the @paths)
// and makes their blocks; seq is the number of the first block.
func readAttachments(refs []string, paths []string, count TokenCounter, seq int) ([]attachment, error) {
	var out []attachment
	for i, p := range paths {
		text, err := readTextFile(p)
		if err != nil {
			if refs[i] != "" {
				return nil, fmt.Errorf("%s: %w", refs[i], err)
			}
			return nil, err
		}
		n, est := countTokens(count, text)
		label := fileLabel(filepath.Base(p), n, est, len(text), seq+i)
		out = append(out, attachment{ref: refs[i], block: pasteBlock{Label: label, Content: text}})
	}
	return out, nil
}

// startRead carries out /read PATH: the file is read off the UI goroutine
// and attached to the editor as a collapsed block.
func (m *model) startRead(path string) (tea.Cmd, error) {
	if m.jobs.reading != "" {
		return nil, fmt.Errorf("/read: still reading %s", m.jobs.reading)
	}
	p := expandHome(path)
	m.jobs.reading = path
	m.setNotice("reading " + path + "…")
	count, seq := m.sess.count, len(m.ed.pastes.blocks)+1
	return func() tea.Msg {
		items, err := readAttachments([]string{""}, []string{p}, count, seq)
		if err != nil {
			err = fmt.Errorf("/read: %w", err)
		}
		return attachedMsg{items: items, cmd: "/read " + path, err: err}
	}, nil
}

// atPathRE finds "@path" words in a message.
var atPathRE = regexp.MustCompile(`(^|[\s(])@([^\s]+)`)

// atPaths finds the @path words of a message that name files: a word that
// names an existing file (trailing punctuation aside), or looks like a
// path (has a "/" or starts with "~" or ".") and then must exist. Other
// @words ("@alice") stay text.
func atPaths(text string) (refs, paths []string, err error) {
	for _, mt := range atPathRE.FindAllStringSubmatch(text, -1) {
		word := mt[2]
		if strings.HasPrefix(word, "@") {
			continue // "@@word": a literal @
		}
		trimmed := strings.TrimRight(word, ".,;:!?)]'\"")
		found := false
		for _, cand := range []string{word, trimmed} {
			if _, serr := os.Stat(expandHome(cand)); cand != "" && serr == nil {
				refs, paths = append(refs, "@"+cand), append(paths, expandHome(cand))
				found = true
				break
			}
		}
		looksLikePath := strings.Contains(trimmed, "/") || strings.HasPrefix(trimmed, "~") || strings.HasPrefix(trimmed, ".")
		if !found && looksLikePath {
			_, serr := os.Stat(expandHome(trimmed))
			if errors.Is(serr, os.ErrNotExist) {
				return nil, nil, fmt.Errorf("@%s: no such file (write @@ to send an @ as text)", trimmed)
			}
			return nil, nil, fmt.Errorf("@%s: %w", trimmed, serr)
		}
	}
	return refs, paths, nil
}

// startAtPaths reads the files a message names with @path off the UI
// goroutine; attached then puts their blocks in place of the @paths and
// sends the message. It reports false when the message names none.
func (m *model) startAtPaths(text string) (tea.Cmd, bool, error) {
	refs, paths, err := atPaths(text)
	if err != nil || len(refs) == 0 {
		return nil, false, err
	}
	m.jobs.reading = strings.Join(refs, ", ")
	m.setNotice("reading " + m.jobs.reading + "…")
	count, seq := m.sess.count, len(m.ed.pastes.blocks)+1
	return func() tea.Msg {
		items, err := readAttachments(refs, paths, count, seq)
		return attachedMsg{items: items, text: text, err: err}
	}, true, nil
}

// attached takes files read for /read or a message's @paths. /read puts
// its block at the cursor; a message gets each @path replaced by its
// block and is sent, unless it was edited meanwhile. A failure changes
// nothing and says why.
func (m *model) attached(msg attachedMsg) tea.Cmd {
	m.jobs.reading = ""
	if msg.err != nil {
		if msg.cmd != "" {
			m.commandFailed(msg.err) // ↑ brings the /read back
		} else {
			m.setError(msg.err)
		}
		return nil
	}
	if msg.text == "" {
		a := msg.items[0]
		m.ed.pastes.blocks = append(m.ed.pastes.blocks, a.block)
		m.ed.insert(a.block.Label)
		m.afterEdit()
		m.setNotice(fmt.Sprintf("attached %s; type around it and press Enter, or /summarize it", strings.Trim(a.block.Label, "[]")))
		m.saveDraft(true)
		m.pastedDocument()
		return nil
	}
	if m.ed.value() != msg.text {
		m.setNotice("the message changed while its files were read; press Enter to send it")
		return nil
	}
	text := msg.text
	for _, a := range msg.items {
		text = strings.Replace(text, a.ref, a.block.Label, 1)
		m.ed.pastes.blocks = append(m.ed.pastes.blocks, a.block)
	}
	m.ed.ta.SetValue(text)
	m.afterEdit()
	m.saveDraft(true)
	return m.submitNow() // its turn in the queue, if any, has come
}

// escapedAtRE finds "@@" at the start of a word: a literal "@".
var escapedAtRE = regexp.MustCompile(`(^|[\s(])@@(\S)`)

// unescapeAt turns "@@word" into "@word" (the way to write an @ before
// a word that looks like a path but is not a file to attach).
func unescapeAt(s string) string { return escapedAtRE.ReplaceAllString(s, "$1@$2") }
