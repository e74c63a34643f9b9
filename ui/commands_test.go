package ui

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"mlxchat/engine"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		line    string
		want    Command
		wantErr string // substring of the error; "" = no error
	}{
		{"/kv 64", Command{Name: CmdKV, Int: 64}, ""},
		{"  /kv   2048 ", Command{Name: CmdKV, Int: 2048}, ""},
		{"/kv off", Command{Name: CmdKV, Off: true}, ""},
		{"/KV OFF", Command{Name: CmdKV, Off: true}, ""},
		{"/kv", Command{}, `/kv: expected a number of tokens (0 or "off": no cap) or "bits 32|16|8", got ""`},
		{"/kv 0", Command{Name: CmdKV, Off: true}, ""},
		{"/kv 00", Command{Name: CmdKV, Off: true}, ""},
		{"/kv bits 8", Command{Name: CmdKV, Bits: 8}, ""},
		{"/kv BITS 16", Command{Name: CmdKV, Bits: 16}, ""},
		{"/kv bits 32", Command{Name: CmdKV, Bits: 32}, ""},
		{"/kv bits 4", Command{}, `/kv: expected "bits 32", "bits 16" or "bits 8", got "bits 4"`},
		{"/kv bits 64", Command{}, `/kv: expected "bits 32", "bits 16" or "bits 8", got "bits 64"`},
		{"/kv bits", Command{}, `/kv: expected "bits 32", "bits 16" or "bits 8", got "bits"`},
		{"/kv bits 8 16", Command{}, `/kv: expected "bits 32", "bits 16" or "bits 8"`},
		{"/pin", Command{Name: CmdPin}, ""},
		{"/pin 3", Command{Name: CmdPin, Int: 3}, ""},
		{"/pin #3", Command{Name: CmdPin, Int: 3}, ""},
		{"/pin 0", Command{}, `/pin: expected a message number (the #N at the right of its label), or nothing for the last message, got "0"`},
		{"/pin x", Command{}, `/pin: expected a message number`},
		{"/unpin", Command{Name: CmdUnpin}, ""},
		{"/unpin 2", Command{Name: CmdUnpin, Int: 2}, ""},
		{"/unpin -1", Command{}, `/unpin: expected a message number`},
		{"/kv -5", Command{}, "/kv: expected"},
		{"/kv lots", Command{}, `got "lots"`},
		{"/chunk 256", Command{Name: CmdChunk, Int: 256}, ""},
		{"/chunk 0", Command{}, "/chunk: expected a positive number of tokens"},
		{"/temp 0.7", Command{Name: CmdTemp, Float: 0.7}, ""},
		{"/temp 0", Command{Name: CmdTemp}, ""},
		{"/temp -1", Command{}, "/temp: expected a temperature >= 0"},
		{"/temp NaN", Command{}, "/temp: expected"},
		{"/topp 0.9", Command{Name: CmdTopP, Float: 0.9}, ""},
		{"/topp 1", Command{Name: CmdTopP, Float: 1}, ""},
		{"/topp 0", Command{Name: CmdTopP, Off: true}, ""}, // as --top-p 0
		{"/topp -1", Command{}, `/topp: expected a number in (0, 1] (0, 1 or "off": no nucleus cut), got "-1"`},
		{"/topp 1.5", Command{}, "/topp: expected"},
		{"/topk 40", Command{Name: CmdTopK, Int: 40}, ""},
		{"/topk 0", Command{Name: CmdTopK}, ""},
		{"/topk 1.5", Command{}, "/topk: expected a whole number >= 0"},
		{"/minp 0.05", Command{Name: CmdMinP, Float: 0.05}, ""},
		{"/minp 1", Command{}, "/minp: expected a number in [0, 1)"},
		{"/seed 42", Command{Name: CmdSeed, Int: 42}, ""},
		{"/seed -3", Command{}, "/seed: expected a whole number >= 0"},
		{"/seed x", Command{}, "/seed: expected a whole number"},
		{"/max 512", Command{Name: CmdMax, Int: 512}, ""},
		{"/max 0", Command{Name: CmdMax, Off: true}, ""}, // as --max-tokens 0
		{"/max -3", Command{}, "/max: expected a number of tokens"},
		{"/max off", Command{Name: CmdMax, Off: true}, ""},
		{"/topp off", Command{Name: CmdTopP, Off: true}, ""},
		{"/topk OFF", Command{Name: CmdTopK, Off: true}, ""},
		{"/minp off", Command{Name: CmdMinP, Off: true}, ""},
		{"/max offf", Command{}, `/max: expected a number of tokens (0 or "off": no limit), got "offf"`},
		{"/system You are terse.", Command{Name: CmdSystem, Text: "You are terse."}, ""},
		{"/system", Command{Name: CmdSystem}, ""},
		{"/summarize", Command{Name: CmdSummarize}, ""},
		{"/summarize  List the risks. ", Command{Name: CmdSummarize, Text: "List the risks."}, ""},
		{"/clear", Command{Name: CmdClear}, ""},
		{"/clear now", Command{}, `/clear: takes no argument, got "now"`},
		{"/stats", Command{Name: CmdStats}, ""},
		{"/theme light", Command{Name: CmdTheme, Text: "light"}, ""},
		{"/theme", Command{}, "/theme: expected a theme name"},
		{"/save", Command{Name: CmdSave}, ""},
		{"/save notes.json", Command{Name: CmdSave, Text: "notes.json"}, ""},
		{"/load", Command{}, "/load: expected a file name"},
		{"/load a b.json", Command{Name: CmdLoad, Text: "a b.json"}, ""},
		{"/model", Command{Name: CmdModel}, ""},
		{"/help", Command{Name: CmdHelp}, ""},
		{"/quit", Command{Name: CmdQuit}, ""},
		{"/frobnicate", Command{}, "/frobnicate: unknown command (try /help)"},
		{"/", Command{}, "/: expected a command name"},
		{"hello", Command{}, "not a command"},
	}
	for _, line := range []string{"/temp -0", "/minp -0", "/temp -0.0"} {
		if c, err := ParseCommand(line); err != nil || math.Signbit(c.Float) {
			t.Errorf("ParseCommand(%q) = %+v, %v; want +0", line, c, err)
		}
	}
	for _, tc := range tests {
		got, err := ParseCommand(tc.line)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseCommand(%q) error = %v, want containing %q", tc.line, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("ParseCommand(%q) error is not one line: %q", tc.line, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseCommand(%q) unexpected error %v", tc.line, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseCommand(%q) = %+v, want %+v", tc.line, got, tc.want)
		}
	}
}

