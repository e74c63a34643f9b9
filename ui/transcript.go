package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"mlxchat/engine"
	"mlxchat/themes"
)

// turnKind is what a block of the conversation view is.
type turnKind int

const (
	turnUser turnKind = iota
	turnAssistant
	turnInfo  // command output; not part of the chat
	turnError // a failed request; not part of the chat
	turnNote  // the model's load-time notes, dimmed; not part of the chat
)

// turn is one block of the conversation view.
type turn struct {
	kind    turnKind
	content string       // exact text (sent to / received from the model)
	display string       // user turns: the text with pastes collapsed
	pastes  []pasteBlock // user turns: the pastes behind the labels in display
	partial bool         // assistant answer stopped early
	note    string       // assistant: why it stopped early
	// maxTokens is the /max an answer was cut at (0: not cut there, or
	// loaded from a file).
	maxTokens int
	// reasoning is an answer's reasoning (think.go), streamed or done.
	reasoning string
	// pinned keeps the message in the never-trimmed prefix of the cache
	// (/pin; engine.Message.Pinned).
	pinned bool
	// span is where the message lay in the cache after the last request
	// (its Layout entry); nil = not known (not sent yet, or the cache was
	// emptied since).
	span *engine.MessageSpan
	// summarize, on a user turn, marks a /summarize: content is the
	// instruction, a blank line and the document.
	summarize *summarizeSource
	// pieces, on the answer of a /summarize whose document was split,
	// are the piece summaries, folded under the answer; piecesInline says
	// the answer's text is those summaries (stopped before they were
	// combined), so they are not repeated under it.
	pieces       []engine.SummaryPiece
	piecesInline bool

	stream *stream // assistant answer while it streams
	out    string  // cached rendering, already fitted to the viewport
	outOK  bool
	outKey renderKey // what the cached rendering was made for
}

// summarizeSource is what a /summarize user turn asked.
type summarizeSource struct {
	instruction string // "" = engine.DefaultSummarizeInstruction
}

// summarizeContent is the content of a /summarize user turn.
func summarizeContent(instruction, doc string) string {
	if instruction == "" {
		instruction = engine.DefaultSummarizeInstruction
	}
	return instruction + "\n\n" + doc
}

// document returns the summarized document of a /summarize user turn.
func (t *turn) document() string {
	if t.summarize == nil {
		return t.content
	}
	_, doc, _ := strings.Cut(t.content, "\n\n")
	return doc
}

// renderKey is what a turn's cached rendering depends on besides the turn.
type renderKey struct {
	width, fit int
	unfold     bool
	number     int
}

// transcript is the conversation component: the turns, their rendering
// (cached per turn; a streaming answer re-renders only its unfinished
// tail) and the scrollable viewport that shows them.
type transcript struct {
	turns   []turn
	vp      viewport.Model
	md      *markdown
	theme   themes.Theme
	profile termenv.Profile
	width   int    // screen width: text wraps at width-2
	label   string // the model's short name, for answer labels
	welcome string // shown while there is no turn
	// unfold shows the folded parts of answers (Ctrl+O).
	unfold bool
	dirty  bool
}

func newTranscript(t themes.Theme, profile termenv.Profile, width int) (transcript, error) {
	tr := transcript{theme: t, profile: profile, width: width, label: "model"}
	tr.vp = viewport.New(width, 10)
	tr.vp.KeyMap = viewport.KeyMap{} // keys go to the editor; PgUp/PgDn come through the model
	md, err := newMarkdown(t.Glamour, tr.mdWidth(), profile)
	if err != nil {
		return tr, err
	}
	tr.md = md
	return tr, nil
}

func (tr *transcript) mdWidth() int { return min(tr.width-2, 120) }

// setTheme switches the styles and the markdown renderer.
func (tr *transcript) setTheme(t themes.Theme) error {
	md, err := newMarkdown(t.Glamour, tr.mdWidth(), tr.profile)
	if err != nil {
		return err
	}
	tr.theme, tr.md = t, md
	tr.invalidate()
	return nil
}

