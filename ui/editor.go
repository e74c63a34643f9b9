package ui

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"mlxchat/themes"
)

// maxInputLines is the most lines the editor grows to.
const maxInputLines = 8

// defaultPlaceholder is the editor's hint while it is empty.
const defaultPlaceholder = "Message (Enter sends, Alt+Enter newline, /help)"

// editor is the input component: the text area, the collapsed pastes (and
// attached files) behind the labels in it, and the input history.
type editor struct {
	ta     textarea.Model
	pastes pasteSet
	// history holds the sent inputs, oldest first; histIdx is the entry
	// shown (len(history) = a new entry, whose text waits in histDraft).
	history   []historyEntry
	histIdx   int
	histDraft historyEntry
	height    int // lines the layout gives the editor
}

func newEditor(history []historyEntry) editor {
	e := editor{history: history, histIdx: len(history)}
	e.ta = textarea.New()
	e.ta.ShowLineNumbers = false
	e.ta.CharLimit = 0
	e.ta.MaxHeight = 0
	e.ta.MaxWidth = 0
	e.ta.Placeholder = defaultPlaceholder
	km := textarea.DefaultKeyMap
	km.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j"))
	km.LineEnd = key.NewBinding(key.WithKeys("end"))
	km.Paste = key.NewBinding(key.WithDisabled())
	e.ta.KeyMap = km
	e.ta.Focus()
	e.ta.Prompt = "› "
	return e
}

// setTheme styles the editor.
func (e *editor) setTheme(t themes.Theme) {
	fs, bs := textarea.DefaultStyles()
	for _, s := range []*textarea.Style{&fs, &bs} {
		s.CursorLine = lipgloss.NewStyle()
		s.Placeholder = t.Dim
		s.Prompt = t.Prompt
		s.Text = lipgloss.NewStyle()
		s.EndOfBuffer = t.Dim
	}
	e.ta.FocusedStyle, e.ta.BlurredStyle = fs, bs
}

// value is the editor's text, pastes as their labels.
func (e *editor) value() string { return e.ta.Value() }

// present is the pastes whose labels are still in the editor.
func (e *editor) present() []pasteBlock { return e.pastes.present(e.ta.Value()) }

// full is the editor's text with every paste expanded: what a send sends.
func (e *editor) full() string { return e.pastes.expand(e.ta.Value()) }

// set replaces the text and the pastes behind its labels.
func (e *editor) set(text string, blocks []pasteBlock) {
	e.ta.SetValue(text)
	e.pastes.blocks = blocks
}

// clear empties the editor (text and pastes).
func (e *editor) clear() {
	e.ta.Reset()
	e.pastes.reset()
}

// insert types s at the cursor.
func (e *editor) insert(s string) { e.ta.InsertString(s) }

// update passes a key (or any other message) to the text area.
func (e *editor) update(msg tea.Msg) tea.Cmd {
	var c tea.Cmd
	e.ta, c = e.ta.Update(msg)
	return c
}

// wantHeight is the height the editor's content needs on a screen of
// screenH lines: its line count, at least 1 and at most maxInputLines (and
// a third of the screen).
func (e *editor) wantHeight(screenH int) int {
	limit := max(min(maxInputLines, screenH/3), 1)
	return min(max(e.ta.LineCount(), 1), limit)
}

// resize sets the width and height.
func (e *editor) resize(width, height int) {
	e.height = height
	e.ta.SetWidth(width)
	e.ta.SetHeight(height)
}

// onFirstLine and onLastLine tell whether Up and Down walk the history.
func (e *editor) onFirstLine() bool { return e.ta.Line() == 0 }
func (e *editor) onLastLine() bool  { return e.ta.Line() == e.ta.LineCount()-1 }

// historyMove recalls the previous (-1) or next (+1) input.
func (e *editor) historyMove(d int) bool {
	n := e.histIdx + d
	if n < 0 || n > len(e.history) || len(e.history) == 0 {
		return false
	}
	if e.histIdx == len(e.history) {
		v := e.ta.Value()
		e.histDraft = historyEntry{Text: v, Pastes: e.pastes.present(v)}
	}
	e.histIdx = n
	h := e.histDraft
	if n < len(e.history) {
		h = e.history[n]
	}
	e.ta.SetValue(h.Text)
	e.pastes.blocks = append([]pasteBlock(nil), h.Pastes...)
	return true
}

// push adds a sent input to the history (limit > 0 bounds its length).
func (e *editor) push(h historyEntry, limit int) {
	if n := len(e.history); n == 0 || e.history[n-1].Text != h.Text {
		e.history = append(e.history, h)
		if limit > 0 && len(e.history) > limit {
			e.history = e.history[len(e.history)-limit:]
		}
	}
	e.histIdx = len(e.history)
	e.histDraft = historyEntry{}
}

// expand replaces the collapsed blocks by their text; false when there
// is none.
func (e *editor) expand() bool {
	v := e.ta.Value()
	if len(e.pastes.present(v)) == 0 {
		return false
	}
	e.ta.SetValue(e.pastes.expand(v))
	e.pastes.reset()
	return true
}

// relabel renames a paste block in the editor (keeping the cursor) and
// in the history.
func (e *editor) relabel(old, label string) {
	if e.pastes.relabel(old, label) {
		e.replace(old, label)
	}
	for i := range e.history {
		if h := &e.history[i]; strings.Contains(h.Text, old) {
			h.Text = strings.Replace(h.Text, old, label, 1)
			h.Pastes = relabelBlocks(h.Pastes, old, label)
		}
	}
}

// replace replaces the first old in the editor by s and puts the cursor
// back where it was (shifted when the change is before it).
func (e *editor) replace(old, s string) {
	v := e.ta.Value()
	i := strings.Index(v, old)
	if i < 0 {
		return
	}
	row := e.ta.Line()
	li := e.ta.LineInfo()
	col := li.StartColumn + li.ColumnOffset
	labelRow := strings.Count(v[:i], "\n")
	if labelRow == row {
		lineStart := strings.LastIndex(v[:i], "\n") + 1
		if at := utf8.RuneCountInString(v[lineStart:i]); at < col {
			col += utf8.RuneCountInString(s) - utf8.RuneCountInString(old)
		}
	}
	e.ta.SetValue(v[:i] + s + v[i+len(old):])
	for n := 0; e.ta.Line() > row && n < 1<<16; n++ {
		e.ta.CursorUp()
	}
	e.ta.SetCursor(col)
}

// relabelBlocks returns a copy of blocks with old renamed (the slices of
// a turn and its history entry may share an array).
func relabelBlocks(blocks []pasteBlock, old, label string) []pasteBlock {
	out := append([]pasteBlock(nil), blocks...)
	for i := range out {
		if out[i].Label == old {
			out[i].Label = label
		}
	}
	return out
}

// editorSafe reports whether the editor keeps s exactly: it turns tabs
// into spaces and drops other control characters and U+FFFD, so a paste
// holding any of those is collapsed (kept aside whole) however short.
func editorSafe(s string) bool {
	for _, r := range s {
		if r == '\t' || r == utf8.RuneError || (r != '\n' && unicode.IsControl(r)) {
			return false
		}
	}
	return true
}

func (e *editor) view() string { return e.ta.View() }