func TestIsCommand(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"/kv 3", true}, {"  /help", true}, {"//not a command", false}, {"hi /kv", false}, {"", false},
	}
	for _, tc := range tests {
		if got := IsCommand(tc.in); got != tc.want {
			t.Errorf("IsCommand(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestComplete(t *testing.T) {
	themes := []string{"dark", "high-contrast", "light"}
	tests := []struct {
		in        string
		want      string
		wantCands []string
	}{
		{"/k", "/kv ", nil},
		{"/he", "/help ", nil},
		{"/t", "/t", []string{"/temp", "/topp", "/topk", "/think", "/theme"}},
		{"/to", "/top", []string{"/topp", "/topk"}},
		{"/s", "/s", []string{"/seed", "/system", "/summarize", "/stats", "/save"}},
		{"/su", "/summarize ", nil},
		{"/sy", "/system ", nil},
		{"/zz", "/zz", nil},
		{"/theme l", "/theme light", nil},
		{"/theme ", "/theme ", []string{"dark", "high-contrast", "light"}},
		{"/kv o", "/kv off", nil},
		{"/kv b", "/kv bits ", nil},
		{"/kv ", "/kv ", []string{"bits", "off"}},
		{"/kv bits ", "/kv bits ", []string{"16", "32", "8"}},
		{"/kv bits 1", "/kv bits 16", nil},
		{"/kv bits 3", "/kv bits 32", nil},
		{"/pi", "/pin ", nil},
		{"/u", "/unpin ", nil},
		{"/temp 0.", "/temp 0.", nil},
		{"hello", "hello", nil},
		{"/kv\nmore", "/kv\nmore", nil},
	}
	for _, tc := range tests {
		got, cands := Complete(tc.in, themes)
		if got != tc.want || !reflect.DeepEqual(cands, tc.wantCands) {
			t.Errorf("Complete(%q) = %q %v, want %q %v", tc.in, got, cands, tc.want, tc.wantCands)
		}
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	h := HelpText()
	for _, s := range commandTable {
		if !strings.Contains(h, "/"+string(s.name)) {
			t.Errorf("/help does not mention /%s", s.name)
		}
	}
}

// TestOffCommands: "off" turns each limit off in the settings sent, and
// "/temp -0" reads "temperature 0".
func TestOffCommands(t *testing.T) {
	tests := []struct {
		line, notice string
		check        func(engine.Settings) bool
	}{
		{"/max off", "no limit on new tokens per answer", func(s engine.Settings) bool { return s.MaxTokens == 0 }},
		{"/kv off", "kv cap off: the live window is unlimited", func(s engine.Settings) bool { return s.MaxKV == 0 }},
		{"/kv 0", "kv cap off: the live window is unlimited", func(s engine.Settings) bool { return s.MaxKV == 0 }},
		{"/max 0", "no limit on new tokens per answer", func(s engine.Settings) bool { return s.MaxTokens == 0 }},
		{"/topp off", "top-p off", func(s engine.Settings) bool { return s.TopP == 0 }},
		{"/topp 0", "top-p off", func(s engine.Settings) bool { return s.TopP == 0 }},
		{"/topk off", "top-k off", func(s engine.Settings) bool { return s.TopK == 0 }},
		{"/minp off", "min-p off", func(s engine.Settings) bool { return s.MinP == 0 }},
		{"/temp -0", "temperature 0", func(s engine.Settings) bool { return s.Temperature == 0 && !math.Signbit(s.Temperature) }},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			m, fe := newTestModel(t, func(c *modelConfig) {
				c.settings.MaxTokens, c.settings.TopP, c.settings.TopK, c.settings.MinP, c.settings.Temperature = 100, 0.9, 40, 0.05, 0.7
				c.settings.MaxKV = 64
			})
			ready(m)
			typeText(m, tc.line)
			enter(m)
			us, _ := lastOf[engine.UpdateSettings](t, fe)
			if !tc.check(us.Settings) {
				t.Errorf("settings sent %+v", us.Settings)
			}
			if n := noticeOf(screen(m)); n != "• "+tc.notice {
				t.Errorf("notice %q, want %q", n, "• "+tc.notice)
			}
		})
	}
}

// wantRecalled checks that the failed command line left the editor empty,
// so that what is typed next is not glued onto it, that the notice says ↑
// brings it back, and that ↑ does (↓ then empties the editor again).
func wantRecalled(t *testing.T, m *model, line string) {
	t.Helper()
	if v := m.ed.value(); v != "" {
		t.Errorf("after the failed %q the editor holds %q, want it empty", line, v)
		return
	}
	if n := noticeOf(screen(m)); !strings.HasSuffix(n, strings.TrimSpace(recallHint)) {
		t.Errorf("after the failed %q the notice %q lacks %q", line, n, recallHint)
	}
	press(m, tea.KeyUp)
	if v := m.ed.value(); v != line {
		t.Errorf("↑ after the failed %q brings back %q", line, v)
	}
	press(m, tea.KeyDown)
	if v := m.ed.value(); v != "" {
		t.Errorf("↓ after ↑ leaves %q", v)
	}
}

// TestFailedCommandLeavesEditor: after a command fails (at once or, for
// /load and /read, after the file was read) the next command typed is run
// as typed, not glued onto the failed one ("/pin: got \"1/unpin\"").
func TestFailedCommandLeavesEditor(t *testing.T) {
	dir := t.TempDir()
	for _, first := range []string{"/pin 1", "/kv abc", "/load " + filepath.Join(dir, "missing"), "/read " + filepath.Join(dir, "missing.txt")} {
		t.Run(first, func(t *testing.T) {
			m, _ := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: 200, Height: 30})
			ready(m)
			typeText(m, first)
			enterRun(m)
			if n := noticeOf(screen(m)); !strings.HasPrefix(n, "✗ "+strings.Fields(first)[0]) {
				t.Fatalf("%s: notice %q, want its error", first, n)
			}
			typeText(m, "/unpin")
			enterRun(m)
			if n := noticeOf(screen(m)); n != "✗ /unpin: no message is pinned"+recallHint {
				t.Errorf("/unpin typed after the failed %s: %q", first, n)
			}
			press(m, tea.KeyUp)
			press(m, tea.KeyUp)
			if v := m.ed.value(); v != first {
				t.Errorf("↑↑ brings back %q, want %q", v, first)
			}
		})
	}
}