// resize sets the screen width and the viewport's size.
func (tr *transcript) resize(width, vpWidth, vpHeight int) {
	tr.width = width
	if tr.md != nil && tr.md.width != max(tr.mdWidth(), 10) {
		if md, err := newMarkdown(tr.theme.Glamour, tr.mdWidth(), tr.profile); err == nil {
			tr.md = md
		}
		tr.invalidate()
	}
	wasBottom := tr.vp.AtBottom()
	tr.vp.Width, tr.vp.Height = vpWidth, vpHeight
	if wasBottom {
		tr.vp.GotoBottom()
	}
}

// invalidate drops every cached rendering.
func (tr *transcript) invalidate() {
	for i := range tr.turns {
		tr.turns[i].outOK = false
		if tr.turns[i].stream != nil {
			tr.turns[i].stream.reset()
		}
	}
	tr.dirty = true
}

// onlyNotes reports whether the view holds no turn but the model's notes
// (or none at all).
func (tr *transcript) onlyNotes() bool {
	for i := range tr.turns {
		if tr.turns[i].kind != turnNote {
			return false
		}
	}
	return true
}

// addNotes shows the model's load-time notes, one dimmed "note:" line
// each (wrapped when longer than the view).
func (tr *transcript) addNotes(notes []string) {
	if len(notes) == 0 {
		return
	}
	tr.add(turn{kind: turnNote, content: strings.Join(notes, "\n")})
}

// renderNotes renders a note turn (its notes one a line) dimmed, each
// note as "note: " and its text, wrapped lines indented under the text.
func (tr *transcript) renderNotes(content string, w int) string {
	const label, hang = "note: ", "      "
	var out []string
	for _, n := range strings.Split(content, "\n") {
		wrapped := strings.Split(ansi.Wrap(sanitize(n), max(w-2-len(label), 10), ""), "\n")
		for i, l := range wrapped {
			pre := hang
			if i == 0 {
				pre = label
			}
			out = append(out, "  "+tr.theme.Dim.Render(pre+l))
		}
	}
	return strings.Join(out, "\n")
}

// add appends a turn and returns its index.
func (tr *transcript) add(t turn) int {
	tr.turns = append(tr.turns, t)
	tr.dirty = true
	return len(tr.turns) - 1
}

// addInfo appends command output (not part of the chat) and shows it.
func (tr *transcript) addInfo(text string) {
	tr.add(turn{kind: turnInfo, content: text})
	tr.refresh()
	tr.vp.GotoBottom()
}

// reset drops every turn.
func (tr *transcript) reset() {
	tr.turns = nil
	tr.dirty = true
}

// changed marks turn i for rendering again.
func (tr *transcript) changed(i int) {
	tr.turns[i].outOK = false
	tr.dirty = true
}

// isMessage reports whether a turn is part of the chat sent to the model.
func (t *turn) isMessage() bool {
	return t.kind == turnUser || (t.kind == turnAssistant && t.stream == nil)
}

// conversation is the chat so far as engine messages (user and finished
// assistant turns; the system prompt travels in Settings.System), and for
// each message the index of its turn. A /summarize whose document was
// split is sent as its instruction and the piece summaries: the document
// did not fit the live window, and sending it again would only prefill it
// to be trimmed again.
func (tr *transcript) conversation() ([]engine.Message, []int) {
	var msgs []engine.Message
	var at []int
	for i := range tr.turns {
		t := &tr.turns[i]
		if !t.isMessage() {
			continue
		}
		role := engine.RoleUser
		if t.kind == turnAssistant {
			role = engine.RoleAssistant
		}
		msgs = append(msgs, engine.Message{Role: role, Content: tr.sentContent(i), Reasoning: t.reasoning, Pinned: t.pinned})
		at = append(at, i)
	}
	return msgs, at
}

// sentContent is what turn i sends to the model: its content, or for a
// /summarize whose document was split, the digest of its pieces.
func (tr *transcript) sentContent(i int) string {
	t := &tr.turns[i]
	if t.kind == turnUser && t.summarize != nil {
		if next := tr.answerAfter(i); next != nil && len(next.pieces) > 0 {
			return digest(t, next.pieces)
		}
	}
	return t.content
}

// messageCount is how many turns are messages (the highest #N).
func (tr *transcript) messageCount() int {
	n := 0
	for i := range tr.turns {
		if tr.turns[i].isMessage() {
			n++
		}
	}
	return n
}

