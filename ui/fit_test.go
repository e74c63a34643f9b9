package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
	"mlxchat/tensor/cpu"
)

func withMaxKV(n int) testOpt {
	return func(c *modelConfig) { c.settings.MaxKV = n }
}

func countOf[T engine.Request](fe *fakeEngine) int {
	n := 0
	for _, r := range fe.requests() {
		if _, ok := r.(T); ok {
			n++
		}
	}
	return n
}

// notFit is the Fit of a 765-token paste under a 64-token cap.
func notFit(id engine.RequestID) engine.Fit {
	return engine.Fit{Header: hdr(id, 0), MessageTokens: 765, PromptTokens: 790, MaxKV: 64, LiveCap: 64, Sink: 4, Window: 60,
		Visible: 40, KVBytesPerToken: 12 << 10, SuggestedMaxKV: 1024, SuggestedKVBytes: 12 << 20}
}

// TestWhichMessagesAreChecked: a message is checked before it is sent
// when its bytes may not fit the live window: the cap, or with no cap the
// model's context length; with neither nothing can overflow.
func TestWhichMessagesAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name           string
		maxKV, context int
		bytes          int
		checked        bool
	}{
		{"short under a cap", 64, 0, 20, false},
		{"long under a cap", 64, 0, 2000, true},
		// A cap above the context is taken off at Ready
		// (dropCapAboveContext): the context is the window.
		{"long, cap above the context", 4096, 512, 2000, true},
		{"long, no cap, no context known", 0, 0, 2000, false},
		{"long, no cap, small context", 0, 512, 2000, true},
		{"long, no cap, large context", 0, 32768, 2000, false},
		{"10 MB, no cap, the context of a real model", 0, 32768, 10 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t, withMaxKV(tc.maxKV))
			events(m, engine.Ready{Info: engine.ModelInfo{Name: "tiny-model", ModelType: "gemma3n", ContextLength: tc.context}})
			paste(m, strings.Repeat("w", tc.bytes))
			press(m, tea.KeyEnter)
			if got := countOf[engine.FitCheck](fe) == 1; got != tc.checked {
				t.Fatalf("fit checked %v, want %v", got, tc.checked)
			}
			if got := countOf[engine.Generate](fe) == 1; got == tc.checked {
				t.Fatalf("sent at once %v, want %v", got, !tc.checked)
			}
		})
	}
}

// TestFitNoticeWithoutACap: with no cap the notice gives the model's
// context as the live window, with the same choices, and offers no /kv
// when the engine suggests none (the context is the model's limit).
func TestFitNoticeWithoutACap(t *testing.T) {
	m, fe := newTestModel(t)
	update(m, tea.WindowSizeMsg{Width: 200, Height: 30})
	events(m, engine.Ready{Info: engine.ModelInfo{Name: "tiny-model", ModelType: "gemma3n", ContextLength: 2048}})
	if !strings.Contains(screen(m), "/2048 live") {
		t.Fatalf("meter without a cap should show the context as the cap:\n%s", screen(m))
	}
	paste(m, strings.Repeat("a line of the document to summarize\n", 300))
	press(m, tea.KeyEnter)
	_, id := lastOf[engine.FitCheck](t, fe)
	events(m, engine.Fit{Header: hdr(id, 0), MessageTokens: 3000, PromptTokens: 3020, LiveCap: 2048, ContextLength: 2048,
		Sink: 4, Window: 2044, Visible: 2024, KVBytesPerToken: 12 << 10})
	want := "✂ paste 3,000 tokens > live window 2,048 (the model's context): the model would see only the last 2,024. Enter sends anyway · /summarize summarizes it in pieces · Esc puts it back in the editor"
	if s := noticeOf(screen(m)); s != want {
		t.Fatalf("notice %q, want %q", s, want)
	}
	if m.held == nil || countOf[engine.Generate](fe) != 0 {
		t.Fatal("the paste over the context was not held")
	}
}

