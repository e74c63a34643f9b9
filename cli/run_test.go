package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"mlxchat/engine"
	"mlxchat/ui"
)

// tinyWithContext copies the tiny model with max_position_embeddings set
// to n (the context length `run` takes as its default answer cap).
func tinyWithContext(t *testing.T, n int) string {
	t.Helper()
	src := tinyModel(t)
	dst := filepath.Join(t.TempDir(), "tiny")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "config.json" {
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			cfg["max_position_embeddings"] = n
			if tc, ok := cfg["text_config"].(map[string]any); ok {
				tc["max_position_embeddings"] = n
			}
			if b, err = json.Marshal(cfg); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestRunDefaultMaxTokens: without --max-tokens, `run` stops at the
// model's context length and says so on stderr; --max-tokens overrides it.
func TestRunDefaultMaxTokens(t *testing.T) {
	dir := tinyWithContext(t, 48)
	// Greedy, the random tiny model answers "hello" for over 200 tokens
	// without an end-of-turn token (checked with --max-tokens 200).
	code, out, errOut := invoke(t, "", "run", dir, "--prompt", "hello", "--no-loop-detect", "--threads", "2")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(errOut, "decode 48 tokens") || !strings.Contains(errOut, "max_tokens") {
		t.Fatalf("stderr %q: want the answer stopped at the 48-token context length", errOut)
	}
	if !strings.Contains(errOut, "cut at 48 tokens, the default limit") || !strings.Contains(errOut, "--max-tokens") {
		t.Fatalf("stderr %q does not say the default cap was hit", errOut)
	}
	if out == "" {
		t.Fatal("no answer printed")
	}
	code, _, errOut = invoke(t, "", "run", dir, "--prompt", "hello", "--no-loop-detect", "--max-tokens", "5")
	if code != 0 || !strings.Contains(errOut, "decode 5 tokens") || strings.Contains(errOut, "default limit") {
		t.Fatalf("--max-tokens 5: exit %d, stderr %q", code, errOut)
	}
}

// TestDefaultAnswerCap: the cap `run` sets by itself, from the flags and
// the config file as Main parses them: the context length, else 4096;
// none when --max-tokens or the config's max_tokens is given (0 there
// means no limit) and none for --summarize.
func TestDefaultAnswerCap(t *testing.T) {
	zero, five := 0, 5
	tests := []struct {
		name    string
		file    ui.Config
		args    []string
		context int
		want    int
	}{
		{"context length", ui.Config{}, nil, 8192, 8192},
		{"unknown context", ui.Config{}, nil, 0, DefaultRunMaxTokens},
		{"--max-tokens 7", ui.Config{}, []string{"--max-tokens", "7"}, 8192, 0},
		{"--max-tokens 0 is no limit", ui.Config{}, []string{"--max-tokens=0"}, 8192, 0},
		{"config max_tokens 5", ui.Config{MaxTokens: &five}, nil, 8192, 0},
		{"config max_tokens 0 is no limit", ui.Config{MaxTokens: &zero}, nil, 8192, 0},
		{"--summarize", ui.Config{}, []string{"--summarize"}, 8192, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c config
			fs := c.flags()
			c.useDefaults(tc.file.Settings(c.settings()))
			c.maxTokensSet = tc.file.MaxTokens != nil
			if _, err := fs.parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if got := defaultAnswerCap(&c, tc.context); got != tc.want {
				t.Fatalf("default cap %d, want %d", got, tc.want)
			}
		})
	}
}

// TestRunKVBits: --kv-bits 16 and 8 store the KV cache in float16 and
// int8, each with fewer bytes than the one before (float32 by default, or
// --kv-bits 32) for the same prompt; other values are a usage error
// naming the flag.
func TestRunKVBits(t *testing.T) {
	dir := tinyModel(t)
	kv := func(args ...string) string {
		t.Helper()
		code, _, errOut := invoke(t, "", append([]string{"run", dir, "--prompt", "hello there, how are you today?", "--max-tokens", "4", "--no-loop-detect"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		_, after, ok := strings.Cut(errOut, " trimmed, ")
		if !ok {
			t.Fatalf("stats %q lack the kv part", errOut)
		}
		return strings.SplitN(after, " ·", 2)[0]
	}
	full, f32 := parseBytes(t, kv()), parseBytes(t, kv("--kv-bits", "32"))
	f16, q8 := parseBytes(t, kv("--kv-bits", "16")), parseBytes(t, kv("--kv-bits", "8"))
	if f32 != full || f16 >= f32 || q8 >= f16 {
		t.Fatalf("kv bytes: default %.0f, --kv-bits 32 %.0f, 16 %.0f, 8 %.0f: want the default to be 32 and each smaller than the one before", full, f32, f16, q8)
	}
	if code, _, errOut := invoke(t, "", "run", dir, "--prompt", "x", "--kv-bits", "4"); code != 2 || !strings.Contains(errOut, "--kv-bits: want 32, 16 or 8") {
		t.Fatalf("--kv-bits 4: exit %d, stderr %q", code, errOut)
	}
}

// parseBytes reads a humanBytes figure back.
func parseBytes(t *testing.T, s string) float64 {
	t.Helper()
	var x float64
	var unit string
	if _, err := fmt.Sscanf(s, "%g %s", &x, &unit); err != nil {
		t.Fatalf("kv %q: %v", s, err)
	}
	for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if unit == u {
			return x
		}
		x *= 1024
	}
	t.Fatalf("kv %q: unknown unit", s)
	return 0
}

// TestRunSummarize: `run --summarize` summarizes a document far over
// --max-kv-size in pieces, prints the final answer on stdout and the piece
// summaries on stderr (not with --quiet); a missing document is a usage
// error.
func TestRunSummarize(t *testing.T) {
	dir := tinyModel(t)
	var doc strings.Builder
	for i := 0; i < 16; i++ {
		doc.WriteString("The cat sat on the mat and it was happy. The dog ran in the park.\n\n")
	}
	file := writeFile(t, doc.String())
	code, out, errOut := invoke(t, "", "run", dir, "--summarize", "--prompt-file", file, "--prompt", "What happens?", "--max-kv-size", "256", "--no-loop-detect", "--threads", "2")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if strings.TrimSpace(out) == "" {
		t.Fatal("no final answer on stdout")
	}
	if !strings.Contains(errOut, "── piece 1/") || !strings.Contains(errOut, "── piece 2/") {
		t.Fatalf("stderr %q lacks the piece summaries", errOut)
	}
	if strings.Contains(out, "── piece") {
		t.Fatalf("stdout %q holds piece headers", out)
	}
	code, out, errOut = invoke(t, doc.String(), "run", dir, "--summarize", "--max-kv-size", "256", "--no-loop-detect", "--quiet")
	if code != 0 || strings.TrimSpace(out) == "" || errOut != "" {
		t.Fatalf("--quiet from stdin: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var errb bytes.Buffer
	code = Main(t.Context(), []string{"run", dir, "--summarize", "--prompt", "x"}, IO{Stdout: &bytes.Buffer{}, Stderr: &errb, StdinIsTerminal: true})
	if code != 2 || !strings.Contains(errb.String(), "--summarize: no document") {
		t.Fatalf("no document: exit %d, stderr %q", code, errb.String())
	}
	if code, _, errOut := invoke(t, doc.String(), "--summarize", dir); code != 2 || !strings.Contains(errOut, "--summarize is for mlxchat run") {
		t.Fatalf("--summarize in the chat: exit %d, stderr %q", code, errOut)
	}
}

// TestRunSummarizeProgressAndCancel: on a terminal, stderr shows the
// prefill progress and "summarize i/n" in place (never on stdout); an
// interrupt after the first piece summary ends with exit 130, keeps the
// finished piece summaries on stdout (it is not the terminal) and says how
// far it got.
func TestRunSummarizeProgressAndCancel(t *testing.T) {
	dir := tinyModel(t)
	file := writeFile(t, strings.Repeat("The cat sat on the mat and it was happy. The dog ran in the park.\n\n", 24))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out bytes.Buffer
	errw := &cancelOn{mark: "── piece 1/", cancel: cancel}
	code := Main(ctx, []string{"run", dir, "--summarize", "--prompt-file", file, "--max-kv-size", "256", "--no-loop-detect", "--threads", "2"},
		IO{Stdout: &out, Stderr: errw, StderrIsTerminal: true})
	errOut := errw.b.String()
	if code != 130 {
		t.Fatalf("exit %d, stderr %q: want 130 after the interrupt", code, errOut)
	}
	for _, want := range []string{"\r\x1b[Ksummarize 1/", "\r\x1b[Ksummarize 1/", " · prefill 0/", "stopped after ", " pieces (bytes 0-", "no combined answer", "cancelled"} {
		if !strings.Contains(errOut, want) {
			t.Fatalf("stderr %q lacks %q", errOut, want)
		}
	}
	if !strings.HasPrefix(out.String(), "── piece 1/") || strings.Contains(out.String(), "\x1b") {
		t.Fatalf("stdout %q: want the finished piece summaries, no progress", out.String())
	}
}

// TestRunPrefillProgress: a plain run on a terminal shows the prefill
// progress on stderr and erases it before the answer; off a terminal
// stderr has only the stats.
func TestRunPrefillProgress(t *testing.T) {
	dir := tinyModel(t)
	prompt := strings.Repeat("a long prompt of many words ", 20)
	for _, tty := range []bool{true, false} {
		var out, errb bytes.Buffer
		code := Main(t.Context(), []string{"run", dir, "--prompt", prompt, "--prefill-chunk-size", "32", "--max-tokens", "3", "--no-loop-detect"},
			IO{Stdout: &out, Stderr: &errb, StderrIsTerminal: tty})
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, errb.String())
		}
		shown := strings.Contains(errb.String(), "\r\x1b[Kprefill 0/") && strings.Contains(errb.String(), "\r\x1b[Kprefill 1/")
		if shown != tty || strings.Contains(out.String(), "\x1b") {
			t.Fatalf("terminal %v: stderr %q, stdout %q", tty, errb.String(), out.String())
		}
		if tty && !strings.Contains(errb.String(), " tok/s\r\x1b[K") {
			t.Fatalf("stderr %q: the progress line is not erased", errb.String())
		}
	}
}

// cancelOn records what is written and cancels once mark has appeared (an
// interrupt at that point).
type cancelOn struct {
	mu     sync.Mutex
	b      bytes.Buffer
	mark   string
	cancel func()
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.b.Write(p)
	if strings.Contains(c.b.String(), c.mark) {
		c.cancel()
	}
	return n, err
}

// TestStatusLine: progress is drawn in place and erased before the answer;
// off (stderr not a terminal) nothing is written.
func TestStatusLine(t *testing.T) {
	var b bytes.Buffer
	s := &statusLine{w: &b, on: true}
	s.show("prefill 1/3 chunks")
	s.prefix = "summarize 2/9"
	s.show("prefill 2/3 chunks")
	s.clear()
	s.clear()
	want := "\r\x1b[Kprefill 1/3 chunks\r\x1b[Ksummarize 2/9 · prefill 2/3 chunks\r\x1b[K"
	if b.String() != want {
		t.Fatalf("status line wrote %q, want %q", b.String(), want)
	}
	b.Reset()
	narrow := &statusLine{w: &b, on: true, width: 8, prefix: "summarize 2/9"}
	narrow.show("prefill")
	if b.String() != "\r\x1b[Ksummari" {
		t.Fatalf("a line wider than the terminal wrote %q, want it cut to 7 columns", b.String())
	}
	b.Reset()
	off := &statusLine{w: &b}
	off.show("x")
	off.clear()
	if b.Len() != 0 {
		t.Fatalf("an off status line wrote %q", b.String())
	}
	if title := pieceTitle(engine.SummaryPiece{Phase: engine.PhaseMap, Piece: 3, Pieces: 9, SourceStart: 10, SourceEnd: 20, Reason: engine.DoneMaxTokens}, 90); title != "── piece 3/9 · bytes 10-20 of 90 · cut at the answer room ──" {
		t.Fatalf("piece title %q", title)
	}
}

// TestRunRefusesBinaryInput: `run` gives the model only text, checked as
// the chat's /read checks it (textinput): a prompt file or stdin with a
// NUL byte or invalid UTF-8, one over 32 MiB or a directory is a one-line
// usage error naming the file (or stdin) and what was expected, before
// any model is loaded; the same holds for --summarize's document.
func TestRunRefusesBinaryInput(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bin := file("a.out", "\x7fELF\x00\x01\x02")
	latin1 := file("latin1.txt", "caf\xe9 au lait")
	huge := file("huge.txt", "")
	if err := os.Truncate(huge, 33<<20); err != nil {
		t.Fatal(err)
	}
	const model = "./no/such/model" // never reached: the input is refused first
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"NUL byte", "", []string{"run", model, "--prompt-file", bin},
			"mlxchat run: --prompt-file " + bin + " is not a text file (a NUL byte at offset 4), expected UTF-8 text"},
		{"invalid UTF-8", "", []string{"run", model, "--prompt-file", latin1},
			"mlxchat run: --prompt-file " + latin1 + " is not a UTF-8 text file (an invalid byte at offset 3)"},
		{"huge file", "", []string{"run", model, "--prompt-file", huge},
			"mlxchat run: --prompt-file " + huge + " is 33.0 MiB, expected at most 32.0 MiB of text"},
		{"directory", "", []string{"run", model, "--prompt-file", dir},
			"mlxchat run: --prompt-file " + dir + " is a directory, expected a text file"},
		{"missing file", "", []string{"run", model, "--prompt-file", filepath.Join(dir, "nope.txt")},
			"mlxchat run: --prompt-file " + filepath.Join(dir, "nope.txt") + ": no such file or directory"},
		{"binary stdin", "hi\x00there", []string{"run", model},
			"mlxchat run: stdin is not a text file (a NUL byte at offset 2), expected UTF-8 text"},
		{"binary stdin as -", "\xff\xfeh\x00", []string{"run", model, "--prompt-file", "-"},
			"mlxchat run: stdin is not a text file (a NUL byte at offset 3), expected UTF-8 text"},
		{"huge stdin", strings.Repeat("a", 32<<20+1), []string{"run", model},
			"mlxchat run: stdin is over 32.0 MiB, expected at most 32.0 MiB of text"},
		{"binary document", "", []string{"run", model, "--summarize", "--max-kv-size", "64", "--prompt-file", bin},
			"mlxchat run: --prompt-file " + bin + " is not a text file (a NUL byte at offset 4), expected UTF-8 text"},
		{"binary document on stdin", "\x00", []string{"run", model, "--summarize", "--max-kv-size", "64"},
			"mlxchat run: stdin is not a text file (a NUL byte at offset 0), expected UTF-8 text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := invoke(t, tc.stdin, tc.args...)
			if code != 2 || out != "" || errOut != tc.want+"\n" {
				t.Fatalf("exit %d, stdout %q, stderr %q\nwant exit 2 and the one line %q", code, out, errOut, tc.want)
			}
		})
	}
	// Text with a byte order mark and CRLF line ends is text.
	prompt, err := readPrompt(&config{promptFile: file("crlf.txt", "\uFEFFline one\r\nline two\r\n")}, IO{})
	if err != nil || prompt != "line one\nline two\n" {
		t.Fatalf("CRLF prompt file: %q, %v", prompt, err)
	}
}

