package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"mlxchat/engine"
	"mlxchat/themes"
)

// fakeEngine records requests; tests deliver events by calling Update with
// eventsMsg directly, so nothing here depends on timing.
type fakeEngine struct {
	mu   sync.Mutex
	reqs []engine.Request
	ids  []engine.RequestID
	next engine.RequestID
	ch   chan engine.Event
}

func newFakeEngine() *fakeEngine { return &fakeEngine{ch: make(chan engine.Event, 64)} }

func (f *fakeEngine) Submit(r engine.Request) engine.RequestID {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.reqs = append(f.reqs, r)
	f.ids = append(f.ids, f.next)
	return f.next
}

func (f *fakeEngine) Events() <-chan engine.Event { return f.ch }

// requests returns the submitted requests.
func (f *fakeEngine) requests() []engine.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]engine.Request(nil), f.reqs...)
}

// last returns the last request of type T and its id.
func lastOf[T engine.Request](t *testing.T, f *fakeEngine) (T, engine.RequestID) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.reqs) - 1; i >= 0; i-- {
		if r, ok := f.reqs[i].(T); ok {
			return r, f.ids[i]
		}
	}
	var zero T
	t.Fatalf("no %T request submitted; got %#v", zero, f.reqs)
	return zero, 0
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

type testOpt func(*modelConfig)

func newTestModel(t *testing.T, opts ...testOpt) (*model, *fakeEngine) {
	t.Helper()
	fe := newFakeEngine()
	th, err := themes.Get("dark", false)
	if err != nil {
		t.Fatal(err)
	}
	c := modelConfig{
		eng:       fe,
		modelName: "tiny",
		settings:  engine.DefaultSettings(),
		theme:     th,
		profile:   termenv.Ascii,
		stateDir:  t.TempDir(),
		now:       func() time.Time { return t0 },
	}
	for _, o := range opts {
		o(&c)
	}
	m, err := newModel(c)
	if err != nil {
		t.Fatal(err)
	}
	update(m, tea.WindowSizeMsg{Width: 100, Height: 30})
	return m, fe
}

func ready(m *model) {
	events(m, engine.Ready{Info: engine.ModelInfo{Name: "tiny-model", ModelType: "gemma3n", SlidingWindow: 512}})
}

func update(m *model, msg tea.Msg) tea.Cmd {
	_, cmd := m.Update(msg)
	return cmd
}

func events(m *model, evs ...engine.Event) tea.Cmd {
	return update(m, eventsMsg{events: evs})
}

func typeText(m *model, s string) {
	for _, r := range s {
		update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

func press(m *model, k tea.KeyType) tea.Cmd { return update(m, tea.KeyMsg{Type: k}) }

func paste(m *model, s string) {
	update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s), Paste: true})
}

func screen(m *model) string { return stripANSI(m.View()) }

// enter presses Enter and, when that starts a /load, runs its read and
// hands the result back, as bubbletea does.
func enter(m *model) {
	if c := m.handleKey(tea.KeyMsg{Type: tea.KeyEnter}); c != nil {
		if msg, ok := c().(loadedMsg); ok {
			update(m, msg)
			return
		}
	}
	update(m, struct{}{})
}

func hdr(id engine.RequestID, at time.Duration) engine.Header {
	return engine.Header{ID: id, At: t0.Add(at)}
}

// send types a message, presses Enter and returns the Generate id.
func send(t *testing.T, m *model, fe *fakeEngine, text string) (engine.Generate, engine.RequestID) {
	t.Helper()
	typeText(m, text)
	press(m, tea.KeyEnter)
	return lastOf[engine.Generate](t, fe)
}