// lastPinned is the number of the last pinned message, or 0.
func (tr *transcript) lastPinned() int {
	n, last := 0, 0
	for i := range tr.turns {
		if tr.turns[i].isMessage() {
			n++
			if tr.turns[i].pinned {
				last = n
			}
		}
	}
	return last
}

// tokens is the number of content tokens of message turn i: exact from
// its Layout span, else counted with count when the text is short enough
// to count on the UI goroutine; ok is false when neither is known.
func (tr *transcript) tokens(i int, count TokenCounter) (n int, ok bool) {
	if s := tr.turns[i].span; s != nil {
		return s.Tokens.Len(), true
	}
	text := tr.sentContent(i)
	if count == nil || len(text) >= asyncCountBytes {
		return 0, false
	}
	n, est := countTokens(count, text)
	return n, !est
}

// answerAfter is the finished answer right after turn i, or nil.
func (tr *transcript) answerAfter(i int) *turn {
	for j := i + 1; j < len(tr.turns); j++ {
		switch tr.turns[j].kind {
		case turnAssistant:
			if tr.turns[j].stream != nil {
				return nil
			}
			return &tr.turns[j]
		case turnUser:
			return nil
		}
	}
	return nil
}

// digest is what later turns send for a /summarize whose document was
// split: the instruction and the summaries of the document's parts.
func digest(t *turn, pieces []engine.SummaryPiece) string {
	instr := t.summarize.instruction
	if instr == "" {
		instr = engine.DefaultSummarizeInstruction
	}
	var b strings.Builder
	b.WriteString(instr)
	fmt.Fprintf(&b, "\n\n(The document, %s, did not fit the context and was summarized in %d parts; the summaries of its parts, in order:)",
		formatBytes(int64(len(t.document()))), pieces[0].Pieces)
	for _, p := range pieces {
		fmt.Fprintf(&b, "\n\nPart %d of %d:\n%s", p.Piece, p.Pieces, p.Text)
	}
	return b.String()
}

// piecesText is the piece summaries as one markdown text.
func piecesText(pieces []engine.SummaryPiece) string {
	var b strings.Builder
	for i, p := range pieces {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "**Part %d of %d** (bytes %s–%s of the document)\n\n%s", p.Piece, p.Pieces,
			groupDigits(p.SourceStart), groupDigits(p.SourceEnd), p.Text)
	}
	return b.String()
}

// hasFolds reports whether any answer has a folded part.
func (tr *transcript) hasFolds() bool {
	for i := range tr.turns {
		for _, seg := range answerSegments(&tr.turns[i]) {
			if seg.folded {
				return true
			}
		}
	}
	return false
}

// number is the 1-based position of turn i among the messages (what /pin
// N counts), or 0 for a turn that is not a message.
func (tr *transcript) number(i int) int {
	if !tr.turns[i].isMessage() {
		return 0
	}
	n := 0
	for j := 0; j <= i; j++ {
		if tr.turns[j].isMessage() {
			n++
		}
	}
	return n
}

// message returns the turn index of message n (1-based), or -1.
func (tr *transcript) message(n int) int {
	k := 0
	for i := range tr.turns {
		if tr.turns[i].isMessage() {
			k++
			if k == n {
				return i
			}
		}
	}
	return -1
}

// applyLayout records where each message of a request lies in the cache.
// turnOf maps the request's conversation indexes to turns; answer is the
// turn of the request's answer (-1 for none).
func (tr *transcript) applyLayout(l engine.Layout, turnOf []int, answer int) {
	for _, ms := range l.Messages {
		i := -1
		switch {
		case ms.Index >= 0 && ms.Index < len(turnOf):
			i = turnOf[ms.Index]
		case ms.Index == len(turnOf):
			i = answer
		}
		if i < 0 || i >= len(tr.turns) {
			continue
		}
		s := ms
		if old := tr.turns[i].span; old == nil || *old != s {
			tr.turns[i].span = &s
			tr.changed(i)
		}
	}
}

// clearSpans forgets where messages lie (the cache was emptied).
func (tr *transcript) clearSpans() {
	for i := range tr.turns {
		if tr.turns[i].span != nil {
			tr.turns[i].span = nil
			tr.changed(i)
		}
	}
}

