package ui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

// filterAll runs the filter over input split into reads of the given
// sizes (cycling) and returns what bubbletea would get.
func filterAll(p *pasteInput, input string, sizes ...int) string {
	f := pasteFilter{p: p}
	var out []byte
	b := []byte(input)
	for i := 0; len(b) > 0; i++ {
		n := min(len(b), sizes[i%len(sizes)])
		out = append(out, f.feed(b[:n])...)
		b = b[n:]
	}
	return string(append(out, f.flush()...))
}

// standIns splits the stream the filter gave bubbletea into its pieces,
// "" for each stand-in, and the paste texts take swaps them for.
func standIns(t *testing.T, p *pasteInput, got string) (pieces, texts []string) {
	t.Helper()
	rest := got
	for {
		i := strings.Index(rest, pasteStart)
		if i < 0 {
			if rest != "" {
				pieces = append(pieces, rest)
			}
			return pieces, texts
		}
		if i > 0 {
			pieces = append(pieces, rest[:i])
		}
		j := strings.Index(rest, pasteEnd)
		id := rest[i+len(pasteStart) : j]
		pt, ok := p.take(id)
		if !ok {
			t.Fatalf("stand-in %q unknown in %q", id, got)
		}
		texts = append(texts, pt.text)
		pieces = append(pieces, "")
		rest = rest[j+len(pasteEnd):]
	}
}

// TestPasteFilter: every way of splitting the input into reads gives the
// same stream, with each paste replaced by a stand-in that take swaps for
// the exact text (invalid UTF-8 bytes written \xNN), keys before and after
// in their order.
func TestPasteFilter(t *testing.T) {
	tests := []struct {
		name, in   string
		wantOut    []string // stream pieces; "" marks each stand-in
		wantPastes []string
	}{
		{"keys only", "hello\x1b[Aworld", []string{"hello\x1b[Aworld"}, nil},
		{"a lone Esc", "\x1b", []string{"\x1b"}, nil},
		{"one paste", "ab\x1b[200~pasted\ntext\x1b[201~cd", []string{"ab", "", "cd"}, []string{"pasted\ntext"}},
		{"two pastes", "\x1b[200~one\x1b[201~x\x1b[200~two\x1b[201~", []string{"", "x", ""}, []string{"one", "two"}},
		{"escape codes inside a paste", "\x1b[200~a\x1b[Ab\x1b[20\x1b[201~\r", []string{"", "\r"}, []string{"a\x1b[Ab\x1b[20"}},
		{"invalid UTF-8 pasted", "\x1b[200~ok \xff\xfe é\x1b[201~", []string{""}, []string{`ok \xff\xfe é`}},
		{"invalid UTF-8 typed", "a\xffb\xc3", []string{`a\xffb\xc3`}, nil},
		{"UTF-8 typed", "héllo ✓", []string{"héllo ✓"}, nil},
		{"a paste that never ends", "x\x1b[200~cut off", []string{"x", ""}, []string{"cut off"}},
	}
	for _, tc := range tests {
		for _, sizes := range [][]int{{1 << 20}, {1}, {2}, {3}, {5}, {7, 1}, {4, 9, 2}} {
			p := newPasteInput()
			pieces, texts := standIns(t, p, filterAll(p, tc.in, sizes...))
			if strings.Join(pieces, "|") != strings.Join(tc.wantOut, "|") || strings.Join(texts, "|") != strings.Join(tc.wantPastes, "|") {
				t.Errorf("%s, reads of %v: stream %q pastes %q, want %q and %q", tc.name, sizes, pieces, texts, tc.wantOut, tc.wantPastes)
			}
		}
	}
	if _, ok := (*pasteInput)(nil).take("mlxchat-paste:x:1"); ok {
		t.Error("a nil filter took a paste")
	}
	if _, ok := newPasteInput().take("mlxchat-paste:0000:1"); ok {
		t.Error("a guessed stand-in was taken")
	}
}