// TestShortMessageNeedsNoFitCheck: a message whose bytes fit in the window
// is sent at once.
func TestShortMessageNeedsNoFitCheck(t *testing.T) {
	m, fe := newTestModel(t, withMaxKV(64))
	ready(m)
	send(t, m, fe, "hello there")
	if n := countOf[engine.FitCheck](fe); n != 0 {
		t.Errorf("%d fit checks for a short message", n)
	}
}

// TestFitCheckHoldsAPasteThatDoesNotFit: the paste is checked, held with
// the numbers, saved, and sent by a second Enter.
func TestFitCheckHoldsAPasteThatDoesNotFit(t *testing.T) {
	doc := strings.Repeat("a line of the document to summarize\n", 85)
	m, fe := newTestModel(t, withMaxKV(64))
	update(m, tea.WindowSizeMsg{Width: 200, Height: 30})
	ready(m)
	paste(m, doc)
	label := m.ed.value()
	press(m, tea.KeyEnter)
	fc, id := lastOf[engine.FitCheck](t, fe)
	if n := len(fc.Conversation); n != 1 || fc.Conversation[0].Content != doc {
		t.Fatalf("FitCheck conversation %d messages, want the paste", n)
	}
	if countOf[engine.Generate](fe) != 0 || m.ed.value() != label {
		t.Fatalf("sent before the fit check answered, or the editor lost the message: %q", m.ed.value())
	}
	press(m, tea.KeyEnter) // Enter while checking does not send
	if countOf[engine.Generate](fe) != 0 || countOf[engine.FitCheck](fe) != 1 {
		t.Fatal("Enter during the check sent or checked again")
	}
	events(m, notFit(id))
	want := "✂ paste 765 tokens > live window 64: the model would see only the last 40. Enter sends anyway · /summarize summarizes it in pieces · /kv 1024 raises the cap (≈ 12.0 MiB of KV)"
	if s := noticeOf(screen(m)); !strings.HasPrefix(s, want) {
		t.Fatalf("notice %q, want %q", s, want)
	}
	if m.held == nil || m.ed.value() != "" || !strings.Contains(screen(m), "Enter sends the held message anyway") {
		t.Fatalf("the message is not held with an empty editor:\n%s", screen(m))
	}
	if countOf[engine.Generate](fe) != 0 {
		t.Fatal("a message that does not fit was sent without a second Enter")
	}
	if c := readConv(t, m.files.saver.currentPath()); len(c.DraftPastes) != 1 || c.DraftPastes[0].Content != doc || c.Draft != label {
		t.Fatalf("held message not saved as the draft: %q, %d pastes", c.Draft, len(c.DraftPastes))
	}
	press(m, tea.KeyEnter)
	g, _ := lastOf[engine.Generate](t, fe)
	if got := g.Conversation[len(g.Conversation)-1].Content; got != doc {
		t.Fatalf("second Enter sent %d bytes, want the paste", len(got))
	}
	if m.held != nil || countOf[engine.FitCheck](fe) != 1 {
		t.Error("sending anyway kept the message held or checked it again")
	}
}

// TestFitCheckSendsWhatFits: a long message that fits is sent as soon as
// the check says so; a failed check sends it too.
func TestFitCheckSendsWhatFits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(id engine.RequestID) engine.Event
	}{
		{"fits", func(id engine.RequestID) engine.Event {
			return engine.Fit{Header: hdr(id, 0), MessageTokens: 50, MaxKV: 4096, LiveCap: 4096, Visible: 50, Fits: true}
		}},
		{"check failed", func(id engine.RequestID) engine.Event {
			return engine.Error{Header: hdr(id, 0), Err: errors.New("template")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t, withMaxKV(64))
			ready(m)
			paste(m, strings.Repeat("x", 2000))
			press(m, tea.KeyEnter)
			_, id := lastOf[engine.FitCheck](t, fe)
			events(m, tc.answer(id))
			if g, _ := lastOf[engine.Generate](t, fe); g.Conversation[0].Content != strings.Repeat("x", 2000) {
				t.Error("the message was not sent")
			}
		})
	}
}