// windowLines lists, for /stats, the messages the live window no longer
// holds whole: those wholly outside it (dimmed) and those it cuts.
func (tr *transcript) windowLines() []string {
	var out, gone []string
	n := 0
	for i := range tr.turns {
		t := &tr.turns[i]
		if !t.isMessage() {
			continue
		}
		n++
		who := "you"
		if t.kind == turnAssistant {
			who = tr.label
		}
		switch liveState(t) {
		case "trimmed":
			gone = append(gone, fmt.Sprintf("#%d %s", n, who))
		case "cut":
			out = append(out, fmt.Sprintf("#%d %s: cut, %s of its %s tokens trimmed; the model sees the last %s",
				n, who, groupDigits(t.span.Trimmed), groupDigits(t.span.Tokens.Len()), groupDigits(t.span.Live)))
		}
	}
	if len(gone) > 0 {
		out = append([]string{strings.Join(gone, ", ") + ": outside the live window (dimmed)"}, out...)
	}
	for i := range out {
		pad := "       "
		if i == 0 {
			pad = "window "
		}
		out[i] = pad + out[i]
	}
	return out
}

// toggleFold shows or hides the folded parts of answers.
func (tr *transcript) toggleFold() bool {
	tr.unfold = !tr.unfold
	tr.dirty = true
	return tr.unfold
}

// relabel renames a paste block in the sent turns.
func (tr *transcript) relabel(old, label string) {
	for i := range tr.turns {
		t := &tr.turns[i]
		if t.kind == turnUser && strings.Contains(t.display, old) {
			t.display = strings.Replace(t.display, old, label, 1)
			t.pastes = relabelBlocks(t.pastes, old, label)
			tr.changed(i)
		}
	}
}

// refresh re-renders the conversation into the viewport. Finished turns
// come from their cache (rendered and fitted once); only a streaming
// answer's unfinished tail is rendered again on a frame.
func (tr *transcript) refresh() {
	tr.dirty = false
	parts := make([]string, 0, len(tr.turns))
	n := 0
	for i := range tr.turns {
		num := 0
		if tr.turns[i].isMessage() {
			n++
			num = n
		}
		parts = append(parts, tr.renderTurn(&tr.turns[i], num))
	}
	// fitWidth works line by line, so fitting each turn equals fitting the
	// joined text.
	content := strings.Join(parts, "\n\n")
	if tr.onlyNotes() {
		// The welcome, above the model's notes while nothing else came.
		content = strings.TrimSuffix(fitWidth(tr.welcome, tr.vp.Width)+"\n\n"+content, "\n\n")
	}
	wasBottom := tr.vp.AtBottom() || tr.vp.TotalLineCount() <= tr.vp.Height
	tr.vp.SetContent(content)
	if wasBottom {
		tr.vp.GotoBottom()
	}
}

// view is the visible part of the conversation.
func (tr *transcript) view(width int) string { return truncateLines(tr.vp.View(), width) }

func (tr *transcript) atBottom() bool { return tr.vp.AtBottom() }
func (tr *transcript) pageUp()        { tr.vp.PageUp() }
func (tr *transcript) pageDown()      { tr.vp.PageDown() }
func (tr *transcript) gotoBottom()    { tr.vp.GotoBottom() }

// scroll passes a mouse event (the wheel) to the viewport.
func (tr *transcript) scroll(msg tea.MouseMsg) tea.Cmd {
	var c tea.Cmd
	tr.vp, c = tr.vp.Update(msg)
	return c
}

// renderTurn renders one block fitted to the viewport width, from cache
// when nothing changed; num is its message number (0 = not a message).
func (tr *transcript) renderTurn(t *turn, num int) string {
	key := renderKey{width: tr.width, fit: tr.vp.Width, unfold: tr.unfold, number: num}
	if t.stream == nil && t.outOK && t.outKey == key {
		return t.out
	}
	w := tr.width
	var out string
	switch t.kind {
	case turnUser:
		out = tr.labelLine("you", tr.theme.UserLabel, t, num) + "\n" + tr.renderUser(t, w)
	case turnAssistant:
		out = tr.labelLine(tr.label, tr.theme.ModelLabel, t, num) + "\n" + tr.renderAnswer(t)
	case turnInfo:
		out = indent(tr.theme.Info.Render(ansi.Wrap(sanitize(t.content), w-2, "")), "  ")
	case turnError:
		out = indent(tr.theme.Error.Render(ansi.Wrap(sanitize(t.content), w-2, "")), "  ")
	case turnNote:
		out = tr.renderNotes(t.content, w)
	}
	out = fitWidth(out, tr.vp.Width)
	if t.stream == nil {
		t.out, t.outOK, t.outKey = out, true, key
	}
	return out
}

