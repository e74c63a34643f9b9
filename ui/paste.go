package ui

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"mlxchat/bytesize"
)

// Paste thresholds: a bracketed paste at least this long is collapsed into a
// one-line block in the input (the same limits as ollama's TUI).
const (
	DefaultPasteMinChars = 1000
	DefaultPasteMinLines = 8
)

// TokenCounter counts the tokens of a text with the model's tokenizer. It
// may be called from the UI goroutine while the engine runs, so it must be
// safe for concurrent use. An error makes the UI fall back to an estimate.
type TokenCounter func(text string) (int, error)

// pasteBlock is one collapsed paste: the exact pasted text and the label that
// stands for it in the input editor.
type pasteBlock struct {
	Label   string `json:"label"`
	Content string `json:"content"`
}

// isLongPaste reports whether a paste should be collapsed.
func isLongPaste(s string, minChars, minLines int) bool {
	if minChars > 0 && utf8.RuneCountInString(s) >= minChars {
		return true
	}
	return minLines > 0 && strings.Count(s, "\n")+1 >= minLines
}

// countTokens counts the tokens of s as a message of s takes them: its
// text without the white space around it, which chat templates trim and
// which the engine leaves out of a message's tokens (its layout, so the
// fit check's MessageTokens), so that a paste's label and the fit check
// of a message that is the paste agree. It counts with fn, or estimates
// bytes/4 when fn is nil or fails; estimated reports the fallback.
func countTokens(fn TokenCounter, s string) (n int, estimated bool) {
	s = strings.TrimSpace(s)
	if fn != nil {
		if n, err := fn(s); err == nil {
			return n, false
		}
	}
	return (len(s) + 3) / 4, true
}

// pasteLabel formats the collapsed block, e.g. "[pasted: 2,631 tokens, 11 KB]"
// or, for an estimate, "[pasted: ~2,631 tokens, 11 KB]". seq > 1 adds " #seq"
// so that several identical-looking pastes stay distinct.
func pasteLabel(tokens int, estimated bool, nbytes int, seq int) string {
	approx := ""
	if estimated {
		approx = "~"
	}
	unit := "tokens"
	if tokens == 1 {
		unit = "token"
	}
	tag := ""
	if seq > 1 {
		tag = " #" + strconv.Itoa(seq)
	}
	return fmt.Sprintf("[pasted%s: %s%s %s, %s]", tag, approx, groupDigits(tokens), unit, formatBytes(int64(nbytes)))
}

// labelFacts is what a paste label says without its brackets and name:
// "[pasted #2: 2,631 tokens, 11 KiB]" -> "2,631 tokens, 11 KiB".
func labelFacts(label string) string {
	s := strings.Trim(label, "[]")
	if _, facts, ok := strings.Cut(s, ": "); ok {
		return facts
	}
	return s
}

// groupDigits writes n with thousands separators: 2631 -> "2,631".
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatBytes is bytesize.Format, so that a size reads the same in the
// chat and in the command line's output.
func formatBytes(n int64) string { return bytesize.Format(n) }

// pasteSet is the collapsed pastes of the message being edited.
type pasteSet struct {
	blocks []pasteBlock
}

// add registers a paste and returns the label to insert into the editor.
func (p *pasteSet) add(content string, count TokenCounter) string {
	tokens, est := countTokens(count, content)
	seq := len(p.blocks) + 1
	label := pasteLabel(tokens, est, len(content), seq)
	p.blocks = append(p.blocks, pasteBlock{Label: label, Content: content})
	return label
}

// asyncCountBytes is the paste size from which tokens are counted off the
// UI goroutine, with progress on the notice line.
const asyncCountBytes = 256 << 10

// addCounting registers a paste whose tokens are still being counted and
// returns its provisional label, e.g. "[pasted: 10.0 MB, counting
// tokens…]"; counted swaps it for the final one.
func (p *pasteSet) addCounting(content string) (label string, seq int) {
	seq = len(p.blocks) + 1
	tag := ""
	if seq > 1 {
		tag = " #" + strconv.Itoa(seq)
	}
	label = fmt.Sprintf("[pasted%s: %s, counting tokens…]", tag, formatBytes(int64(len(content))))
	p.blocks = append(p.blocks, pasteBlock{Label: label, Content: content})
	return label, seq
}

// relabel renames a block; it reports whether the set had it.
func (p *pasteSet) relabel(old, label string) bool {
	for i := range p.blocks {
		if p.blocks[i].Label == old {
			p.blocks[i].Label = label
			return true
		}
	}
	return false
}

// expand replaces every label that still appears in text by its paste. A
// label the user edited away is simply dropped with its paste.
func (p *pasteSet) expand(text string) string {
	for _, b := range p.blocks {
		text = strings.Replace(text, b.Label, b.Content, 1)
	}
	return text
}

// present returns the blocks whose labels still occur in text.
func (p *pasteSet) present(text string) []pasteBlock {
	var out []pasteBlock
	for _, b := range p.blocks {
		if strings.Contains(text, b.Label) {
			out = append(out, b)
		}
	}
	return out
}

func (p *pasteSet) reset() { p.blocks = nil }