// TestNextAnswerSaidOnce: a change made while an answer runs says that it
// takes effect from the next answer, once: the notices that name the next
// answer themselves get no "(from the next answer)" after them (QA: "/kv
// 64" said "next answer" twice).
func TestNextAnswerSaidOnce(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string // a part of the notice
	}{
		{"/kv 64", "kv cap 64 tokens: the next answer trims the 593 live tokens to it"},
		{"/kv 1000", "kv cap 1000 tokens; older tokens after the sink are trimmed (from the next answer)"},
		{"/temp 0.5", "temperature 0.5 (from the next answer)"},
		{"/system Be brief.", "the next answer prefills from the start"},
		{"/kv bits 8", "the next answer prefills the conversation again"},
		{"/pin 1", "message #1 pinned"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			m, fe := newTestModel(t, withMaxKV(2048))
			update(m, tea.WindowSizeMsg{Width: 300, Height: 30})
			ready(m)
			exchange(t, m, fe, "first", "answer")
			_, id := send(t, m, fe, "second")
			events(m, engine.CacheState{Header: hdr(id, 0), Live: 593, Max: 2048, Seen: 593},
				engine.Token{Header: hdr(id, 0), Text: "streaming", Tokens: 1})
			command(m, tc.line)
			n := noticeOf(screen(m))
			if !strings.Contains(n, tc.want) {
				t.Errorf("notice %q lacks %q", n, tc.want)
			}
			if c := strings.Count(n, "next answer"); c != 1 {
				t.Errorf("notice %q says \"next answer\" %d times, want once", n, c)
			}
		})
	}
}

