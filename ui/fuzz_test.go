package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"mlxchat/engine"
	"mlxchat/themes"
)

// FuzzParseConversation feeds arbitrary bytes to the conversation file
// parser and, when they parse, loads them into a chat. It must never
// panic; a loaded chat must send roles that alternate user, assistant...,
// and the repair must keep every message's text (merged texts are joined
// by a blank line, so the texts joined that way are unchanged).
// Seeds: testdata/fuzz/FuzzParseConversation.
func FuzzParseConversation(f *testing.F) {
	f.Add([]byte(`{"version":1,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`))
	f.Add([]byte(`{"version":1,"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}],"draft":"d","draft_pastes":[{"label":"[pasted: 1 token, 1 B]","content":"x"}]}`))
	th, err := themes.Get("dark", false)
	if err != nil {
		f.Fatal(err)
	}
	m, err := newModel(modelConfig{eng: newFakeEngine(), modelName: "tiny", settings: engine.DefaultSettings(),
		theme: th, profile: termenv.Ascii, now: func() time.Time { return t0 }})
	if err != nil {
		f.Fatal(err)
	}
	update(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	ready(m)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConversation("fuzz.json", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		fixed, _, unanswered := repairConversation(c)
		var in, out []string
		for _, sm := range c.Messages {
			in = append(in, sm.Content)
		}
		for _, sm := range fixed.Messages {
			out = append(out, sm.Content)
		}
		if unanswered != nil {
			out = append(out, unanswered.Content)
		}
		if strings.Join(in, "\n\n") != strings.Join(out, "\n\n") {
			t.Fatalf("repair changed the text:\n in %q\nout %q", in, out)
		}
		m.ed.ta.Reset()
		m.ed.pastes.reset()
		m.applyLoad(loadedMsg{name: "fuzz", path: "fuzz.json", file: c})
		conv := m.conversation()
		for i, msg := range conv {
			if want := []string{engine.RoleUser, engine.RoleAssistant}[i%2]; msg.Role != want {
				t.Fatalf("message %d of the loaded chat is %s, want %s: %+v", i, msg.Role, want, conv)
			}
		}
		if n := len(conv); n > 0 && conv[n-1].Role != engine.RoleAssistant {
			t.Fatalf("the loaded chat ends with a question: the next message would make two in a row")
		}
		_ = m.View()
	})
}

// FuzzParseCommand feeds arbitrary lines to the slash-command parser and
// completion. They must never panic; an error is one line naming the
// command; a parsed command is one of the table's, with a valid argument.
// Seeds: testdata/fuzz/FuzzParseCommand.
func FuzzParseCommand(f *testing.F) {
	for _, s := range commandTable {
		f.Add("/" + string(s.name))
		f.Add("/" + string(s.name) + " 1")
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := ParseCommand(line)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseCommand(%q): error is not one line: %q", line, err)
			}
			if !strings.HasPrefix(err.Error(), "/") && !strings.HasPrefix(err.Error(), "not a command") {
				t.Fatalf("ParseCommand(%q): error %q does not name the command", line, err)
			}
		} else {
			known := false
			for _, s := range commandTable {
				known = known || s.name == c.Name
			}
			if !known {
				t.Fatalf("ParseCommand(%q) = unknown command %q", line, c.Name)
			}
			switch c.Name {
			case CmdKV, CmdChunk, CmdMax:
				if !c.Off && c.Int < 1 {
					t.Fatalf("ParseCommand(%q) = %+v: a count below 1", line, c)
				}
			case CmdTemp, CmdTopP, CmdMinP:
				if c.Float != c.Float || c.Float < 0 || (c.Float == 0 && 1/c.Float < 0) {
					t.Fatalf("ParseCommand(%q) = %+v: a bad number", line, c)
				}
			}
			s := engine.DefaultSettings()
			switch c.Name {
			case CmdTemp:
				s.Temperature = c.Float
			case CmdTopP:
				s.TopP = c.Float
			case CmdMinP:
				s.MinP = c.Float
			case CmdTopK:
				s.TopK = int(c.Int)
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("ParseCommand(%q) = %+v, which the engine refuses: %v", line, c, err)
			}
		}
		out, _ := Complete(line, []string{"dark", "light", "high-contrast"})
		if !strings.HasPrefix(out, line) && strings.HasPrefix(line, "/") && !strings.Contains(line, "\n") {
			// Completion only ever extends what was typed (case aside).
			if !strings.EqualFold(out[:min(len(out), len(line))], line[:min(len(out), len(line))]) {
				t.Fatalf("Complete(%q) = %q does not extend the line", line, out)
			}
		}
	})
}