func TestStreamingTokens(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	g, id := send(t, m, fe, "hello")
	if len(g.Conversation) != 1 || g.Conversation[0] != (engine.Message{Role: "user", Content: "hello"}) {
		t.Fatalf("Generate conversation = %#v", g.Conversation)
	}
	if got := m.ed.value(); got != "" {
		t.Errorf("editor not cleared after send: %q", got)
	}
	events(m,
		engine.PrefillProgress{Header: hdr(id, 0), Chunk: 2, Chunks: 3, TokPerSec: 412},
	)
	if s := screen(m); !strings.Contains(s, "prefill 2/3 chunks · 412 tok/s") {
		t.Errorf("prefill progress missing:\n%s", s)
	}
	cmd := events(m,
		engine.Token{Header: hdr(id, time.Second), Text: "Hello ", Tokens: 1},
		engine.Token{Header: hdr(id, 2*time.Second), Text: "**bold** wor", Tokens: 2},
	)
	if cmd == nil || !m.frameQueued {
		t.Fatal("tokens did not schedule a frame")
	}
	// Tokens are batched: the screen changes on the frame tick, not per token.
	if s := screen(m); strings.Contains(s, "Hello") {
		t.Errorf("answer rendered before the frame tick")
	}
	update(m, frameMsg{})
	s := screen(m)
	if !strings.Contains(s, "Hello bold wor") {
		t.Errorf("streamed text not shown after frame:\n%s", s)
	}
	if strings.Contains(s, "**") {
		t.Errorf("markdown not rendered:\n%s", s)
	}
	if !strings.Contains(s, "decode 1.0 tok/s") {
		t.Errorf("live decode speed missing:\n%s", s)
	}
	events(m, engine.Token{Header: hdr(id, 3*time.Second), Text: "ld.\n\n- one\n- two", Tokens: 5})
	events(m, engine.Stats{Header: hdr(id, 3*time.Second), DecodeTokPerSec: 23.4, MemoryBytes: 3 << 29})
	events(m, engine.Done{Header: hdr(id, 3*time.Second), Reason: engine.DoneStop, Text: "Hello **bold** world.\n\n- one\n- two", Tokens: 5})
	if m.req != nil {
		t.Fatal("generation still active after Done")
	}
	s = screen(m)
	for _, want := range []string{"Hello bold world.", "• one", "decode 23.4 tok/s", "mem 1.5 GiB", "tiny-model"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	// The next turn carries the whole conversation.
	g2, _ := send(t, m, fe, "more")
	want := []engine.Message{
		{Role: "user", Content: "hello"},
		{Role: "assistant", Content: "Hello **bold** world.\n\n- one\n- two"},
		{Role: "user", Content: "more"},
	}
	if len(g2.Conversation) != 3 || g2.Conversation[1] != want[1] || g2.Conversation[2] != want[2] {
		t.Errorf("second Generate conversation = %#v", g2.Conversation)
	}
}

func TestStreamRendersOnlyTail(t *testing.T) {
	md, err := newMarkdown("dark", 60, termenv.Ascii)
	if err != nil {
		t.Fatal(err)
	}
	st := &stream{}
	st.text = "First paragraph."
	st.update(md, sanitize)
	if st.stableEnd != 0 || len(st.stable) != 0 {
		t.Fatalf("unfinished paragraph treated as stable: %d %v", st.stableEnd, st.stable)
	}
	st.text += "\n\nSecond"
	st.update(md, sanitize)
	if len(st.stable) != 1 || !strings.Contains(stripANSI(st.stable[0]), "First paragraph.") {
		t.Fatalf("first paragraph not frozen: %q", st.stable)
	}
	first := st.stable[0]
	st.text += " paragraph\n\n```\ncode\n\nstill code"
	out := stripANSI(st.update(md, sanitize))
	if len(st.stable) != 2 || st.stable[0] != first {
		t.Fatalf("stable blocks changed or not extended: %q", st.stable)
	}
	if !strings.Contains(out, "still code") || !strings.Contains(out, "Second paragraph") {
		t.Errorf("rendering lacks text: %q", out)
	}
	// The blank line inside the open code fence is not a split point.
	if strings.Contains(st.text[:st.stableEnd], "```") {
		t.Errorf("split inside a code fence: stable part %q", st.text[:st.stableEnd])
	}
}

func TestStableSplit(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 0},
		{"abc\n", 0},
		{"abc\n\n", 5},
		{"a\n\nb\n\nc", 6},
		{"```\nx\n\ny", 0},
		{"```\nx\n\n```\n\nz", 12},
		{"~~~\n\n~~~\n\n", 10},
	}
	for _, tc := range tests {
		if got := stableSplit(tc.in); got != tc.want {
			t.Errorf("stableSplit(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestMeterAfterTrims(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	_, id := send(t, m, fe, "long doc")
	cmd := events(m,
		engine.Trim{Header: hdr(id, 0), Dropped: 1607, LiveBefore: 2631, LiveAfter: 1024, Kind: "global", Phase: "prefill"},
		engine.CacheState{Header: hdr(id, 0), Live: 1024, Max: 1024, Seen: 2631, Trimmed: 1607, Window: 512},
	)
	if cmd == nil {
		t.Fatal("trim did not schedule the end of the flash")
	}
	s := screen(m)
	want := "kv ▕██████████▏ 1024/1024 live · 2631 seen · 1607 trimmed · swa 512"
	if !strings.Contains(s, want) {
		t.Errorf("meter: want %q in\n%s", want, s)
	}
	if !strings.Contains(s, "✂ 1607") {
		t.Errorf("trim does not flash:\n%s", s)
	}
	update(m, flashOffMsg{seq: m.st.flash.seq - 1}) // a stale timer does nothing
	if !strings.Contains(screen(m), "✂") {
		t.Error("stale flash timer ended the flash")
	}
	update(m, flashOffMsg{seq: m.st.flash.seq})
	if strings.Contains(screen(m), "✂") {
		t.Error("flash did not end")
	}
	events(m, engine.CacheState{Header: hdr(id, 0), Live: 700, Max: 1024, Seen: 700, Trimmed: 0, Window: 512})
	if s := screen(m); !strings.Contains(s, "kv ▕██████▉   ▏ 700/1024 live · 700 seen · 0 trimmed · swa 512") {
		t.Errorf("partial meter wrong:\n%s", s)
	}
}

func TestMeterBar(t *testing.T) {
	tests := []struct {
		live, max int
		want      string
	}{
		{0, 1024, "          "},
		{1, 1024, "▏         "},
		{512, 1024, "█████     "},
		{650, 1000, "██████▌   "},
		{1024, 1024, "██████████"},
		{5000, 1024, "██████████"},
		{300, 0, "    ∞     "},
	}
	for _, tc := range tests {
		if got := meterBar(tc.live, tc.max, 10); got != tc.want {
			t.Errorf("meterBar(%d, %d) = %q, want %q", tc.live, tc.max, got, tc.want)
		}
	}
	if got := meterPlain(meterState{Live: 300, Seen: 300}); got != "kv ▕    ∞     ▏ 300/∞ live · 300 seen · 0 trimmed" {
		t.Errorf("unlimited meter = %q", got)
	}
}

func TestKVCommand(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	events(m, engine.CacheState{Live: 300, Max: 0, Seen: 300, Window: 512})
	if s := screen(m); !strings.Contains(s, "300/∞ live") {
		t.Errorf("unlimited cache not shown as ∞:\n%s", s)
	}
	typeText(m, "/kv 64")
	press(m, tea.KeyEnter)
	us, id := lastOf[engine.UpdateSettings](t, fe)
	if us.Settings.MaxKV != 64 || us.Settings.PrefillChunk != engine.DefaultPrefillChunk {
		t.Errorf("UpdateSettings = %+v", us.Settings)
	}
	s := screen(m)
	if !strings.Contains(s, "300/64 live") || !strings.Contains(s, "kv cap 64 tokens: the next answer trims the 300 live tokens to it") {
		t.Errorf("/kv 64 not reflected:\n%s", s)
	}
	events(m, engine.SettingsChanged{Header: hdr(id, 0), Settings: us.Settings})
	if m.set.confirmed.MaxKV != 64 {
		t.Errorf("confirmed MaxKV = %d", m.set.confirmed.MaxKV)
	}
	typeText(m, "/kv off")
	press(m, tea.KeyEnter)
	us, id = lastOf[engine.UpdateSettings](t, fe)
	if us.Settings.MaxKV != 0 {
		t.Errorf("/kv off sent MaxKV %d", us.Settings.MaxKV)
	}
	if s := screen(m); !strings.Contains(s, "300/∞ live") {
		t.Errorf("/kv off not shown as ∞:\n%s", s)
	}
	// The engine refuses a setting: the old one comes back.
	events(m, engine.Error{Header: hdr(id, 0), Err: errors.New("max-kv-size: nope")})
	if m.set.cur.MaxKV != 64 || !strings.Contains(screen(m), "settings not changed: max-kv-size: nope") {
		t.Errorf("refused setting not reverted: %d\n%s", m.set.cur.MaxKV, screen(m))
	}
}

func TestBadCommand(t *testing.T) {
	tests := []struct {
		line, want string
	}{
		{"/kv abc", `/kv: expected a number of tokens (0 or "off": no cap) or "bits 32|16|8", got "abc"`},
		{"/kv 3", "/kv: max-kv-size 3: want "}, // the rest is engine.Settings.Validate wording
		{"/temp hot", `/temp: expected a temperature >= 0, got "hot"`},
		{"/theme neon", `/theme: unknown theme "neon"`},
		{"/bogus", "/bogus: unknown command (try /help)"},
		{"/load", "/load: expected a file name"},
		{"/load nowhere", `/load: no file "nowhere"`},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			m, fe := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: 160, Height: 30}) // every error fits one line
			ready(m)
			before := screen(m)
			settings := m.set.cur
			typeText(m, tc.line)
			enter(m)
			if n := len(fe.requests()); n != 0 {
				t.Errorf("bad command submitted %d requests: %#v", n, fe.requests())
			}
			if !reflect.DeepEqual(m.set.cur, settings) {
				t.Errorf("settings changed: %+v", m.set.cur)
			}
			s := screen(m)
			if !strings.Contains(s, "✗ "+tc.want) {
				t.Errorf("want error %q on screen:\n%s", tc.want, s)
			}
			if got := strings.Count(s, "✗"); got != 1 {
				t.Errorf("want one error line, got %d", got)
			}
			// Only the notice line differs: conversation and status are unchanged.
			bl, sl := strings.Split(before, "\n"), strings.Split(s, "\n")
			if len(bl) != len(sl) {
				t.Fatalf("screen height changed %d -> %d", len(bl), len(sl))
			}
			for i := range bl {
				if bl[i] != sl[i] && !strings.Contains(sl[i], "✗") && !strings.Contains(sl[i], tc.line) && !strings.Contains(bl[i], "Message (") {
					t.Errorf("line %d changed: %q -> %q", i, bl[i], sl[i])
				}
			}
			wantRecalled(t, m, tc.line)
		})
	}
}

