package ui

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// CommandName identifies a slash command.
type CommandName string

// The slash commands the chat understands.
const (
	CmdKV     CommandName = "kv"
	CmdChunk  CommandName = "chunk"
	CmdTemp   CommandName = "temp"
	CmdTopP   CommandName = "topp"
	CmdTopK   CommandName = "topk"
	CmdMinP   CommandName = "minp"
	CmdSeed   CommandName = "seed"
	CmdMax    CommandName = "max"
	CmdThink  CommandName = "think"
	CmdSystem CommandName = "system"
	CmdClear  CommandName = "clear"
	// CmdPin keeps a message in the never-trimmed prefix of the cache;
	// CmdUnpin releases it.
	CmdPin   CommandName = "pin"
	CmdUnpin CommandName = "unpin"
	// CmdSummarize summarizes a document in pieces that fit the cap.
	CmdSummarize CommandName = "summarize"
	CmdStats     CommandName = "stats"
	CmdTheme     CommandName = "theme"
	CmdSave      CommandName = "save"
	CmdLoad      CommandName = "load"
	CmdRead      CommandName = "read"
	CmdModel     CommandName = "model"
	CmdHelp      CommandName = "help"
	CmdQuit      CommandName = "quit"
)

// Command is one parsed slash command. Only the field that belongs to the
// command is set: Int for kv/chunk/topk/seed/max and the message number of
// pin/unpin (0 = none given), Float for temp/topp/minp, Text for
// system/theme/save/load/read/summarize, Off for "off" (/kv, /max, /topp,
// /topk, /minp), Bits for "/kv bits N".
type Command struct {
	Name  CommandName
	Int   int64
	Float float64
	Text  string
	Off   bool
	Bits  int
}

// commandSpec documents one command for /help and completion.
type commandSpec struct {
	name  CommandName
	args  string // argument synopsis, "" when none
	help  string
	parse func(c *Command, arg string) error
}

// commandTable lists every command in /help order.
var commandTable = []commandSpec{
	{CmdKV, "N|off|bits 32|16|8", "cap the live KV window at N tokens, at most the model's context, or remove the cap (off or 0: the context is the cap); bits: the cache's storage, 32 float32 (default), 16 float16 (half the memory), 8 int8 (a little over a quarter)", parseKV},
	{CmdChunk, "N", "prefill chunk size in tokens", intArg(1, math.MaxInt32, "a positive number of tokens")},
	{CmdTemp, "X", "sampling temperature (0 = greedy)", floatArg(func(x float64) bool { return x >= 0 && x <= 100 }, "a temperature >= 0")},
	{CmdTopP, "X|off", "nucleus sampling mass, 0 < X <= 1 (off, 0 or 1 = no nucleus cut)", orOffOrZero(floatArg(func(x float64) bool { return x > 0 && x <= 1 }, "a number in (0, 1] (0, 1 or \"off\": no nucleus cut)"))},
	{CmdTopK, "N|off", "sample from the N most likely tokens (off = 0)", orOff(intArg(0, math.MaxInt32, "a whole number >= 0 or \"off\""))},
	{CmdMinP, "X|off", "drop tokens below X times the top probability, 0 <= X < 1 (off = 0)", orOff(floatArg(func(x float64) bool { return x >= 0 && x < 1 }, "a number in [0, 1) or \"off\""))},
	{CmdSeed, "N", "random seed for sampling", intArg(0, math.MaxInt64, "a whole number >= 0")},
	{CmdMax, "N|off", "maximum new tokens per answer (off or 0 = no limit)", orOffOrZero(intArg(1, math.MaxInt32, "a number of tokens (0 or \"off\": no limit)"))},
	{CmdThink, "on|off", "let a reasoning model think before it answers, or ask it not to", parseOnOff},
	{CmdSystem, "TEXT", "set the system prompt (empty clears it); restarts the cache", textArg(false, "")},
	{CmdSummarize, "[INSTRUCTION]", "summarize the held message, or the last paste or /read file, in pieces that fit the live window (Esc stops and keeps the pieces done)", textArg(false, "")},
	{CmdPin, "[N]", "keep message N (the #N of its label; default: the last message) in the live window beside the sink: trimming never drops it", optIntArg("a message number (the #N at the right of its label), or nothing for the last message")},
	{CmdUnpin, "[N]", "release pinned message N (default: the last pinned one), so that trimming may drop it again", optIntArg("a message number (the #N at the right of its label), or nothing for the last pinned message")},
	{CmdClear, "", "start a new conversation", noArg},
	{CmdStats, "", "show cache and speed statistics", noArg},
	{CmdTheme, "NAME", "switch theme", textArg(true, "a theme name")},
	{CmdSave, "[FILE]", "save the conversation (default: the autosave file)", textArg(false, "")},
	{CmdLoad, "FILE", "load a saved conversation", textArg(true, "a file name")},
	{CmdRead, "PATH", "attach a text file to the message (also @PATH in a message)", textArg(true, "a file path")},
	{CmdModel, "", "show the model and its settings", noArg},
	{CmdHelp, "", "list commands and keys", noArg},
	{CmdQuit, "", "quit", noArg},
}