// TestFitCheckOfAnEditedMessage: an answer for a message edited meanwhile
// is dropped; Esc drops a check in flight.
func TestFitCheckOfAnEditedMessage(t *testing.T) {
	m, fe := newTestModel(t, withMaxKV(64))
	ready(m)
	paste(m, strings.Repeat("y", 2000))
	press(m, tea.KeyEnter)
	_, id := lastOf[engine.FitCheck](t, fe)
	typeText(m, " more")
	events(m, notFit(id))
	if m.held != nil || countOf[engine.Generate](fe) != 0 || !strings.HasSuffix(m.ed.value(), " more") {
		t.Fatalf("stale fit answer acted on the edited message: held %v, editor %q", m.held != nil, m.ed.value())
	}
	press(m, tea.KeyEnter)
	_, id2 := lastOf[engine.FitCheck](t, fe)
	press(m, tea.KeyEsc)
	events(m, engine.Fit{Header: hdr(id2, 0), Fits: true, MessageTokens: 10, Visible: 10})
	if countOf[engine.Generate](fe) != 0 {
		t.Error("a check dropped with Esc still sent the message")
	}
}

// TestHeldMessage: Esc puts it back above the typed text; a new message
// joins it and both are checked again; /kv re-checks it under the new cap.
func TestHeldMessage(t *testing.T) {
	doc := strings.Repeat("z", 3000)
	hold := func(t *testing.T) (*model, *fakeEngine) {
		m, fe := newTestModel(t, withMaxKV(64))
		update(m, tea.WindowSizeMsg{Width: 200, Height: 30})
		ready(m)
		paste(m, doc)
		press(m, tea.KeyEnter)
		_, id := lastOf[engine.FitCheck](t, fe)
		events(m, notFit(id))
		if m.held == nil {
			t.Fatal("not held")
		}
		return m, fe
	}
	t.Run("Esc", func(t *testing.T) {
		m, _ := hold(t)
		typeText(m, "typed")
		press(m, tea.KeyEsc)
		if m.held != nil || !strings.HasSuffix(m.ed.value(), "\ntyped") || m.ed.full() != doc+"\ntyped" {
			t.Fatalf("Esc: editor %q", m.ed.value())
		}
	})
	t.Run("new message joins", func(t *testing.T) {
		m, fe := hold(t)
		typeText(m, "and this")
		press(m, tea.KeyEnter)
		fc, _ := lastOf[engine.FitCheck](t, fe)
		if got := fc.Conversation[len(fc.Conversation)-1].Content; got != doc+"\nand this" {
			t.Fatalf("checked %q…, want the held message and the new text", got[:20])
		}
		if countOf[engine.Generate](fe) != 0 {
			t.Fatal("sent without a check")
		}
	})
	t.Run("/kv re-checks", func(t *testing.T) {
		m, fe := hold(t)
		typeText(m, "/kv 2048")
		press(m, tea.KeyEnter)
		fc, id := lastOf[engine.FitCheck](t, fe)
		if fc.Settings == nil || fc.Settings.MaxKV != 2048 || fc.Conversation[len(fc.Conversation)-1].Content != doc {
			t.Fatalf("re-check %+v", fc)
		}
		events(m, engine.Fit{Header: hdr(id, time.Second), Fits: true, MessageTokens: 765, MaxKV: 2048, LiveCap: 2048, Visible: 765})
		if s := noticeOf(screen(m)); !strings.Contains(s, "the held paste fits the live window now (765 tokens): Enter sends it") {
			t.Fatalf("notice %q", s)
		}
		press(m, tea.KeyEnter)
		if g, _ := lastOf[engine.Generate](t, fe); g.Conversation[0].Content != doc {
			t.Error("held message not sent after the re-check")
		}
	})
}