func TestEscCancelsAndKeepsPartial(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	_, id := send(t, m, fe, "tell me a story")
	events(m, engine.Token{Header: hdr(id, 0), Text: "Once upon", Tokens: 2})
	press(m, tea.KeyEsc)
	c, _ := lastOf[engine.Cancel](t, fe)
	if c.ID != id {
		t.Errorf("Cancel id %d, want %d", c.ID, id)
	}
	press(m, tea.KeyEsc) // a second Esc does not send another Cancel
	n := 0
	for _, r := range fe.requests() {
		if _, ok := r.(engine.Cancel); ok {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d Cancel requests, want 1", n)
	}
	events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled, Text: "Once upon", Tokens: 2})
	s := screen(m)
	if !strings.Contains(s, "Once upon") || !strings.Contains(s, "stopped") {
		t.Errorf("partial answer not kept:\n%s", s)
	}
	g, _ := send(t, m, fe, "go on")
	if len(g.Conversation) != 3 || g.Conversation[1].Content != "Once upon" {
		t.Errorf("partial answer not in the next conversation: %#v", g.Conversation)
	}
}

func TestCancelBeforeAnswerRestoresMessage(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	_, id := send(t, m, fe, "question")
	press(m, tea.KeyEsc)
	events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled})
	if m.ed.value() != "question" {
		t.Errorf("editor = %q, want the message back", m.ed.value())
	}
	if len(m.conversation()) != 0 {
		t.Errorf("conversation not rolled back: %#v", m.conversation())
	}
}