// TestBigPasteThroughBubbletea pastes 10 MB through the real bubbletea
// input loop: it arrives whole as one collapsed block, in the right place
// between typed keys, and is sent exactly. (Through bubbletea's own reader
// a 10 MB paste took about 80 s: BenchmarkPasteInput has the figures.)
func TestBigPasteThroughBubbletea(t *testing.T) {
	fe := newFakeEngine()
	inR, inW := io.Pipe()
	defer inW.Close()
	out := &syncBuffer{}
	errc := make(chan error, 1)
	go func() {
		errc <- Run(context.Background(), Options{
			Engine: fe, ModelName: "tiny", Settings: engine.DefaultSettings(),
			CountTokens: func(s string) (int, error) { return strings.Count(s, " ") + 1, nil },
			ConfigPath:  writeConfig(t, `{}`), StateDir: t.TempDir(),
			NoColor: true, Input: inR, Output: out, Inline: true,
		})
	}()
	fe.ch <- engine.Ready{Info: engine.ModelInfo{Name: "tiny"}}
	waitFor(t, "the chat screen", func() bool { return strings.Contains(out.String(), "tiny is ready") })
	doc := longDocument(10 << 20)
	go func() {
		io.WriteString(inW, "before ")
		io.WriteString(inW, pasteStart+doc+pasteEnd)
		io.WriteString(inW, " after\r")
	}()
	deadline := time.Now().Add(60 * time.Second)
	var g engine.Generate
	for {
		if reqs := fe.requests(); len(reqs) > 0 {
			if gg, ok := reqs[len(reqs)-1].(engine.Generate); ok {
				g = gg
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 10 MiB paste was not sent within a minute; screen tail:\n%s", tail(out.String(), 1500))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := g.Conversation[0].Content; got != "before "+doc+" after" {
		t.Errorf("sent %d bytes, want the %d-byte paste between the typed words", len(got), len(doc)+13)
	}
	inW.Close()
}

// TestLargePasteCountsOffTheUILoop: a paste from asyncCountBytes on gets a
// provisional label at once and progress on the notice line; the count
// runs in a command, and its result swaps the label in the editor (cursor
// kept), in a message sent meanwhile, and in the history.
func TestLargePasteCountsOffTheUILoop(t *testing.T) {
	release := make(chan struct{})
	counter := func(s string) (int, error) { <-release; return 4242, nil }
	m, fe := newTestModel(t, func(c *modelConfig) { c.count = counter })
	ready(m)
	typeText(m, "see ")
	doc := strings.Repeat("a paragraph of a long document\n", asyncCountBytes/30+1)
	cmd := m.handleKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(doc), Paste: true})
	typeText(m, " please")
	v := m.ed.value()
	if !strings.Contains(v, "counting tokens…]") || !strings.HasSuffix(v, " please") {
		t.Fatalf("editor %q, want the provisional label", v)
	}
	size := formatBytes(int64(len(doc)))
	if s := noticeOf(screen(m)); !strings.Contains(s, "counting the tokens of the "+size+" paste") {
		t.Errorf("no counting progress: %q", s)
	}
	// The command is a batch: the count and the progress tick.
	var counted pasteCountedMsg
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range cmd().(tea.BatchMsg) {
			if c == nil {
				continue
			}
			if msg, ok := c().(pasteCountedMsg); ok {
				counted = msg
			}
		}
	}()
	press(m, tea.KeyLeft) // the cursor sits before "e" of "please"
	_, _ = send(t, m, fe, "")
	close(release)
	<-done
	update(m, counted)
	update(m, frameMsg{})
	g, _ := lastOf[engine.Generate](t, fe)
	if g.Conversation[0].Content != "see "+doc+" please" {
		t.Errorf("sent %q…", g.Conversation[0].Content[:20])
	}
	want := "[pasted: 4,242 tokens, " + size + "]"
	if s := screen(m); !strings.Contains(s, want) || strings.Contains(s, "counting tokens…") {
		t.Errorf("sent message not relabelled to %q:\n%s", want, s)
	}
	if h := m.ed.history[len(m.ed.history)-1]; h.Text != "see "+want+" please" || h.Pastes[0].Label != want {
		t.Errorf("history %+v", h)
	}
}