// TestFitCheckWithoutACapEndToEnd: with no cap, on a model whose
// config.json says max_position_embeddings 256, a longer paste is held
// with the engine's numbers for that context; sent anyway, it is trimmed
// to the context (the meter shows it), never refused.
func TestFitCheckWithoutACapEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the tiny model")
	}
	const context = 256
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.CopyFS(dir, os.DirFS(tinyGemmaModel(t))); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["max_position_embeddings"] = context
	if tc, ok := cfg["text_config"].(map[string]any); ok {
		tc["max_position_embeddings"] = context
	}
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	s := engine.DefaultSettings()
	s.MaxTokens, s.NoLoopDetect = 4, true
	cs := startChatOn(t, dir, t.TempDir(), s)
	doc := longDocument(2000)
	if _, err := io.WriteString(cs.in, pasteStart+doc+pasteEnd); err != nil {
		t.Fatal(err)
	}
	cs.waitScreen("the collapsed paste", "[pasted: ")
	cs.typeLine("")
	cs.waitScreen("the fit notice", "Enter sends anyway")
	out := flat(cs.out.String())
	mt := regexp.MustCompile(`paste ([0-9,]+) tokens > live window 256 \(the model's context\): the model would see only the last ([0-9,]+)\. Enter sends anyway · /summarize summarizes it in pieces · Esc`).FindStringSubmatch(out)
	if mt == nil {
		t.Fatalf("no fit notice for the context:\n%s", tail(out, 2000))
	}
	tokens, visible := atoi(strings.ReplaceAll(mt[1], ",", "")), atoi(strings.ReplaceAll(mt[2], ",", ""))
	if tokens <= context || visible <= 0 || visible >= context {
		t.Errorf("fit numbers: %d tokens, %d visible under a %d-token context", tokens, visible, context)
	}
	cs.typeLine("")
	cs.waitScreen("the answer", "answer cut at /max 4 tokens")
	cs.waitScreen("the meter at the context", "256/256 live")
	cs.quit()
}

// TestFitCheckEndToEnd: on the real engine a paste longer than the live
// window is held with the engine's numbers; a second Enter sends it and
// it is answered.
func TestFitCheckEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the tiny model")
	}
	s := engine.DefaultSettings()
	s.MaxKV, s.MaxTokens, s.NoLoopDetect = 64, 4, true
	cs := startChat(t, t.TempDir(), s)
	doc := longDocument(2000)
	if _, err := io.WriteString(cs.in, pasteStart+doc+pasteEnd); err != nil {
		t.Fatal(err)
	}
	cs.waitScreen("the collapsed paste", "[pasted: ")
	cs.typeLine("")
	cs.waitScreen("the fit notice", "Enter sends anyway")
	out := flat(cs.out.String())
	mt := regexp.MustCompile(`paste ([0-9,]+) tokens > live window 64: the model would see only the last ([0-9,]+)\. Enter sends anyway · /summarize summarizes it in pieces · /kv ([0-9]+) raises the cap \(≈ ([0-9.]+ [KMG]?i?B) of KV\)`).FindStringSubmatch(out)
	if mt == nil {
		t.Fatalf("no fit notice with numbers:\n%s", tail(out, 2000))
	}
	t.Log(mt[0])
	tokens, visible, suggested := atoi(strings.ReplaceAll(mt[1], ",", "")), atoi(strings.ReplaceAll(mt[2], ",", "")), atoi(mt[3])
	n, err := cs.eng.CountTokens(doc)
	if err != nil {
		t.Fatal(err)
	}
	if tokens < n-2 || tokens > n+2 || visible <= 0 || visible >= 64 || suggested <= tokens {
		t.Errorf("fit numbers: %d tokens (the tokenizer counts %d), %d visible, /kv %d", tokens, n, visible, suggested)
	}
	cs.typeLine("")
	cs.waitScreen("the answer", "answer cut at /max 4 tokens")
	cs.quit()
}