// TestCancelBeforeAnswerKeepsDraft: a pasted question stopped before its
// answer comes back above what was typed meanwhile (with both pastes), and
// sending it sends both intact.
func TestCancelBeforeAnswerKeepsDraft(t *testing.T) {
	doc := strings.Repeat("a long pasted document line\n", 50)
	other := strings.Repeat("another pasted block\n", 60)
	tests := []struct {
		name  string
		event func(id engine.RequestID) engine.Event
		note  string
	}{
		{"Esc", func(id engine.RequestID) engine.Event {
			return engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled}
		}, "your message is back in the editor, above what you typed meanwhile"},
		{"error", func(id engine.RequestID) engine.Event {
			return engine.Error{Header: hdr(id, 0), Err: errors.New("boom")}
		}, "answer failed (your message is back in the editor, above what you typed meanwhile): boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: 160, Height: 30})
			ready(m)
			typeText(m, "Summarize ")
			paste(m, doc)
			press(m, tea.KeyEnter)
			_, id := lastOf[engine.Generate](t, fe)
			typeText(m, "and also ")
			paste(m, other)
			press(m, tea.KeyEsc)
			events(m, tc.event(id))
			want := "Summarize [pasted: ~"
			if v := m.ed.value(); !strings.HasPrefix(v, want) || !strings.Contains(v, "\nand also [pasted") {
				t.Fatalf("editor = %q, want the question, then the draft", v)
			}
			if s := screen(m); !strings.Contains(s, tc.note) {
				t.Fatalf("notice %q missing:\n%s", tc.note, s)
			}
			press(m, tea.KeyEnter)
			g, _ := lastOf[engine.Generate](t, fe)
			if got, want := g.Conversation[len(g.Conversation)-1].Content, "Summarize "+doc+"\nand also "+other; got != want {
				t.Fatalf("resent message differs:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestPasteCollapse(t *testing.T) {
	doc := strings.Repeat("line\twith tab and some text to make it long enough\n", 60) // 3,060 bytes, 61 lines
	tests := []struct {
		name  string
		count TokenCounter
		label string
	}{
		{"estimate", nil, "[pasted: ~765 tokens, 3 KiB]"},
		{"tokenizer", func(s string) (int, error) { return 2631, nil }, "[pasted: 2,631 tokens, 3 KiB]"},
		{"tokenizer fails", func(s string) (int, error) { return 0, errors.New("no") }, "[pasted: ~765 tokens, 3 KiB]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t, func(c *modelConfig) { c.count = tc.count })
			ready(m)
			typeText(m, "Summarize: ")
			paste(m, strings.ReplaceAll(doc, "\n", "\r\n"))
			if got := m.ed.value(); got != "Summarize: "+tc.label {
				t.Fatalf("editor = %q, want the collapsed label %q", got, tc.label)
			}
			if m.ed.ta.LineCount() != 1 {
				t.Errorf("collapsed paste takes %d lines", m.ed.ta.LineCount())
			}
			if s := screen(m); !strings.Contains(s, tc.label) {
				t.Errorf("label not on screen:\n%s", s)
			}
			press(m, tea.KeyEnter)
			g, _ := lastOf[engine.Generate](t, fe)
			if got := g.Conversation[0].Content; got != "Summarize: "+doc {
				t.Errorf("paste not sent intact: got %d bytes, want %d", len(got), len("Summarize: "+doc))
			}
			if s := screen(m); !strings.Contains(s, tc.label) || strings.Contains(s, "with tab") {
				t.Errorf("user turn should show the collapsed block:\n%s", s)
			}
		})
	}
}

func TestPasteShortAndExpand(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	paste(m, "short one")
	if m.ed.value() != "short one" {
		t.Errorf("short paste = %q", m.ed.value())
	}
	m.ed.ta.Reset()
	lines := strings.Repeat("x\n", 9) // 10 lines: collapsed by the line rule
	paste(m, lines)
	if !strings.HasPrefix(m.ed.value(), "[pasted: ") {
		t.Fatalf("9-newline paste not collapsed: %q", m.ed.value())
	}
	press(m, tea.KeyCtrlE)
	if m.ed.value() != lines {
		t.Errorf("Ctrl+E did not expand: %q", m.ed.value())
	}
	press(m, tea.KeyEnter)
	g, _ := lastOf[engine.Generate](t, fe)
	if g.Conversation[0].Content != lines {
		t.Errorf("expanded paste sent as %q", g.Conversation[0].Content)
	}
}

func TestPasteLabel(t *testing.T) {
	tests := []struct {
		tokens int
		est    bool
		bytes  int
		seq    int
		want   string
	}{
		{2631, false, 11 * 1024, 1, "[pasted: 2,631 tokens, 11 KiB]"},
		{2631, true, 10600, 1, "[pasted: ~2,631 tokens, 10 KiB]"},
		{1, false, 3, 1, "[pasted: 1 token, 3 B]"},
		{1234567, false, 5 << 20, 2, "[pasted #2: 1,234,567 tokens, 5.0 MiB]"},
	}
	for _, tc := range tests {
		if got := pasteLabel(tc.tokens, tc.est, tc.bytes, tc.seq); got != tc.want {
			t.Errorf("pasteLabel = %q, want %q", got, tc.want)
		}
	}
}

func TestResize(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	_, id := send(t, m, fe, strings.Repeat("word ", 60))
	events(m, engine.Token{Header: hdr(id, 0), Text: strings.Repeat("answer text ", 80), Tokens: 160})
	events(m, engine.CacheState{Live: 1024, Max: 1024, Seen: 2631, Trimmed: 1607, Window: 512})
	update(m, frameMsg{})
	for _, sz := range []struct{ w, h int }{{40, 12}, {120, 40}, {20, 8}, {80, 24}} {
		update(m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
		update(m, frameMsg{})
		lines := strings.Split(screen(m), "\n")
		if len(lines) != sz.h {
			t.Errorf("%dx%d: view has %d lines", sz.w, sz.h, len(lines))
		}
		for i, l := range lines {
			if w := len([]rune(l)); w > sz.w {
				t.Errorf("%dx%d: line %d is %d wide: %q", sz.w, sz.h, i, w, l)
			}
		}
	}
	if !m.tr.vp.AtBottom() {
		t.Error("streaming view does not follow the bottom after resize")
	}
}

func TestScrollback(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	_, id := send(t, m, fe, "q")
	events(m, engine.Token{Header: hdr(id, 0), Text: strings.Repeat("para\n\n", 60), Tokens: 60})
	update(m, frameMsg{})
	if !m.tr.vp.AtBottom() {
		t.Fatal("not following the stream")
	}
	press(m, tea.KeyPgUp)
	if m.tr.vp.AtBottom() {
		t.Fatal("PgUp did not scroll")
	}
	off := m.tr.vp.YOffset
	events(m, engine.Token{Header: hdr(id, 0), Text: "more\n\n", Tokens: 61})
	update(m, frameMsg{})
	if m.tr.vp.YOffset != off {
		t.Error("new tokens moved a scrolled-up view")
	}
	if !strings.Contains(screen(m), "PgDn") {
		t.Error("no hint that more text is below")
	}
	update(m, tea.MouseMsg{Button: tea.MouseButtonWheelDown, Action: tea.MouseActionPress})
	if m.tr.vp.YOffset <= off {
		t.Error("mouse wheel did not scroll")
	}
	press(m, tea.KeyPgDown)
	press(m, tea.KeyPgDown)
	press(m, tea.KeyPgDown)
	if !m.tr.vp.AtBottom() {
		t.Error("PgDn did not return to the bottom")
	}
}

func TestHistory(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	for _, q := range []string{"first", "second"} {
		_, id := send(t, m, fe, q)
		events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "ok"})
	}
	typeText(m, "draft")
	press(m, tea.KeyUp)
	if m.ed.value() != "second" {
		t.Errorf("Up: %q", m.ed.value())
	}
	press(m, tea.KeyUp)
	press(m, tea.KeyUp) // stays at the oldest
	if m.ed.value() != "first" {
		t.Errorf("Up Up: %q", m.ed.value())
	}
	press(m, tea.KeyDown)
	press(m, tea.KeyDown)
	if m.ed.value() != "draft" {
		t.Errorf("Down back to the draft: %q", m.ed.value())
	}
	// History persists for the next session.
	h, err := loadHistory(m.files.histPath)
	if err != nil || len(h) != 2 || h[1].Text != "second" {
		t.Errorf("history file: %v %#v", err, h)
	}
}

func TestNewlineKeys(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	typeText(m, "a")
	update(m, tea.KeyMsg{Type: tea.KeyEnter, Alt: true})
	typeText(m, "b")
	press(m, tea.KeyCtrlJ)
	typeText(m, "c")
	if m.ed.value() != "a\nb\nc" {
		t.Fatalf("editor = %q", m.ed.value())
	}
	if len(fe.requests()) != 0 {
		t.Fatal("newline keys sent the message")
	}
	press(m, tea.KeyEnter)
	g, _ := lastOf[engine.Generate](t, fe)
	if g.Conversation[0].Content != "a\nb\nc" {
		t.Errorf("sent %q", g.Conversation[0].Content)
	}
}

func TestCtrlCTwiceQuits(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	_, id := send(t, m, fe, "q")
	press(m, tea.KeyCtrlC)
	if m.phase == phaseQuit {
		t.Fatal("one Ctrl+C quit")
	}
	if c, _ := lastOf[engine.Cancel](t, fe); c.ID != id {
		t.Error("first Ctrl+C did not stop the answer")
	}
	if !strings.Contains(screen(m), quitHint) {
		t.Error("no hint after the first Ctrl+C")
	}
	update(m, quitDisarm{seq: m.quitArm.seq})
	press(m, tea.KeyCtrlC)
	if m.phase == phaseQuit {
		t.Fatal("Ctrl+C after the window expired quit")
	}
	typeText(m, "x") // any other key disarms
	press(m, tea.KeyCtrlC)
	if m.phase == phaseQuit {
		t.Fatal("Ctrl+C, key, Ctrl+C quit")
	}
	cmd := press(m, tea.KeyCtrlC)
	if !(m.phase == phaseQuit) || cmd == nil {
		t.Fatal("Ctrl+C twice did not quit")
	}
}

// TestCtrlCHintSurvivesTheStop: the first Ctrl+C during an answer stops
// it, and the stop's notice, which comes at once, keeps saying that a
// second press quits: QA saw "stopped; the partial answer is kept" alone
// 0.3 s after the first press, the hint gone. The hint goes with the
// arm's window; a stop by Esc has no hint.
func TestCtrlCHintSurvivesTheStop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stop     func(m *model)
		end      func(m *model, id engine.RequestID)
		want     string
		wantHint bool
	}{
		{"Ctrl+C, the answer stopped", func(m *model) { press(m, tea.KeyCtrlC) }, func(m *model, id engine.RequestID) {
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled, Text: "partial"})
		}, "stopped; the partial answer is kept", true},
		{"Ctrl+C, nothing streamed yet", func(m *model) { press(m, tea.KeyCtrlC) }, func(m *model, id engine.RequestID) {
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled})
		}, "stopped before the answer began; your message is back in the editor", true},
		{"Esc", func(m *model) { press(m, tea.KeyEsc) }, func(m *model, id engine.RequestID) {
			events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneCancelled, Text: "partial"})
		}, "stopped; the partial answer is kept", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: 200, Height: 30})
			ready(m)
			_, id := send(t, m, fe, "q")
			tc.stop(m)
			tc.end(m, id)
			n := noticeOf(screen(m))
			if !strings.Contains(n, tc.want) || strings.Contains(n, quitHint) != tc.wantHint {
				t.Fatalf("notice %q: want %q, with the quit hint: %v", n, tc.want, tc.wantHint)
			}
			if tc.wantHint {
				update(m, quitDisarm{seq: m.quitArm.seq})
				if n := noticeOf(screen(m)); !strings.Contains(n, tc.want) || strings.Contains(n, quitHint) {
					t.Errorf("after the window: notice %q, want %q without the quit hint", n, tc.want)
				}
				press(m, tea.KeyCtrlC)
				if m.phase == phaseQuit {
					t.Fatal("a Ctrl+C after the window quit")
				}
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	m, _ := newTestModel(t)
	ready(m)
	typeText(m, "/the")
	press(m, tea.KeyTab)
	if m.ed.value() != "/theme " {
		t.Fatalf("Tab: %q", m.ed.value())
	}
	typeText(m, "h")
	press(m, tea.KeyTab)
	if m.ed.value() != "/theme high-contrast" {
		t.Fatalf("Tab on theme: %q", m.ed.value())
	}
	m.ed.ta.Reset()
	typeText(m, "/t")
	press(m, tea.KeyTab)
	if s := screen(m); !strings.Contains(s, "/temp  /topp  /topk  /think  /theme") {
		t.Errorf("candidates not shown:\n%s", s)
	}
}