// IsCommand reports whether an input line is a slash command rather than a
// message. A line starting with "//" is a message that starts with "/".
func IsCommand(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "/") && !strings.HasPrefix(t, "//")
}

// ParseCommand parses one slash-command line such as "/kv 64". It is pure:
// the error is one line that names the command and says what was expected.
func ParseCommand(line string) (Command, error) {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, "/") {
		return Command{}, fmt.Errorf("not a command: %q does not start with /", t)
	}
	t = t[1:]
	// The name ends at the first white space of any kind (the editor can
	// hold tabs and newlines too).
	name, arg := t, ""
	if i := strings.IndexFunc(t, unicode.IsSpace); i >= 0 {
		name, arg = t[:i], strings.TrimSpace(t[i:])
	}
	name = strings.ToLower(name)
	if name == "" {
		return Command{}, fmt.Errorf("/: expected a command name (try /help)")
	}
	for _, s := range commandTable {
		if string(s.name) == name {
			c := Command{Name: s.name}
			if err := s.parse(&c, arg); err != nil {
				return Command{}, fmt.Errorf("/%s: %w", name, err)
			}
			return c, nil
		}
	}
	return Command{}, fmt.Errorf("/%s: unknown command (try /help)", name)
}

func parseKV(c *Command, arg string) error {
	if f := strings.Fields(arg); len(f) > 0 && strings.EqualFold(f[0], "bits") {
		switch {
		case len(f) == 2 && (f[1] == "32" || f[1] == "16" || f[1] == "8"):
			c.Bits, _ = strconv.Atoi(f[1])
		default:
			return fmt.Errorf("expected \"bits 32\", \"bits 16\" or \"bits 8\", got %q", arg)
		}
		return nil
	}
	n, err := strconv.ParseInt(arg, 10, 64)
	switch {
	case strings.EqualFold(arg, "off"), err == nil && n == 0:
		// 0 is off, as for --max-kv-size.
		c.Off = true
		return nil
	case err != nil || n < 0 || n > math.MaxInt32:
		return fmt.Errorf("expected a number of tokens (0 or \"off\": no cap) or \"bits 32|16|8\", got %q", arg)
	}
	c.Int = n
	return nil
}

// orOff accepts "off" (any case) besides what parse accepts.
func orOff(parse func(*Command, string) error) func(*Command, string) error {
	return func(c *Command, arg string) error {
		if strings.EqualFold(arg, "off") {
			c.Off = true
			return nil
		}
		return parse(c, arg)
	}
}

// orOffOrZero is orOff that also takes 0 as "off", as the command-line
// flag of the same setting does (--max-tokens 0, --top-p 0), and as /kv 0
// is /kv off.
func orOffOrZero(parse func(*Command, string) error) func(*Command, string) error {
	return orOff(func(c *Command, arg string) error {
		if x, ok := parseFloat(arg); ok && x == 0 {
			c.Off = true
			return nil
		}
		return parse(c, arg)
	})
}

func intArg(lo, hi int64, want string) func(*Command, string) error {
	return func(c *Command, arg string) error {
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("expected %s, got %q", want, arg)
		}
		c.Int = n
		return nil
	}
}

// optIntArg accepts nothing (Int 0) or a positive whole number.
func optIntArg(want string) func(*Command, string) error {
	return func(c *Command, arg string) error {
		if arg == "" {
			return nil
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(arg, "#"), 10, 64)
		if err != nil || n < 1 || n > math.MaxInt32 {
			return fmt.Errorf("expected %s, got %q", want, arg)
		}
		c.Int = n
		return nil
	}
}

