package ui

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

// exchange sends text and ends its answer with reply.
func exchange(t *testing.T, m *model, fe *fakeEngine, text, reply string) engine.RequestID {
	t.Helper()
	_, id := send(t, m, fe, text)
	events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: reply})
	return id
}

// pinnedIndexes lists the indexes of the pinned messages of a conversation.
func pinnedIndexes(conv []engine.Message) []int {
	var out []int
	for i, msg := range conv {
		if msg.Pinned {
			out = append(out, i)
		}
	}
	return out
}

func sameInts(a, b []int) bool {
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

// TestPinCommand: /pin pins the last message and /pin N message N; the
// label says "pinned", the next Generate sends the flags, the file keeps
// them and /load restores them; /unpin releases the last pinned one or
// message N; bad numbers and nothing to pin give one-line errors.
func TestPinCommand(t *testing.T) {
	m, fe := newTestModel(t, withMaxKV(4096))
	update(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	ready(m)
	command(m, "/pin")
	if n := noticeOf(screen(m)); n != "✗ /pin: there is no message to pin yet (send one first)"+recallHint {
		t.Fatalf("/pin with no message: %q", n)
	}
	command(m, "/unpin")
	if n := noticeOf(screen(m)); n != "✗ /unpin: no message is pinned"+recallHint {
		t.Fatalf("/unpin with no pin: %q", n)
	}
	exchange(t, m, fe, "the rules: answer in French", "d'accord")
	exchange(t, m, fe, "and a second question", "two")
	command(m, "/pin 1")
	if n := noticeOf(screen(m)); !strings.HasPrefix(n, "• message #1 pinned") {
		t.Fatalf("/pin 1: notice %q", n)
	}
	if m.ed.value() != "" {
		t.Errorf("editor keeps %q after /pin 1", m.ed.value())
	}
	command(m, "/pin")
	if n := noticeOf(screen(m)); !strings.HasPrefix(n, "• message #4 pinned") {
		t.Fatalf("/pin: notice %q", n)
	}
	if s := screen(m); strings.Count(s, "· pinned") != 2 || !strings.Contains(s, "you · pinned") || !strings.Contains(s, "tiny-model · pinned") {
		t.Fatalf("pinned messages not marked:\n%s", s)
	}
	command(m, "/pin 1")
	if n := noticeOf(screen(m)); n != "• message #1 is already pinned" {
		t.Errorf("/pin 1 again: %q", n)
	}
	for _, tc := range []struct{ line, want string }{
		{"/pin 9", "✗ /pin 9: no message #9: the messages are #1 to #4 (the numbers at the right of their labels)"},
		{"/unpin 5", "✗ /unpin 5: no message #5: the messages are #1 to #4 (the numbers at the right of their labels)"},
		{"/pin zero", `✗ /pin: expected a message number (the #N at the right of its label), or nothing for the last message, got "zero"`},
	} {
		command(m, tc.line)
		if n := noticeOf(screen(m)); n != tc.want+recallHint {
			t.Errorf("%s: notice %q, want %q", tc.line, n, tc.want)
		}
		wantRecalled(t, m, tc.line)
	}
	g, _ := send(t, m, fe, "third")
	if got := pinnedIndexes(g.Conversation); !sameInts(got, []int{0, 3}) {
		t.Fatalf("Generate pins messages %v, want [0 3]", got)
	}
	_, id := lastOf[engine.Generate](t, fe)
	events(m, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "three"})
	c := readConv(t, m.files.saver.currentPath())
	if len(c.Messages) != 6 || !c.Messages[0].Pinned || c.Messages[1].Pinned || !c.Messages[3].Pinned {
		t.Fatalf("saved %+v", c.Messages)
	}

	// /load restores the pins: the next Generate sends them.
	m2, fe2 := newTestModel(t, withMaxKV(4096))
	update(m2, tea.WindowSizeMsg{Width: 120, Height: 40})
	ready(m2)
	typeText(m2, "/load "+m.files.saver.currentPath())
	enter(m2)
	if s := screen(m2); strings.Count(s, "· pinned") != 2 {
		t.Fatalf("loaded pins not marked:\n%s", s)
	}
	g2, _ := send(t, m2, fe2, "more")
	if got := pinnedIndexes(g2.Conversation); !sameInts(got, []int{0, 3}) {
		t.Fatalf("loaded conversation pins %v, want [0 3]", got)
	}

	// /unpin releases the last pinned message, /unpin N message N.
	command(m, "/unpin")
	if n := noticeOf(screen(m)); !strings.HasPrefix(n, "• message #4 unpinned") {
		t.Errorf("/unpin: %q", n)
	}
	command(m, "/unpin 1")
	if n := noticeOf(screen(m)); !strings.HasPrefix(n, "• message #1 unpinned") {
		t.Errorf("/unpin 1: %q", n)
	}
	command(m, "/unpin 2")
	if n := noticeOf(screen(m)); n != "• message #2 is not pinned" {
		t.Errorf("/unpin 2: %q", n)
	}
	if s := screen(m); strings.Contains(s, "· pinned") {
		t.Errorf("unpinned messages still marked:\n%s", s)
	}
	g, _ = send(t, m, fe, "fourth")
	if got := pinnedIndexes(g.Conversation); len(got) != 0 {
		t.Errorf("after /unpin the Generate pins %v", got)
	}
	if c := readConv(t, m.files.saver.currentPath()); c.Messages[0].Pinned || c.Messages[3].Pinned {
		t.Errorf("unpins not saved: %+v", c.Messages)
	}
}

// TestPinBudget: a pin that would take the sink and the pins past half
// the cap (the engine's limit) is refused with the numbers when the
// tokens are known; a /kv that would leave the pins too little room too;
// where the UI cannot know, the engine's refusal of the answer is one
// error line and the message goes back into the editor.
func TestPinBudget(t *testing.T) {
	m, fe := newTestModel(t, withMaxKV(64))
	update(m, tea.WindowSizeMsg{Width: 200, Height: 40})
	ready(m)
	_, id := send(t, m, fe, "a question of twenty tokens")
	events(m, engine.Layout{Header: hdr(id, 0), Messages: []engine.MessageSpan{
		{Index: 0, Tokens: engine.Span{Start: 4, End: 24}, Live: 20},
	}}, engine.Layout{Header: hdr(id, 0), Messages: []engine.MessageSpan{
		{Index: 0, Tokens: engine.Span{Start: 4, End: 24}, Live: 20},
		{Index: 1, Tokens: engine.Span{Start: 28, End: 40}, Live: 12},
	}}, engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "an answer"})
	command(m, "/pin 1")
	if n := noticeOf(screen(m)); n != "• message #1 pinned (20 tokens beside the sink): trimming never drops it" {
		t.Fatalf("/pin 1: %q", n)
	}
	command(m, "/pin 2")
	want := "✗ /pin 2: message #2 has 12 tokens beside the sink; with the messages already pinned (20 tokens beside the sink) and the 4-token sink that is 36, more than half of the 64-token cap (32), the most pins may keep; /unpin a message or raise /kv to 72"
	if n := noticeOf(screen(m)); n != want+recallHint {
		t.Fatalf("/pin 2 over the budget:\n got %q\nwant %q", n, want)
	}
	if m.tr.turns[m.tr.message(2)].pinned {
		t.Fatal("the refused pin was set")
	}
	us := countOf[engine.UpdateSettings](fe)
	command(m, "/kv 40")
	if n := noticeOf(screen(m)); !strings.HasPrefix(n, "✗ /kv 40: the pinned messages (20 tokens beside the sink) and the 4-token sink need 24, more than half of the cap (20)") {
		t.Fatalf("/kv 40 below the pins: %q", n)
	}
	if countOf[engine.UpdateSettings](fe) != us || m.set.cur.MaxKV != 64 {
		t.Fatal("the refused /kv changed the settings")
	}
	command(m, "/stats")
	if s := flat(screen(m)); !strings.Contains(s, "pinned #1 you (20 tokens beside the sink; never trimmed)") {
		t.Errorf("/stats lacks the pins:\n%s", screen(m))
	}

	// The engine refuses an answer whose pins do not fit (tokens the UI
	// could not know): one line, the message back in the editor.
	_, id = send(t, m, fe, "next")
	msg := "pinned messages: 40 tokens with the 4-token sink need 44, more than half of max-kv-size 64 (32); /unpin one or raise /kv"
	events(m, engine.Error{Header: hdr(id, 0), Err: errors.New(msg)})
	n := noticeOf(screen(m))
	if !strings.HasPrefix(n, "✗ answer failed (your message is back in the editor): "+msg[:40]) {
		t.Fatalf("engine refusal: %q", n)
	}
	if m.ed.value() != "next" || m.phase != phaseIdle {
		t.Fatalf("editor %q, phase %v", m.ed.value(), m.phase)
	}
}