func TestHelpStatsModelTheme(t *testing.T) {
	m, _ := newTestModel(t)
	update(m, tea.WindowSizeMsg{Width: 100, Height: 60})
	ready(m)
	for _, c := range []struct{ cmd, want string }{
		{"/help", "/kv N|off"},
		{"/stats", "no answer yet"},
		{"/model", "type    gemma3n"},
		{"/theme light", "theme light"},
	} {
		typeText(m, c.cmd)
		press(m, tea.KeyEnter)
		if s := screen(m); !strings.Contains(s, c.want) {
			t.Errorf("%s: %q not on screen:\n%s", c.cmd, c.want, s)
		}
	}
	if m.theme.Name != "light" || m.tr.md.style != "light" {
		t.Errorf("theme not switched: %s / %s", m.theme.Name, m.tr.md.style)
	}
}

func TestLoadingView(t *testing.T) {
	m, fe := newTestModel(t)
	events(m, engine.ModelLoading{Stage: "downloading model.safetensors", Done: 50 << 20, Total: 100 << 20})
	s := screen(m)
	for _, want := range []string{"loading tiny", "downloading model.safetensors", "50%", "50.0 MiB / 100.0 MiB"} {
		if !strings.Contains(s, want) {
			t.Errorf("loading view lacks %q:\n%s", want, s)
		}
	}
	typeText(m, "early") // the editor takes input while the model loads
	press(m, tea.KeyEnter)
	if m.ed.value() != "" || len(m.queued) == 0 || len(fe.requests()) != 0 {
		t.Errorf("message sent or lost while loading: %q %v", m.ed.value(), fe.requests())
	}
	if s := screen(m); !strings.Contains(s, "queued: your message is sent when the model is ready") || len(strings.Split(s, "\n")) != 30 {
		t.Errorf("loading screen:\n%s", s)
	}
	events(m, engine.ModelLoading{Stage: "mapping weights"})
	if s := screen(m); !strings.Contains(s, "mapping weights") {
		t.Errorf("unknown-total stage missing:\n%s", s)
	}
	ready(m)
	if s := screen(m); !strings.Contains(s, "early") || strings.Contains(s, "loading tiny") {
		t.Errorf("chat not shown after Ready:\n%s", s)
	}
	if g, _ := lastOf[engine.Generate](t, fe); g.Conversation[0].Content != "early" {
		t.Errorf("message typed while loading sent as %q", g.Conversation[0].Content)
	}
}