// labelLine is a message's label line: the name, its notes (partial,
// pinned, trimmed or cut by the live window) and, at the right edge, its
// message number (for /pin N).
func (tr *transcript) labelLine(name string, style lipgloss.Style, t *turn, num int) string {
	var notes []string
	if t.note != "" {
		notes = append(notes, t.note)
	}
	if t.pinned {
		notes = append(notes, "pinned")
	}
	if state := liveState(t); state != "" {
		notes = append(notes, state)
	}
	s := style.Render(name)
	if len(notes) > 0 {
		s += tr.theme.Dim.Render(" · " + strings.Join(notes, " · "))
	}
	if num > 0 {
		tag := fmt.Sprintf("#%d", num)
		if gap := tr.vp.Width - lipgloss.Width(s) - len(tag); gap >= 2 {
			s += strings.Repeat(" ", gap) + tr.theme.Dim.Render(tag)
		}
	}
	return s
}

// liveState says how a message stands with the live window: "" (wholly
// live, or not known), "trimmed" (wholly outside it: the model no longer
// attends it) or "cut" (its start is trimmed).
func liveState(t *turn) string {
	s := t.span
	switch {
	case s == nil || s.Tokens.Len() == 0 || s.Trimmed == 0:
		return ""
	case s.Live == 0:
		return "trimmed"
	}
	return "cut"
}

// renderUser renders a user turn's text: the display form (pastes as
// styled labels), dimmed where the model no longer attends it, with a
// marker line where the live window cuts it.
func (tr *transcript) renderUser(t *turn, w int) string {
	body := func(s string, dim bool) string {
		s = sanitize(s)
		style := tr.theme.UserText
		if dim {
			style = tr.theme.Trimmed
		}
		for _, p := range t.pastes {
			s = strings.Replace(s, p.Label, tr.theme.Paste.Render(p.Label), 1)
		}
		return indent(ansi.Wrap(style.Render(s), w-2, ""), "  ")
	}
	switch liveState(t) {
	case "trimmed":
		return body(t.display, true)
	case "cut":
		at, inPaste := displayOffset(t, t.span.CutAt)
		mark := tr.cutMark(t, inPaste)
		if inPaste {
			// The cut lies inside a collapsed paste: the marker follows
			// the line that holds its label.
			end := strings.IndexByte(t.display[at:], '\n')
			if end < 0 {
				return body(t.display, false) + "\n" + mark
			}
			return body(t.display[:at+end], false) + "\n" + mark + "\n" + body(t.display[at+end+1:], false)
		}
		out := ""
		if at > 0 {
			out = body(strings.TrimSuffix(t.display[:at], "\n"), true) + "\n"
		}
		return out + mark + "\n" + body(t.display[at:], false)
	}
	return body(t.display, false)
}

// cutMark is the line that shows where the live window cuts a message.
func (tr *transcript) cutMark(t *turn, inPaste bool) string {
	s := t.span
	verb := "are"
	if s.Trimmed == 1 {
		verb = "is" // "1 of its 203 tokens is outside"
	}
	text := fmt.Sprintf("✂ above: %s of its %s tokens %s outside the live window; the model sees from here",
		groupDigits(s.Trimmed), groupDigits(s.Tokens.Len()), verb)
	if inPaste {
		text = fmt.Sprintf("✂ the model sees only the last %s of this message's %s tokens; the start is outside the live window",
			groupDigits(s.Live), groupDigits(s.Tokens.Len()))
	}
	return indent(tr.theme.Cut.Render(ansi.Wrap(text, tr.width-2, "")), "  ")
}