// TestMeterPinnedAndKV: the meter shows the pinned tokens and the KV
// memory, marked 16-bit or 8-bit when the cache stores those (float32, the
// default, is not marked).
func TestMeterPinnedAndKV(t *testing.T) {
	m, _ := newTestModel(t, withMaxKV(64))
	update(m, tea.WindowSizeMsg{Width: 200, Height: 30})
	ready(m)
	events(m, engine.CacheState{Live: 64, Max: 64, Seen: 300, Trimmed: 236, Pinned: 20, Window: 512, KVBytes: 60 << 20, KVBits: 32})
	s := screen(m)
	if !strings.Contains(s, "64/64 live · 300 seen · 236 trimmed · 20 pinned · swa 512 · KV 60.0 MiB") || strings.Contains(s, "-bit") {
		t.Fatalf("32-bit meter:\n%s", s)
	}
	events(m, engine.CacheState{Live: 64, Max: 64, Seen: 300, Trimmed: 236, Pinned: 20, Window: 512, KVBytes: 30 << 20, KVBits: 16})
	if s := screen(m); !strings.Contains(s, "20 pinned · swa 512 · KV 30.0 MiB (16-bit)") {
		t.Fatalf("16-bit meter:\n%s", s)
	}
	events(m, engine.CacheState{Live: 64, Max: 64, Seen: 300, Trimmed: 236, Pinned: 20, Window: 512, KVBytes: 15 << 20, KVBits: 8})
	if s := screen(m); !strings.Contains(s, "20 pinned · swa 512 · KV 15.0 MiB (8-bit)") {
		t.Fatalf("8-bit meter:\n%s", s)
	}
}