// TestReplaceInEditorKeepsCursor relabels a paste while the cursor is
// elsewhere: it stays at the same place in the text.
func TestReplaceInEditorKeepsCursor(t *testing.T) {
	m, _ := newTestModel(t)
	ready(m)
	typeText(m, "first line\nab [old] cd\nlast")
	// Put the cursor after "cd" on the middle line.
	press(m, tea.KeyUp)
	update(m, tea.KeyMsg{Type: tea.KeyEnd})
	m.ed.replace("[old]", "[a longer label]")
	typeText(m, "X")
	if got := m.ed.value(); got != "first line\nab [a longer label] cdX\nlast" {
		t.Errorf("editor %q", got)
	}
}

// BenchmarkPasteInput feeds a 1, 2 and 10 MB bracketed paste through
// bubbletea's input loop with pasteInput in front (as Run does) and
// without (bubbletea reading the bytes itself), and reports MB/s.
func BenchmarkPasteInput(b *testing.B) {
	for _, mb := range []int{1, 2, 10} {
		for _, filtered := range []bool{true, false} {
			if !filtered && mb > 2 {
				continue // ~80 s for 10 MiB
			}
			name := "filtered"
			if !filtered {
				name = "bubbletea"
			}
			b.Run(fmt.Sprintf("%s/%dMB", name, mb), func(b *testing.B) {
				doc := []byte(pasteStart + longDocument(mb<<20) + pasteEnd)
				b.SetBytes(int64(len(doc)))
				for range b.N {
					got := make(chan int, 1)
					var in io.Reader = bytes.NewReader(doc)
					pi := newPasteInput()
					if filtered {
						pr, pw := io.Pipe()
						go pi.copy(pw, in)
						in = pr
					}
					p := tea.NewProgram(pasteWaiter{got: got, pi: pi}, tea.WithInput(in), tea.WithOutput(io.Discard))
					go p.Run()
					if n := <-got; n < mb<<20 {
						b.Fatalf("paste of %d bytes", n)
					}
					p.Kill()
				}
			})
		}
	}
}

// pasteWaiter is a bubbletea model that reports the size of the first paste.
type pasteWaiter struct {
	got chan int
	pi  *pasteInput
}

func (w pasteWaiter) Init() tea.Cmd { return nil }
func (w pasteWaiter) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok && k.Paste {
		s := string(k.Runes)
		if t, ok := w.pi.take(s); ok {
			s = t.text
		}
		w.got <- len(s)
		return w, tea.Quit
	}
	return w, nil
}
func (w pasteWaiter) View() string { return "" }

// TestLongPasteNoticeAndPrefillAtOnce: a counted paste's notice says the
// count once, in binary units ("paste counted: 4,242 tokens, 300 KiB");
// sending it shows its tokenizing on the status line at once, before the
// engine's first progress, which then gives "prefill 0/N chunks".
func TestLongPasteNoticeAndPrefillAtOnce(t *testing.T) {
	m, fe := newTestModel(t, func(c *modelConfig) { c.count = func(string) (int, error) { return 4242, nil } })
	update(m, tea.WindowSizeMsg{Width: 160, Height: 30})
	ready(m)
	doc := strings.Repeat("a paragraph of a long document.\n", 300<<10/32)
	run(m, m.handleKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(doc), Paste: true}))
	if n := noticeOf(screen(m)); n != "• paste counted: 4,242 tokens, 300 KiB" {
		t.Errorf("notice %q", n)
	}
	press(m, tea.KeyEnter)
	_, id := lastOf[engine.Generate](t, fe)
	if s := screen(m); !strings.Contains(s, "prefill · tokenizing 300 KiB… │ Esc stop") {
		t.Errorf("no prefill progress before the engine's first:\n%s", s)
	}
	events(m, engine.PrefillProgress{Header: hdr(id, 0), Chunk: 0, Chunks: 600, Total: 4242})
	if s := screen(m); !strings.Contains(s, "prefill 0/600 chunks") || strings.Contains(s, "tokenizing") {
		t.Errorf("the engine's progress does not replace it:\n%s", s)
	}
}