// FuzzPasteFilter feeds arbitrary terminal input to the paste filter in
// reads of arbitrary sizes. It must never panic; whatever the reads, each
// bracketed paste is cut out whole as the exact text between its markers
// (bytes that are not UTF-8 written \xNN, as everywhere), and the rest
// reaches bubbletea in order, stand-ins in the pastes' places, as
// pasteReference has it. Input holding an X10 mouse report ("\x1b[M" and
// three raw bytes) is left out: where a read ends decides whether those
// bytes pass raw. Seeds: testdata/fuzz/FuzzPasteFilter.
func FuzzPasteFilter(f *testing.F) {
	f.Add([]byte("ab\x1b[200~pasted\ntext\x1b[201~cd"), uint8(0x31))
	f.Add([]byte("\x1b[200~a\x1b[200~b\x1b[201~\xff\x1b[20"), uint8(0x00))
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		if len(in) > 1<<16 || strings.Contains(string(in), "\x1b[M") {
			return
		}
		wantPieces, wantTexts := pasteReference(in)
		for _, sizes := range [][]int{{len(in) + 1}, {int(split%16) + 1, int(split/16) + 1}} {
			p := newPasteInput()
			pieces, texts := standIns(t, p, filterAll(p, string(in), sizes...))
			if strings.Join(pieces, "|") != strings.Join(wantPieces, "|") || strings.Join(texts, "|") != strings.Join(wantTexts, "|") {
				t.Fatalf("reads of %v: stream %q pastes %q, want %q and %q", sizes, pieces, texts, wantPieces, wantTexts)
			}
		}
	})
}

// pasteReference is what the paste filter should make of in, read whole:
// the pieces of the stream ("" for each paste's stand-in, typed input
// with bytes that are not UTF-8 written \xNN) and the paste texts (the
// bytes from each start marker to the next end marker, or to the end).
func pasteReference(in []byte) (pieces, texts []string) {
	rest := string(in)
	for rest != "" {
		i := strings.Index(rest, pasteStart)
		if i < 0 {
			i = len(rest)
		}
		if i > 0 {
			pieces = append(pieces, string(appendValidUTF8(nil, []byte(rest[:i]), true)))
		}
		if i == len(rest) {
			break
		}
		rest = rest[i+len(pasteStart):]
		j := strings.Index(rest, pasteEnd)
		if j < 0 {
			j = len(rest)
		}
		texts = append(texts, string(appendValidUTF8(nil, []byte(rest[:j]), false)))
		pieces = append(pieces, "")
		rest = rest[min(len(rest), j+len(pasteEnd)):]
	}
	return pieces, texts
}

// FuzzParseConfig feeds arbitrary bytes to the config file parser. It
// must never panic; an error is one line naming the file; a file that
// parses gives generation settings the engine accepts, so that a flag
// left unset never carries a bad value from the file into a run.
// Seeds: testdata/fuzz/FuzzParseConfig.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"theme":"light","max_kv_size":4096,"kv_bits":8,"temp":0.7,"stop":["</answer>"],"system":"Be brief."}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig("fuzz.json", data)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "config fuzz.json: ") || strings.Contains(msg, "\n") {
				t.Fatalf("error is not one line naming the file: %q", msg)
			}
			return
		}
		if err := c.Settings(engine.DefaultSettings()).Validate(); err != nil {
			t.Fatalf("the file parsed, but the engine refuses its settings: %v", err)
		}
		_ = c.withDefaults()
	})
}

// FuzzParseHistory feeds arbitrary bytes to the input history's parser
// (history.json in the state dir, which a crash, a disk error or a hand
// edit may leave in any state). It must never panic; an error is one line
// naming the file; a history that parses can be walked with Up and each
// entry's pastes expanded, as the editor does. Seeds:
// testdata/fuzz/FuzzParseHistory.
func FuzzParseHistory(f *testing.F) {
	f.Add([]byte(`{"entries":[{"text":"hello"},{"text":"sum up [pasted: 3 tokens, 12 B]","pastes":[{"label":"[pasted: 3 tokens, 12 B]","content":"a b c\nd e f"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseHistory("history.json", data)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "loading input history history.json: ") || strings.Contains(msg, "\n") {
				t.Fatalf("error is not one line naming the file: %q", msg)
			}
			return
		}
		if len(entries) > 64 {
			entries = entries[len(entries)-64:]
		}
		e := newEditor(entries)
		for e.historyMove(-1) {
			_ = e.full()
			_ = e.present()
		}
		for e.historyMove(1) {
		}
	})
}