// TestKVBitsCommand: /kv bits 8, 16 and 32 change Settings.KVBits (the same
// value again says so and sends nothing); a bad value is one error line
// and changes nothing; /stats explains the restart, /model the storage.
func TestKVBitsCommand(t *testing.T) {
	m, fe := newTestModel(t)
	update(m, tea.WindowSizeMsg{Width: 200, Height: 40})
	ready(m)
	command(m, "/kv bits 8")
	us, _ := lastOf[engine.UpdateSettings](t, fe)
	if us.Settings.KVBits != 8 || m.set.cur.KVBits != 8 {
		t.Fatalf("settings sent %+v", us.Settings)
	}
	if n := noticeOf(screen(m)); !strings.HasPrefix(n, "• KV cache 8-bit (int8 with a scale per token and head: a little over a quarter of the memory of float32, decoded to float32 at every step); the cache starts over") {
		t.Fatalf("/kv bits 8: %q", n)
	}
	before := countOf[engine.UpdateSettings](fe)
	command(m, "/kv bits 8")
	if n := noticeOf(screen(m)); n != "• the KV cache is already 8-bit" || countOf[engine.UpdateSettings](fe) != before {
		t.Fatalf("/kv bits 8 again: %q", n)
	}
	command(m, "/kv bits 4")
	if n := noticeOf(screen(m)); n != `✗ /kv: expected "bits 32", "bits 16" or "bits 8", got "bits 4"`+recallHint || countOf[engine.UpdateSettings](fe) != before {
		t.Fatalf("/kv bits 4: %q", n)
	}
	command(m, "/model")
	if s := flat(screen(m)); !strings.Contains(s, "/kv off (8-bit)") {
		t.Errorf("/model lacks the storage:\n%s", screen(m))
	}
	_, id := send(t, m, fe, "hello")
	events(m, engine.Stats{Header: hdr(id, 0), PromptTokens: 10, PrefillTokens: 10, CacheRestart: engine.RestartKVBits, KVBits: 8},
		engine.Done{Header: hdr(id, 0), Reason: engine.DoneStop, Text: "hi"})
	command(m, "/stats")
	if s := flat(screen(m)); !strings.Contains(s, "the cache started over: the KV storage changed (/kv bits)") {
		t.Errorf("/stats lacks the restart reason:\n%s", screen(m))
	}
	for _, bits := range []int{16, 32} {
		command(m, fmt.Sprintf("/kv bits %d", bits))
		if us, _ := lastOf[engine.UpdateSettings](t, fe); us.Settings.KVBits != bits {
			t.Fatalf("/kv bits %d sent %+v", bits, us.Settings)
		}
	}
	m2, fe2 := newTestModel(t)
	ready(m2)
	command(m2, "/kv bits 32")
	if n := noticeOf(screen(m2)); n != "• the KV cache is already 32-bit" || countOf[engine.UpdateSettings](fe2) != 0 {
		t.Fatalf("/kv bits 32 on the default: %q", n)
	}
}