func parseFloat(arg string) (float64, bool) {
	x, err := strconv.ParseFloat(arg, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, false
	}
	return x, true
}

// floatArg accepts a finite number for which in returns true.
func floatArg(in func(x float64) bool, want string) func(*Command, string) error {
	return func(c *Command, arg string) error {
		x, ok := parseFloat(arg)
		if !ok || !in(x) {
			return fmt.Errorf("expected %s, got %q", want, arg)
		}
		if x == 0 {
			x = 0 // -0 is 0 ("/temp -0" showed "temperature -0")
		}
		c.Float = x
		return nil
	}
}

func textArg(required bool, want string) func(*Command, string) error {
	return func(c *Command, arg string) error {
		if required && arg == "" {
			return fmt.Errorf("expected %s", want)
		}
		c.Text = arg
		return nil
	}
}

func noArg(c *Command, arg string) error {
	if arg != "" {
		return fmt.Errorf("takes no argument, got %q", arg)
	}
	return nil
}

// HelpText returns the /help listing: one line per command, then the keys.
func HelpText() string {
	var b strings.Builder
	b.WriteString("Commands:\n")
	for _, s := range commandTable {
		left := "/" + string(s.name)
		if s.args != "" {
			left += " " + s.args
		}
		fmt.Fprintf(&b, "  %-16s %s\n", left, s.help)
	}
	b.WriteString("Keys:\n")
	for _, k := range [][2]string{
		{"Enter", "send"},
		{"Alt+Enter, Ctrl+J", "new line"},
		{"Up/Down", "input history (on the first/last line)"},
		{"Tab", "complete a /command"},
		{"Ctrl+E", "expand collapsed pastes in the input"},
		{"Ctrl+O", "show or hide the folded parts of answers (reasoning, piece summaries)"},
		{"Esc", "stop the answer (the partial answer is kept)"},
		{"PgUp/PgDn, wheel", "scroll the conversation (Shift+drag selects text)"},
		{"Ctrl+C twice", "quit"},
	} {
		fmt.Fprintf(&b, "  %-18s %s\n", k[0], k[1])
	}
	b.WriteString("Start a message with // to send a line beginning with /.")
	return b.String()
}

// Complete completes the slash command being typed in line (the whole input).
// It returns the completed line and, when several candidates remain, their
// list for display. themeNames are the candidates for "/theme "; "/kv "
// completes "off" and "bits", "/kv bits " the three precisions.
func Complete(line string, themeNames []string) (string, []string) {
	if !strings.HasPrefix(line, "/") || strings.Contains(line, "\n") {
		return line, nil
	}
	name, arg, hasArg := strings.Cut(line[1:], " ")
	if !hasArg {
		var cands []string
		for _, s := range commandTable {
			if strings.HasPrefix(string(s.name), strings.ToLower(name)) {
				cands = append(cands, string(s.name))
			}
		}
		switch len(cands) {
		case 0:
			return line, nil
		case 1:
			return "/" + cands[0] + " ", nil
		}
		return "/" + commonPrefix(cands), prefixAll("/", cands)
	}
	var pool []string
	arg = strings.TrimLeft(arg, " ")
	switch CommandName(strings.ToLower(name)) {
	case CmdTheme:
		pool = themeNames
	case CmdKV:
		pool = []string{"off", "bits"}
		if w, rest, ok := strings.Cut(arg, " "); ok && strings.EqualFold(w, "bits") {
			pool, arg = []string{"32", "16", "8"}, strings.TrimLeft(rest, " ")
		}
	case CmdMax, CmdTopP, CmdTopK, CmdMinP:
		pool = []string{"off"}
	case CmdThink:
		pool = []string{"on", "off"}
	default:
		return line, nil
	}
	var cands []string
	for _, p := range pool {
		if strings.HasPrefix(p, strings.ToLower(arg)) {
			cands = append(cands, p)
		}
	}
	sort.Strings(cands)
	head := line[:len(line)-len(arg)] // what was typed before the argument
	switch len(cands) {
	case 0:
		return line, nil
	case 1:
		if cands[0] == "bits" {
			return head + "bits ", nil
		}
		return head + cands[0], nil
	}
	return head + commonPrefix(cands), cands
}

func prefixAll(p string, s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = p + x
	}
	return out
}

func commonPrefix(s []string) string {
	if len(s) == 0 {
		return ""
	}
	p := s[0]
	for _, x := range s[1:] {
		for !strings.HasPrefix(x, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}