// TestHeldHintOffersKVOnlyWhenItHelps: the editor's hint under a held
// message offers the /kv the engine suggests, and no /kv at all when the
// cap is the model's context length already (no --max-kv-size), which no
// /kv can raise; /summarize is offered either way.
func TestHeldHintOffersKVOnlyWhenItHelps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		maxKV  int
		fit    func(engine.RequestID) engine.Fit
		wantKV string // "" = no /kv offered
	}{
		{"under a cap the engine can raise", 64, notFit, "/kv 1024 raises the cap"},
		{"no cap: the model's context", 0, func(id engine.RequestID) engine.Fit {
			return engine.Fit{Header: hdr(id, 0), MessageTokens: 16891, PromptTokens: 16900, LiveCap: 4096, ContextLength: 4096,
				Sink: 4, Window: 4092, Visible: 4086, KVBytesPerToken: 12 << 10}
		}, ""},
		{"a cap at the model's context", 4096, func(id engine.RequestID) engine.Fit {
			return engine.Fit{Header: hdr(id, 0), MessageTokens: 16891, PromptTokens: 16900, MaxKV: 4096, LiveCap: 4096, ContextLength: 4096,
				Sink: 4, Window: 4092, Visible: 4086, KVBytesPerToken: 12 << 10}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, fe := newTestModel(t, withMaxKV(tc.maxKV))
			update(m, tea.WindowSizeMsg{Width: 200, Height: 30})
			events(m, engine.Ready{Info: engine.ModelInfo{Name: "tiny-model", ModelType: "gemma3n", ContextLength: 4096}})
			paste(m, strings.Repeat("word ", 6000))
			press(m, tea.KeyEnter)
			_, id := lastOf[engine.FitCheck](t, fe)
			events(m, tc.fit(id))
			if m.held == nil {
				t.Fatal("the paste is not held")
			}
			editorLine := ""
			for _, l := range strings.Split(screen(m), "\n") {
				if strings.HasPrefix(l, "› ") {
					editorLine = l
				}
			}
			if !strings.Contains(editorLine, "Enter sends the held message anyway · /summarize summarizes it in pieces") {
				t.Fatalf("editor hint %q", editorLine)
			}
			switch {
			case tc.wantKV == "" && strings.Contains(editorLine, "/kv"):
				t.Errorf("the hint offers a /kv that cannot help: %q", editorLine)
			case tc.wantKV != "" && !strings.Contains(editorLine, tc.wantKV):
				t.Errorf("the hint %q lacks %q", editorLine, tc.wantKV)
			}
		})
	}
}

// TestKVAboveContext: /kv N above the model's context length
// (max_position_embeddings) is refused with one line naming the command,
// the value and the context length, and changes nothing; at the context
// length, or before the model has said its context, it is taken.
func TestKVAboveContext(t *testing.T) {
	for _, tc := range []struct {
		line    string
		context int
		want    string // the notice; "" = taken
	}{
		{"/kv 9999", 4096, "✗ /kv 9999: above the model's context length of 4,096 tokens (max_position_embeddings); use /kv 4096 or less, or /kv off for the whole context" + recallHint},
		{"/kv 4097", 4096, "✗ /kv 4097: above the model's context length of 4,096 tokens (max_position_embeddings); use /kv 4096 or less, or /kv off for the whole context" + recallHint},
		{"/kv 4096", 4096, ""},
		{"/kv 9999", 0, ""},
	} {
		t.Run(tc.line+" of "+strconv.Itoa(tc.context), func(t *testing.T) {
			m, fe := newTestModel(t, withMaxKV(64))
			update(m, tea.WindowSizeMsg{Width: 300, Height: 30})
			events(m, engine.Ready{Info: engine.ModelInfo{Name: "tiny-model", ModelType: "gemma3n", ContextLength: tc.context}})
			command(m, tc.line)
			n, sent := noticeOf(screen(m)), countOf[engine.UpdateSettings](fe)
			if tc.want != "" {
				if n != tc.want || sent != 0 || m.set.cur.MaxKV != 64 {
					t.Errorf("notice %q (%d UpdateSettings, cap %d), want %q and nothing changed", n, sent, m.set.cur.MaxKV, tc.want)
				}
				return
			}
			if sent != 1 || strings.HasPrefix(n, "✗") {
				t.Errorf("%s refused: %q", tc.line, n)
			}
		})
	}
}