// TestPinEndToEnd: on the real engine under a 64-token cap, the first
// message pinned after its answer stays attended while later turns trim
// everything else: the meter counts its tokens as pinned, /stats lists
// it and never as trimmed. Then /kv bits 8 restarts the cache in 8 bits,
// which the meter shows.
func TestPinEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the tiny model")
	}
	s := engine.DefaultSettings()
	s.MaxKV, s.MaxTokens, s.NoLoopDetect = 64, 8, true
	cs := startChat(t, t.TempDir(), s)
	answers := 0
	ask := func(q string) {
		t.Helper()
		cs.typeLine(q)
		answers++
		// The answer's label gets its message number when it ends (the
		// notice line is drawn again on every frame, so it cannot be
		// counted).
		done := regexp.MustCompile(fmt.Sprintf(`tiny · max tokens( · [a-z]+)* #%d\b`, 2*answers))
		deadline := time.Now().Add(60 * time.Second)
		for !done.MatchString(flat(cs.out.String())) {
			if time.Now().After(deadline) {
				t.Fatalf("answer %d did not end:\n%s", answers, tail(cs.out.String(), 2000))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	ask("the code word is fox")
	cs.typeLine("/pin 1")
	cs.waitScreen("the pin", "message #1 pinned")
	for _, q := range []string{"a dog runs by the river bank", "the river is wide and slow today", "tell me more about the river"} {
		ask(q)
	}
	cs.typeLine("/stats")
	cs.waitScreen("the stats", "pinned #1 you (")
	out := flat(cs.out.String())
	stats := out[strings.LastIndex(out, "cache 64/64 live"):]
	if !regexp.MustCompile(`[0-9]+ trimmed · [1-9][0-9]* pinned`).MatchString(stats) {
		t.Errorf("the meter in /stats shows no pinned tokens: %s", tail(stats, 600))
	}
	if !strings.Contains(stats, "outside the live window (dimmed)") || strings.Contains(stats, "#1 you,") || strings.Contains(stats, "window #1 you") || strings.Contains(stats, "#1 you: cut") {
		t.Errorf("want later messages trimmed and #1 kept: %s", tail(stats, 600))
	}
	if strings.Contains(out, "you · pinned · trimmed") || strings.Contains(out, "you · pinned · cut") {
		t.Errorf("the pinned message was trimmed:\n%s", tail(out, 2000))
	}
	cs.typeLine("/kv bits 8")
	cs.waitScreen("the kv bits notice", "KV cache 8-bit")
	ask("and the fox?")
	cs.typeLine("/stats")
	cs.waitScreen("the restart", "the KV storage changed")
	out = flat(cs.out.String())
	if stats := out[strings.LastIndex(out, "cache 64/64 live"):]; !regexp.MustCompile(`KV [0-9.]+ [KM]iB \(8- ?bit\)`).MatchString(stats) {
		t.Errorf("the meter does not show 8-bit KV:\n%s", tail(out, 2000))
	}
	cs.quit()
	c := readConv(t, savedConversation(t, cs.state))
	if len(c.Messages) < 2 || !c.Messages[0].Pinned || c.Messages[2].Pinned {
		t.Errorf("saved pins: %+v", c.Messages)
	}
}

// TestPinnedCountsAgree runs the real engine on the tiny model with an
// 8-token sink, so that message #1 (which starts after the template's
// first 4 tokens) lies partly in the sink, and pins it: the pin notice,
// the meter and /stats give one count, the tokens the pin keeps beside the
// sink (QA: the notice and /stats said 8, the meter 7), and the notice and
// /stats say how many more lie in the sink in the same words.
func TestPinnedCountsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the tiny model")
	}
	s := engine.DefaultSettings()
	s.MaxKV, s.MaxTokens, s.SinkTokens, s.NoLoopDetect = 128, 4, 8, true
	cs := startChat(t, t.TempDir(), s)
	cs.typeLine("hello there my good friend")
	cs.waitScreen("the first answer", "answer cut at /max 4 tokens")
	cs.typeLine("/pin 1")
	cs.waitScreen("the pin notice", "message #1 pinned (")
	notice := regexp.MustCompile(`message #1 pinned \((\d+) tokens? beside the sink(, \d+ more in it)?\)`).FindStringSubmatch(flat(stripANSI(cs.out.String())))
	if notice == nil {
		t.Fatalf("pin notice:\n%s", tail(cs.out.String(), 2000))
	}
	cs.typeLine("and a second one")
	cs.waitScreen("the second answer", "#4")
	cs.typeLine("/stats")
	cs.waitScreen("the /stats pins", "pinned #1 you (")
	out := flat(stripANSI(cs.out.String()))
	meters := regexp.MustCompile(`· (\d+) pinned [·│]`).FindAllStringSubmatch(out, -1)
	stats := regexp.MustCompile(`pinned #1 you \((\d+) tokens? beside the sink(, \d+ more in it)?; never trimmed\)`).FindStringSubmatch(out)
	if len(meters) == 0 || stats == nil {
		t.Fatalf("meter %v, /stats %v:\n%s", meters, stats, tail(out, 2000))
	}
	meter := meters[len(meters)-1][1]
	if notice[1] != meter || stats[1] != meter || notice[2] != stats[2] {
		t.Errorf("the pin notice says %q, the meter %q pinned, /stats %q: want one count", notice[0], meter, stats[0])
	} else if notice[2] == "" {
		t.Errorf("the 8-token sink holds none of message #1 (%q): the test no longer covers the overlap", notice[0])
	}
	cs.quit()
}