func TestLoadErrorEndsRun(t *testing.T) {
	m, _ := newTestModel(t)
	cmd := events(m, engine.Error{Err: errors.New("loading model: no config.json in /x")})
	if m.fatal == nil || !strings.Contains(m.fatal.Error(), "no config.json") || cmd == nil {
		t.Fatalf("load error not fatal: %v", m.fatal)
	}
}

func TestGenerationError(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	_, id := send(t, m, fe, "q")
	events(m, engine.Token{Header: hdr(id, 0), Text: "half", Tokens: 1})
	events(m, engine.Error{Header: hdr(id, 0), Err: errors.New("shape mismatch"), CacheReset: true, Text: "half"})
	s := screen(m)
	if !strings.Contains(s, "answer failed: shape mismatch") || !strings.Contains(s, "half") {
		t.Errorf("error not shown with the partial answer:\n%s", s)
	}
	if m.req != nil {
		t.Error("still generating")
	}
}

func readConv(t *testing.T, path string) conversationFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c conversationFile
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAutosave(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	if p := m.files.saver.currentPath(); p != "" {
		t.Fatalf("autosave file %s named before anything was saved", p)
	}
	doc := strings.Repeat("a long pasted document\n", 100)
	paste(m, doc)
	path := m.files.saver.currentPath()
	if filepath.Dir(path) != filepath.Join(m.files.stateDir, "conversations") {
		t.Fatalf("autosave path %s", path)
	}
	c := readConv(t, path) // a paste is saved at once
	if len(c.DraftPastes) != 1 || c.DraftPastes[0].Content != doc {
		t.Fatalf("pasted draft not saved: %#v", c)
	}
	press(m, tea.KeyEnter)
	_, id := lastOf[engine.Generate](t, fe)
	c = readConv(t, path) // the user message is saved before the answer
	if len(c.Messages) != 1 || c.Messages[0].Content != doc || c.Draft != "" {
		t.Fatalf("user message not saved: %#v", c)
	}
	events(m, engine.Token{Header: hdr(id, 0), Text: "Sum", Tokens: 1})
	events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "Summary."})
	c = readConv(t, path)
	if len(c.Messages) != 2 || c.Messages[1] != (savedMessage{Role: "assistant", Content: "Summary."}) {
		t.Fatalf("answer not saved: %#v", c.Messages)
	}
	// A draft typed afterwards reaches the disk on the save tick or at exit.
	typeText(m, "unsent")
	m.finish()
	if c = readConv(t, path); c.Draft != "unsent" {
		t.Errorf("draft not saved at exit: %q", c.Draft)
	}
}