// TestPasteLabelCountsAsTheFitCheck: a paste's label and the fit check
// count the same tokens for a message that is the paste: QA's paste of
// text with invalid UTF-8 (which the input filter writes as "\xNN") ended
// with a newline, which the chat template trims, and was labelled 360
// tokens while the fit check said 359. Both run on the real engine and
// tokenizer of the tiny model with the Gemma 3n template here.
func TestPasteLabelCountsAsTheFitCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads the tiny model")
	}
	be := cpu.New(1)
	defer be.Close()
	bundle, err := engine.LoadBundle(tinyGemmaModel(t), be, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	defer bundle.Close()
	e := engine.NewLoading(func(context.Context, func(string, int64, int64)) (*engine.Bundle, error) { return bundle, nil },
		engine.Options{Settings: engine.DefaultSettings()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.Start(ctx)
	defer e.Close()
	next := func(want func(engine.Event) bool) engine.Event {
		t.Helper()
		timeout := time.After(time.Minute)
		for {
			select {
			case ev := <-e.Events():
				if want(ev) {
					return ev
				}
			case <-timeout:
				t.Fatal("no answer from the engine")
			}
		}
	}
	next(func(ev engine.Event) bool { _, ok := ev.(engine.Ready); return ok })
	line := `caf\xe9 \xff ok, a line of the log` + "\n"
	for _, tc := range []struct{ name, text string }{
		{"invalid UTF-8, ending with a newline", strings.Repeat(line, 40)},
		{"blank lines around it", "\n\n" + strings.Repeat(line, 40) + "\n\n"},
		{"no white space around it", strings.TrimSpace(strings.Repeat(line, 40))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p pasteSet
			label := p.add(tc.text, e.CountTokens)
			id := e.Submit(engine.FitCheck{Conversation: []engine.Message{{Role: engine.RoleUser, Content: tc.text}}})
			f := next(func(ev engine.Event) bool { _, ok := ev.(engine.Fit); return ok && ev.Request() == id }).(engine.Fit)
			if want := fmt.Sprintf("[pasted: %s tokens, ", groupDigits(f.MessageTokens)); !strings.HasPrefix(label, want) {
				t.Errorf("label %q, the fit check counts %d tokens", label, f.MessageTokens)
			}
		})
	}
}

// TestKVAboveContextTypedWhileLoading: /kv N typed while the model loads
// is taken (the context length is not known yet), and once the model is
// ready with a context below N the cap is taken off with one error line,
// instead of staying in force as a cap that /kv N refuses from then on.
func TestKVAboveContextTypedWhileLoading(t *testing.T) {
	for _, tc := range []struct {
		line    string
		context int
		wantKV  int
		want    string // the notice's start; "" = no error
	}{
		{"/kv 9999", 4096, 0, "✗ /kv 9999, typed while the model loaded, is above its context length of 4,096 tokens (max_position_embeddings): the cap is off instead, so the live window is the whole context (/kv 4096 or less sets one)"},
		{"/kv 4096", 4096, 4096, ""},
		{"/kv 9999", 0, 9999, ""},
	} {
		t.Run(tc.line+" of "+strconv.Itoa(tc.context), func(t *testing.T) {
			m, fe := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: 400, Height: 30})
			events(m, engine.ModelLoading{Stage: "mapping weights"})
			command(m, tc.line)
			events(m, engine.Ready{Info: engine.ModelInfo{Name: "tiny-model", ModelType: "gemma3n", ContextLength: tc.context}})
			us, _ := lastOf[engine.UpdateSettings](t, fe)
			if m.set.cur.MaxKV != tc.wantKV || us.Settings.MaxKV != tc.wantKV {
				t.Errorf("cap %d, the engine's %d; want %d", m.set.cur.MaxKV, us.Settings.MaxKV, tc.wantKV)
			}
			n := noticeOf(screen(m))
			if tc.want == "" && strings.HasPrefix(n, "✗") || tc.want != "" && n != tc.want {
				t.Errorf("notice %q, want %q", n, tc.want)
			}
			if tc.want != "" && !strings.Contains(screen(m), "0/4096 live") {
				t.Errorf("the meter does not show the context as the cap:\n%s", screen(m))
			}
		})
	}
}