// TestRunSummarizeCapTooSmall: when --max-kv-size leaves no room for
// pieces of the document, run says so in its own terms: the flags to
// change, not the chat's "clear the conversation".
func TestRunSummarizeCapTooSmall(t *testing.T) {
	dir := tinyModel(t)
	doc := writeFile(t, strings.Repeat("The cat sat on the mat. ", 200))
	code, out, errOut := invoke(t, "", "run", dir, "--summarize", "--prompt-file", doc, "--max-kv-size", "24", "--threads", "1")
	line := strings.TrimSuffix(errOut, "\n")
	if code != 2 || out != "" || strings.Contains(line, "\n") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want exit 2 and one line", code, out, errOut)
	}
	// The cap shrinks the answers to the least room first, so shorter
	// answers (--max-tokens) are no way out here.
	for _, want := range []string{"mlxchat run: --summarize: --max-kv-size 24 leaves ", " tokens for pieces of the document, want at least ", "(chat template, --system, --prompt)",
		"each answer keeps room for 16; raise --max-kv-size, or shorten --prompt or --system"} {
		if !strings.Contains(line, want) {
			t.Errorf("stderr %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "conversation") || strings.Contains(line, "--max-tokens") {
		t.Errorf("stderr %q speaks of a conversation, which run does not have, or of --max-tokens", line)
	}
}

// TestSummarizeRoomWording: run's wording of the engine's error names the
// cap as given and only the flags that can help.
func TestSummarizeRoomWording(t *testing.T) {
	for _, tc := range []struct {
		maxKV int
		e     engine.SummarizeRoomError
		want  string
	}{
		{24, engine.SummarizeRoomError{PromptTokens: 39, AnswerTokens: 16, Cap: 24, Left: 0, Need: 137, ShortestAnswers: true},
			"--summarize: --max-kv-size 24 leaves 0 tokens for pieces of the document, want at least 137: the prompt around it (chat template, --system, --prompt) takes 39 and each answer keeps room for 16; raise --max-kv-size, or shorten --prompt or --system"},
		{300, engine.SummarizeRoomError{PromptTokens: 39, AnswerTokens: 90, Cap: 300, Left: 171, Need: 200},
			"--summarize: --max-kv-size 300 leaves 171 tokens for pieces of the document, want at least 200: the prompt around it (chat template, --system, --prompt) takes 39 and each answer keeps room for 90; raise --max-kv-size, or shorten --prompt or --system, or lower --max-tokens"},
		{0, engine.SummarizeRoomError{PromptTokens: 100, AnswerTokens: 16, Cap: 128, Left: 12, Need: 137, ShortestAnswers: true},
			"--summarize: the model's 128-token context (--max-kv-size is off) leaves 12 tokens for pieces of the document, want at least 137: the prompt around it (chat template, --system, --prompt) takes 100 and each answer keeps room for 16; shorten --prompt or --system"},
	} {
		if got := summarizeRoom(&config{maxKV: tc.maxKV}, &tc.e).Error(); got != tc.want {
			t.Errorf("max-kv %d:\n got %q\nwant %q", tc.maxKV, got, tc.want)
		}
	}
}