func TestSaveLoadClear(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	typeText(m, "/system Be brief.")
	press(m, tea.KeyEnter)
	_, id := send(t, m, fe, "hi")
	events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "Hello."})
	typeText(m, "/save mine")
	press(m, tea.KeyEnter)
	saved := filepath.Join(m.files.stateDir, "conversations", "mine.json")
	if !strings.Contains(screen(m), "saved to "+saved) {
		t.Fatalf("/save notice:\n%s", screen(m))
	}
	typeText(m, "/clear")
	press(m, tea.KeyEnter)
	if _, ok := fe.requests()[len(fe.requests())-1].(engine.Reset); !ok {
		t.Error("/clear did not reset the engine")
	}
	if len(m.conversation()) != 0 {
		t.Error("/clear kept the conversation")
	}
	typeText(m, "/system")
	press(m, tea.KeyEnter)
	typeText(m, "/load mine")
	enter(m)
	conv := m.conversation()
	if len(conv) != 2 || conv[1].Content != "Hello." || m.set.cur.System != "Be brief." {
		t.Fatalf("/load: %#v system %q", conv, m.set.cur.System)
	}
	us, _ := lastOf[engine.UpdateSettings](t, fe)
	if us.Settings.System != "Be brief." {
		t.Errorf("loaded system prompt not sent: %+v", us.Settings)
	}
	if m.files.saver.currentPath() != saved {
		t.Errorf("autosave after /load of a state file goes to %s", m.files.saver.currentPath())
	}
}

func TestSendWhileGenerating(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	send(t, m, fe, "one")
	n := len(fe.requests())
	typeText(m, "two")
	press(m, tea.KeyEnter)
	if len(fe.requests()) != n {
		t.Error("second message sent while answering")
	}
	if m.ed.value() != "" || len(m.queued) != 1 || m.queued[0].text != "two" || !strings.Contains(screen(m), "queued: your message is sent when the answer ends") {
		t.Errorf("second message not queued with a notice: editor %q", m.ed.value())
	}
}