// TestCommandWithPaste: a command line holding a collapsed paste is a
// command, never a message: /system takes the pasted text as the system
// prompt; any other command refuses it with one line and keeps the line,
// paste and all, in the editor. QA: "/system [pasted: 9,867 tokens]" was
// sent to the model as a user message (through the fit check).
func TestCommandWithPaste(t *testing.T) {
	doc := strings.Repeat("You answer in French, politely.\n", 40)
	tests := []struct {
		line    string // typed before the paste
		busy    bool   // an answer streams
		wantErr string // "" = /system set to the paste
	}{
		{"/system ", false, ""},
		{"/system ", true, ""},
		{"/kv ", false, `✗ /kv: expected a number of tokens (0 or "off": no cap) or "bits 32|16|8", got "[pasted: `},
		{"/theme ", false, "✗ /theme: takes no pasted text (only /system and /summarize do); the line stays in the editor"},
		{"/theme ", true, "✗ /theme: takes no pasted text"},
		{"/frob ", false, "✗ /frob: unknown command (try /help); the line and its paste stay in the editor"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s busy=%v", tc.line, tc.busy), func(t *testing.T) {
			m, fe := newTestModel(t)
			update(m, tea.WindowSizeMsg{Width: 400, Height: 30})
			ready(m)
			if tc.busy {
				_, id := send(t, m, fe, "first")
				events(m, engine.Token{Header: hdr(id, 0), Text: "stream", Tokens: 1})
			}
			typeText(m, tc.line)
			paste(m, doc)
			before := m.ed.value()
			press(m, tea.KeyEnter)
			if n := countOf[engine.Generate](fe) + countOf[engine.FitCheck](fe); n != btoi(tc.busy) || len(m.queued) != 0 {
				t.Fatalf("the command line went as a message: %v, queued %v", fe.requests(), m.queued)
			}
			if tc.wantErr == "" {
				us, _ := lastOf[engine.UpdateSettings](t, fe)
				if us.Settings.System != strings.TrimSpace(doc) || m.ed.value() != "" {
					t.Fatalf("system %q, editor %q", us.Settings.System, m.ed.value())
				}
				return
			}
			if n := noticeOf(screen(m)); !strings.HasPrefix(n, tc.wantErr) || strings.Contains(n, "politely") {
				t.Errorf("notice %q, want it to start %q and not quote the paste", n, tc.wantErr)
			}
			if m.ed.value() != before || m.ed.full() != tc.line+doc {
				t.Errorf("editor %q, want the line kept with its paste", m.ed.value())
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