// displayOffset maps a byte offset into a user turn's content to its
// display text (pastes collapsed into labels). inPaste says the offset
// falls inside a paste (or a text not shown as sent); the result is then
// the start of its label.
func displayOffset(t *turn, at int) (int, bool) {
	if t.summarize != nil {
		return len(t.display), true // sent as its piece summaries, not as shown
	}
	if t.display == t.content || len(t.pastes) == 0 {
		return min(max(at, 0), len(t.display)), false
	}
	d, c := 0, 0 // positions in display and content
	rest := t.display
	for _, p := range t.pastes {
		i := strings.Index(rest, p.Label)
		if i < 0 {
			continue
		}
		if at < c+i {
			return d + (at - c), false
		}
		d, c = d+i, c+i
		if at < c+len(p.Content) {
			return d, true
		}
		d, c = d+len(p.Label), c+len(p.Content)
		rest = rest[i+len(p.Label):]
	}
	return min(d+(at-c), len(t.display)), false
}

// segment is one part of an answer as shown: the answer text itself, or
// a part that is folded under it (piece summaries; thinking blocks) with
// a one-line title while folded.
type segment struct {
	folded bool   // a foldable part (shown only when unfolded)
	dim    bool   // shown as dimmed plain text, not markdown
	title  string // the fold's header line
	text   string // markdown
}

// answerSegments splits an answer into what renderAnswer shows: the
// answer text, then the foldable parts. Every answer goes through here,
// so a new kind of foldable part (a model's thinking, say) only adds
// segments.
func answerSegments(t *turn) []segment {
	if t.kind != turnAssistant {
		return nil
	}
	var segs []segment
	if th, ok := thinkingSegment(t); ok {
		segs = append(segs, th)
	}
	segs = append(segs, segment{text: t.content})
	if n := len(t.pieces); n > 0 && !t.piecesInline {
		title := fmt.Sprintf("%d piece summaries", n)
		if n == 1 {
			title = "1 piece summary"
		}
		segs = append(segs, segment{folded: true, title: title, text: piecesText(t.pieces)})
	}
	return segs
}

// renderAnswer renders an answer through answerSegments: its text as
// markdown (a streaming one through its stream, which re-renders only the
// unfinished tail), and its foldable parts (reasoning above it, piece
// summaries under it), each folded to a header line unless unfolded.
func (tr *transcript) renderAnswer(t *turn) string {
	var parts []string
	for _, seg := range answerSegments(t) {
		switch {
		case !seg.folded:
			body := ""
			if t.stream != nil {
				body = t.stream.update(tr.md, sanitize)
			} else {
				body = tr.renderLive(t, seg.text)
			}
			if body == "" && t.stream != nil && t.reasoning == "" {
				body = "  " + tr.theme.Dim.Render("…")
			}
			if body != "" {
				parts = append(parts, body)
			}
		case seg.dim && t.stream != nil:
			parts = append(parts, tr.renderThinking(t))
		case !tr.unfold:
			parts = append(parts, "  "+tr.theme.Fold.Render("▸ "+seg.title+" (Ctrl+O shows them)"))
		default:
			body := tr.md.render(sanitize(seg.text))
			if seg.dim {
				body = tr.renderDim(seg.text)
			}
			parts = append(parts, "  "+tr.theme.Fold.Render("▾ "+seg.title+" (Ctrl+O hides them)"), body)
		}
	}
	return strings.Join(parts, "\n")
}

// renderLive renders an answer's text as markdown, the part outside the
// live window dimmed (plain text) with a cut marker before the rest.
func (tr *transcript) renderLive(t *turn, text string) string {
	dimmed := func(s string) string {
		return indent(tr.theme.Trimmed.Render(ansi.Wrap(sanitize(strings.TrimRight(s, "\n")), tr.width-2, "")), "  ")
	}
	switch liveState(t) {
	case "trimmed":
		return dimmed(text)
	case "cut":
		at := min(max(t.span.CutAt, 0), len(text))
		out := ""
		if strings.TrimSpace(text[:at]) != "" {
			out = dimmed(text[:at]) + "\n"
		}
		return out + tr.cutMark(t, false) + "\n" + tr.md.render(sanitize(text[at:]))
	}
	return tr.md.render(sanitize(text))
}

func indent(s, pad string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n")
}