func TestEngineClosed(t *testing.T) {
	m, _ := newTestModel(t)
	ready(m)
	cmd := update(m, eventsMsg{closed: true})
	if cmd == nil || m.fatal == nil {
		t.Fatal("closed event channel did not end the UI with an error")
	}
}

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain\ntext", "plain\ntext"},
		{"a\x1b[2Jb", "a␛[2Jb"},
		{"cr\rlf", "cr␍lf"},
		{"tab\there", "tab    here"},
		{"del\x7f c1\u009b bidi\u202e", "del␡ c1\uFFFD bidi\uFFFD"},
		{"ünïcödé 日本", "ünïcödé 日本"},
	}
	for _, tc := range tests {
		if got := sanitize(tc.in); got != tc.want {
			t.Errorf("sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestControlBytesInAnswer(t *testing.T) {
	m, fe := newTestModel(t)
	ready(m)
	_, id := send(t, m, fe, "q")
	events(m, engine.Token{Header: hdr(id, 0), Text: "a\x1b[2Jb\rc\x07", Tokens: 3})
	update(m, frameMsg{})
	raw := m.View()
	if strings.Contains(raw, "\x1b[2J") || strings.Contains(raw, "\r") || strings.Contains(raw, "\x07") {
		t.Errorf("control bytes from the model reach the terminal: %q", raw)
	}
	if s := screen(m); !strings.Contains(s, "a␛[2Jb␍c␇") {
		t.Errorf("control bytes not shown as pictures:\n%s", s)
	}
}

// TestStatsAfterContinuedTurn: /stats tells how much of the reused prompt
// had already been trimmed, and the meter's trimmed count.
func TestStatsAfterContinuedTurn(t *testing.T) {
	tests := []struct {
		name  string
		stats engine.Stats
		want  []string
		not   []string
	}{
		{"continued after trims", engine.Stats{PromptTokens: 300, ReusedTokens: 280, ReusedTrimmed: 220, PrefillTokens: 20},
			[]string{"prompt 300 tokens (280 reused of which 220 were already trimmed, 20 prefilled)", "220 of 300 tokens seen are no longer attended"}, nil},
		{"plain reuse", engine.Stats{PromptTokens: 50, ReusedTokens: 30, PrefillTokens: 20},
			[]string{"prompt 50 tokens (30 reused, 20 prefilled)"}, []string{"already trimmed", "started over"}},
		{"restarted after an edit", engine.Stats{PromptTokens: 50, PrefillTokens: 50, CacheRestart: engine.RestartHistory},
			[]string{"prompt 50 tokens (0 reused, 50 prefilled)", "the cache started over: the conversation no longer starts with"}, nil},
		{"restarted after /kv off", engine.Stats{PromptTokens: 50, PrefillTokens: 50, CacheRestart: engine.RestartCapRaised},
			[]string{"the cache started over: the kv cap was raised or turned off"}, nil},
		{"rewound after the answer re-tokenized", engine.Stats{PromptTokens: 80, ReusedTokens: 60, PrefillTokens: 20, RewoundTokens: 7, CacheRewind: engine.RewindDiverged},
			[]string{"the cache was rewound by 7 tokens: the conversation differs"}, []string{"started over"}},
		{"restarted beyond rewind reach", engine.Stats{PromptTokens: 900, PrefillTokens: 900, CacheRestart: engine.RestartBeyondRewind},
			[]string{"the cache started over: the conversation changed further back than the cache can rewind"}, []string{"rewound by"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: 140, Height: 60})
			ready(m)
			_, id := send(t, m, fe, "hello")
			st := tc.stats
			st.Header = hdr(id, time.Second)
			events(m,
				engine.CacheState{Header: hdr(id, time.Second), Live: 64, Max: 64, Seen: st.PromptTokens, Trimmed: st.ReusedTrimmed},
				st,
				engine.Done{Header: hdr(id, time.Second), Reason: engine.DoneStop, Text: "ok"})
			typeText(m, "/stats")
			press(m, tea.KeyEnter)
			s := screen(m)
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("%q not on screen:\n%s", w, s)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(s, w) {
					t.Errorf("%q on screen:\n%s", w, s)
				}
			}
		})
	}
}

// TestMarkdownKeepsAngleBrackets: text that looks like raw HTML is shown as
// written (glamour would drop it), while code and autolinks keep their
// markdown meaning.
func TestMarkdownKeepsAngleBrackets(t *testing.T) {
	md, err := newMarkdown("dark", 80, termenv.Ascii)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, in, want string
	}{
		{"include", "#include <vector> is C++", "#include <vector> is C++"},
		{"tags", "wrap it in <b>bold</b> please", "wrap it in <b>bold</b> please"},
		{"closing and comment", "</div> and <!-- note -->", "</div> and <!-- note -->"},
		{"comparison", "1 < 2 and a<b", "1 < 2 and a<b"},
		{"code span", "use `<div>` here", "use  <div>  here"},
		{"double-backtick span", "``a `<x>` b``", "a `<x>` b"},
		{"fenced code", "```\n<vector>\n```", "<vector>"},
		{"indented code", "text\n\n    <tag> in code\n\nafter <x>", "text\n\n    <tag> in code\n\n  after <x>"},
		{"escaped by the author", `a \<div\> b`, "a <div> b"},
		{"autolink", "see <https://example.org> ok", "see https://example.org ok"},
		{"list item", "- item <a>", "• item <a>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := stripANSI(md.render(tc.in))
			if strings.TrimSpace(got) != strings.TrimSpace(tc.want) {
				t.Fatalf("render(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestStatusKeepsPrefillProgress: with big counts on a narrow terminal the
// meter gets compact instead of hiding the prefill progress.
func TestStatusKeepsPrefillProgress(t *testing.T) {
	tests := []struct {
		width     int
		want, not []string
	}{
		{140, []string{"64/64 live · 2096 seen · 2032 trimmed · swa 8", "prefill 131/45214 chunks"}, nil},
		{100, []string{"64/64 live · 2096 seen · 2032 trimmed", "prefill 131/45214 chunks"}, []string{"swa 8"}},
		{86, []string{"64/64 live · 2032 trimmed", "prefill 131/45214 chunks"}, []string{"seen"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.width), func(t *testing.T) {
			m, fe := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: tc.width, Height: 20})
			ready(m)
			_, id := send(t, m, fe, "long")
			events(m,
				engine.PrefillProgress{Header: hdr(id, time.Second), Chunk: 131, Chunks: 45214, Tokens: 2096, Total: 723420, TokPerSec: 1900},
				engine.CacheState{Header: hdr(id, time.Second), Live: 64, Max: 64, Seen: 2096, Trimmed: 2032, Window: 8})
			lines := strings.Split(screen(m), "\n")
			status := lines[len(lines)-1]
			for _, w := range tc.want {
				if !strings.Contains(status, w) {
					t.Errorf("status %q lacks %q", status, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(status, w) {
					t.Errorf("status %q has %q", status, w)
				}
			}
		})
	}
	if got := meterTextAt(meterState{Live: 64, Max: 64, Seen: 723420, Trimmed: 2_500_000}, 2); got != "64/64 live · 723.4k seen · 2.5M trimmed" {
		t.Errorf("compact meter = %q", got)
	}
}
