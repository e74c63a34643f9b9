package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adrg/xdg"

	"mlxchat/engine"
	"mlxchat/engine/enginetest"
	"mlxchat/metal"
	"mlxchat/tensor/cpu"
	"mlxchat/ui"
)

var tiny struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	// The user's own config file must not change what the tests see: the
	// default config path points into an empty temporary folder.
	cfgHome, err := os.MkdirTemp("", "mlxchat-cli-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", cfgHome)
	xdg.Reload()
	code := m.Run()
	if tiny.dir != "" {
		os.RemoveAll(tiny.dir)
	}
	os.RemoveAll(cfgHome)
	os.Exit(code)
}

// tinyModel writes the tiny Gemma 3n model directory once per test binary.
func tinyModel(t *testing.T) string {
	t.Helper()
	tiny.once.Do(func() {
		tiny.dir, tiny.err = os.MkdirTemp("", "mlxchat-cli-tiny-")
		if tiny.err == nil {
			tiny.err = enginetest.WriteTinyModel(filepath.Join(tiny.dir, "tiny"), 4, 7)
		}
	})
	if tiny.err != nil {
		t.Fatal(tiny.err)
	}
	return filepath.Join(tiny.dir, "tiny")
}

// invoke runs Main in-process.
func invoke(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, IO{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// engineAnswer is the answer the engine gives directly, for comparison.
func engineAnswer(t *testing.T, dir, prompt string, s engine.Settings) string {
	t.Helper()
	be := cpu.New(2)
	defer be.Close()
	b, err := engine.LoadBundle(dir, be, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e, err := engine.FromBundle(b, engine.Options{Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(context.Background())
	defer e.Close()
	id := e.Submit(engine.Generate{Conversation: []engine.Message{{Role: engine.RoleUser, Content: prompt}}})
	for ev := range e.Events() {
		switch v := ev.(type) {
		case engine.Done:
			if v.ID == id {
				return v.Text
			}
		case engine.Error:
			t.Fatal(v.Err)
		}
	}
	t.Fatal("engine closed without an answer")
	return ""
}

func TestRunPrintsAnswerAndStats(t *testing.T) {
	dir := tinyModel(t)
	prompt := "hello the world"
	want := engineAnswer(t, dir, prompt, engine.Settings{MaxTokens: 12, NoLoopDetect: true, Seed: 5, Temperature: 0.8})
	tests := []struct {
		name  string
		stdin string
		args  []string
	}{
		{"--prompt", "", []string{"run", dir, "--prompt", prompt}},
		{"flags first, stdin", prompt, []string{"--max-tokens=12", "run", dir}},
		{"--prompt-file", "", []string{"run", "--prompt-file", writeFile(t, prompt), dir}},
		{"--prompt-file -", prompt, []string{"run", dir, "--prompt-file", "-"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, "--max-tokens", "12", "--no-loop-detect", "--seed", "5", "--temp", "0.8", "--threads", "2")
			code, out, errOut := invoke(t, tc.stdin, args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if strings.TrimSuffix(out, "\n") != want {
				t.Fatalf("stdout %q, want the engine's answer %q", out, want)
			}
			if !strings.Contains(errOut, "decode 12 tokens") || !strings.Contains(errOut, "max_tokens") {
				t.Fatalf("stats line %q lacks the decode count or the reason", errOut)
			}
		})
	}
	t.Run("--quiet", func(t *testing.T) {
		code, out, errOut := invoke(t, "", "run", dir, "--prompt", prompt, "--max-tokens", "3", "--quiet")
		if code != 0 || errOut != "" || out == "" {
			t.Fatalf("exit %d, stdout %q, stderr %q; want an answer and a silent stderr", code, out, errOut)
		}
	})
}

func writeFile(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunCancelledKeepsPartialAnswer(t *testing.T) {
	dir := tinyModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	w := &cancelAfter{w: &out, n: 3, cancel: cancel}
	code := Main(ctx, []string{"run", dir, "--prompt", "tell me", "--max-tokens", "500", "--no-loop-detect"},
		IO{Stdout: w, Stderr: &errb})
	if code != 130 {
		t.Fatalf("exit %d (stderr %q), want 130 after the interrupt", code, errb.String())
	}
	if out.Len() == 0 || !strings.Contains(errb.String(), "cancelled") {
		t.Fatalf("partial answer %q, stderr %q: want the partial text kept and a cancelled stats line", out.String(), errb.String())
	}
}

// cancelAfter cancels a context after n writes (an interrupt mid-answer).
type cancelAfter struct {
	w      *bytes.Buffer
	n      int
	cancel func()
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	if c.n--; c.n == 0 {
		c.cancel()
	}
	return c.w.Write(p)
}

func TestBench(t *testing.T) {
	dir := tinyModel(t)
	code, out, errOut := invoke(t, "", "bench", dir, "--prompt-lens", "8,24", "--decode", "4", "--bandwidth-mb", "8", "--max-kv-size", "16", "--prefill-chunk-size", "8")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"prefill tok/s", "roofline", "peak RSS", "bandwidth"} {
		if !strings.Contains(out, want) {
			t.Fatalf("bench output lacks %q:\n%s", want, out)
		}
	}
	for _, n := range []string{"8", "24"} {
		// prompt, prefill tok/s and s, decode, tok/s, roofline, kv, the
		// read bandwidth probed during this row's decode, the peak one
		// probed around it and the roofline against that (CPU).
		m := regexp.MustCompile(`\n +` + n + ` +[0-9.]+ +[0-9.]+ +4 +[0-9.]+ +([0-9.]+) +[0-9.]+ [KMG]?i?B +([0-9.]+) +([0-9.]+) +([0-9.]+)\n`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no result row for prompt length %s (4 decoded tokens, kv, read and peak GB/s, peak roofline):\n%s", n, out)
		}
		for i, what := range []string{"roofline", "read GB/s", "peak GB/s", "peak roofline"} {
			if v, _ := strconv.ParseFloat(m[i+1], 64); v <= 0 {
				t.Fatalf("prompt length %s: %s %s, want a positive measured figure:\n%s", n, what, m[i+1], out)
			}
		}
	}
}

// TestBenchGPU runs bench on the Vulkan backend (lavapipe in CI): the
// roofline is taken against the GPU's copy bandwidth and every row gets
// its launches and syncs per decoded token; --profile adds the decode
// step's GPU time per kernel, whose launches add up to the step's.
func TestBenchGPU(t *testing.T) {
	if be, err := metal.Open("vulkan"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Vulkan device under CI=true: %v", err)
		}
		t.Skipf("no Vulkan device: %v", err)
	} else if c, ok := be.(interface{ Close() error }); ok {
		c.Close()
	}
	dir := tinyModel(t)
	code, out, errOut := invoke(t, "", "bench", dir, "--backend", "vulkan", "--prompt-lens", "8", "--decode", "3", "--bandwidth-mb", "4", "--prefill-chunk-size", "8", "--profile")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, re := range []string{
		`GPU memory bandwidth [0-9.]+ GB/s \(measured: copy kernel`,
		`\n +8 +[0-9.]+ +[0-9.]+ +3 +[0-9.]+ +[0-9.]+ `,
		`prompt 8: dispatches per token [1-9][0-9]* \([0-9]+ layers\), syncs per token 1\.00`,
		`GPU profile of the decode step after a 8-token prompt \(3 steps timed, [1-9][0-9]* launches, [0-9]+ barriers\)`,
		`per token: [0-9.]+ ms in all, [0-9.]+ ms in Sync \(submit, GPU, read-back\), GPU [0-9.]+ ms start to end`,
		`\n  qmv4 [0-9]+x[0-9]+ +[1-9][0-9]* +[0-9.]+ +[0-9.]+ +[0-9.]+%\n`,
		`\n  attnd? +[1-9][0-9]* `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("bench output does not match %q:\n%s", re, out)
		}
	}
	launches, _ := strconv.Atoi(regexp.MustCompile(`steps timed, ([0-9]+) launches`).FindStringSubmatch(out)[1])
	sum := 0
	for _, m := range regexp.MustCompile(`\n  [a-z][a-z0-9]*(?: [0-9]+x[0-9]+| [0-9]+)? +([0-9]+) +[0-9.]+ +[0-9.]+ +[0-9.]+%`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		sum += n
	}
	if sum != launches {
		t.Fatalf("profile rows count %d launches, the step has %d:\n%s", sum, launches, out)
	}
	if code, _, errOut := invoke(t, "", "bench", dir, "--prompt-lens", "8", "--decode", "1", "--profile"); code == 0 || !strings.Contains(errOut, "--profile: backend cpu does not time kernels on the GPU") {
		t.Fatalf("--profile on the CPU backend: exit %d, stderr %q", code, errOut)
	}
}

func TestVersionAndHelp(t *testing.T) {
	if code, out, _ := invoke(t, "", "version"); code != 0 || !strings.HasPrefix(out, "mlxchat ") {
		t.Fatalf("version: exit %d, %q", code, out)
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, _ := invoke(t, "", args...)
		if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "--max-kv-size") {
			t.Fatalf("%v: exit %d, output %q", args, code, out)
		}
	}
	if code, _, errOut := invoke(t, ""); code != 2 || !strings.Contains(errOut, "Usage:") {
		t.Fatalf("no arguments: exit %d, stderr %q", code, errOut)
	}
}

// TestBadUsage: every mistake is one line naming the flag or argument and
// what was expected, with exit code 2 (1 for a model that cannot load).
func TestBadUsage(t *testing.T) {
	dir := tinyModel(t)
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"not a number", []string{"--temp", "warm", "m"}, 2, []string{"--temp", "want a number", `"warm"`}},
		{"negative", []string{"--max-kv-size", "-5", "m"}, 2, []string{"--max-kv-size", "want 0 (off)"}},
		{"out of range", []string{"--top-p=1.5", "m"}, 2, []string{"--top-p", "from 0 to 1"}},
		{"unknown flag", []string{"--tmep", "1", "m"}, 2, []string{"unknown flag --tmep: did you mean --temp?"}},
		{"unknown flag as typed", []string{"-zzz", "m"}, 2, []string{"unknown flag -zzz (see mlxchat --help)"}},
		{"unknown flag with value", []string{"--nope=3", "m"}, 2, []string{"unknown flag --nope (see"}},
		{"missing value", []string{"m", "--seed"}, 2, []string{"--seed needs a value"}},
		{"bad list", []string{"bench", "m", "--prompt-lens", "128,x"}, 2, []string{"--prompt-lens", "comma-separated"}},
		{"max kv under sink", []string{"--max-kv-size", "4", "m"}, 2, []string{"--max-kv-size 4", "sink"}},
		{"bad backend", []string{"--backend", "cuda", "m"}, 2, []string{"--backend", "cpu, metal or vulkan"}},
		{"bad theme", []string{"--theme", "neon", dir}, 2, []string{"--theme", `unknown theme "neon"`, "dark"}},
		{"flag for another command", []string{"--prompt-file", "x", dir}, 2, []string{"--prompt-file is for mlxchat run"}},
		{"missing model", []string{"run"}, 2, []string{"missing MODEL"}},
		{"two models", []string{"run", "a", "b"}, 2, []string{"want one MODEL"}},
		{"no prompt", []string{"run", dir, "--prompt", "  "}, 2, []string{"--prompt: the prompt is empty"}},
		{"empty prompt file", []string{"run", dir, "--prompt-file", writeFile(t, "\n \n")}, 2, []string{"--prompt-file ", "prompt.txt: the prompt is empty"}},
		{"empty stdin", []string{"run", dir, "--prompt-file", "-"}, 2, []string{"the prompt read from stdin is empty"}},
		{"both prompts", []string{"run", dir, "--prompt", "x", "--prompt-file", "y"}, 2, []string{"either --prompt or --prompt-file"}},
		{"missing prompt file", []string{"run", dir, "--prompt-file", "/nonexistent/p.txt"}, 2, []string{"--prompt-file", "no such file"}},
		{"missing model dir", []string{"run", "./no/such/model", "--prompt", "x"}, 1, []string{"no/such/model"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := invoke(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, errOut)
			}
			if out != "" {
				t.Fatalf("stdout %q, want nothing", out)
			}
			if strings.Count(strings.TrimSuffix(errOut, "\n"), "\n") != 0 {
				t.Fatalf("stderr is not one line: %q", errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Fatalf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

func TestUnavailableBackend(t *testing.T) {
	dir := tinyModel(t)
	name := ""
	for _, n := range []string{"metal", "vulkan"} {
		if b, err := metal.Open(n); err != nil {
			name = n
			break
		} else if c, ok := b.(interface{ Close() error }); ok {
			c.Close()
		}
	}
	if name == "" {
		t.Skip("every GPU backend is available here")
	}
	code, _, errOut := invoke(t, "", "run", dir, "--prompt", "x", "--backend", name)
	if code != 2 || !strings.Contains(errOut, "--backend "+name) || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q: want 2 and one line naming --backend %s", code, errOut, name)
	}
}

func TestFlagParser(t *testing.T) {
	var c config
	fs := c.flags()
	pos, err := fs.parse([]string{"-temp", "0.5", "run", "--top-k=5", "M", "--keep-system", "--", "--not-a-flag"})
	if err != nil {
		t.Fatal(err)
	}
	if c.temp != 0.5 || c.topK != 5 || !c.keepSystem {
		t.Fatalf("parsed %+v", c)
	}
	if strings.Join(pos, " ") != "run M --not-a-flag" {
		t.Fatalf("positional %q", pos)
	}
	s := c.settings()
	if s.Temperature != 0.5 || s.TopK != 5 || !s.KeepSystem || s.PrefillChunk != 512 {
		t.Fatalf("settings %+v", s)
	}
}

func TestChatLoadFailureIsOneLine(t *testing.T) {
	code, _, errOut := invoke(t, "", "./no/such/model-dir")
	if code != 1 || !strings.Contains(errOut, "no/such/model-dir") || strings.Count(strings.TrimSuffix(errOut, "\n"), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q: want 1 and one line naming the model", code, errOut)
	}
}

func TestFormatStats(t *testing.T) {
	tests := []struct {
		name  string
		s     engine.Stats
		cache engine.CacheState
		want  string
	}{
		{"fresh", engine.Stats{PromptTokens: 10, PrefillTokens: 10, TimeToFirstToken: 5e6}, engine.CacheState{}, "prompt 10 tokens, 0.0 tok/s · decode 0 tokens, 0.0 tok/s · first token 5ms"},
		{"reused", engine.Stats{PromptTokens: 10, ReusedTokens: 6, PrefillTokens: 4}, engine.CacheState{}, "prompt 10 tokens (6 cached), "},
		{"continued after trims", engine.Stats{PromptTokens: 300, ReusedTokens: 280, ReusedTrimmed: 200, PrefillTokens: 20}, engine.CacheState{}, "prompt 300 tokens (280 cached, 200 of them trimmed), "},
		{"stopped mid-prefill", engine.Stats{PromptTokens: 900, ReusedTokens: 100, PrefillTokens: 64}, engine.CacheState{}, "prompt 900 tokens (100 cached; 64 of 800 prefilled), 0.0 tok/s · decode 0 tokens, 0.0 tok/s · first token - ·"},
		{"trimmed under a cap", engine.Stats{PromptTokens: 1509, PrefillTokens: 1509, KVBytes: 1 << 20}, engine.CacheState{Live: 600, Max: 600, Seen: 1513, Trimmed: 913},
			"prompt 1509 tokens, 0.0 tok/s · decode 0 tokens, 0.0 tok/s · first token - · kv 600/600 live, 913 trimmed, 1.0 MiB ·"},
		{"no cap", engine.Stats{PromptTokens: 10, PrefillTokens: 10, KVBytes: 2048}, engine.CacheState{Live: 12, Seen: 12},
			"prompt 10 tokens, 0.0 tok/s · decode 0 tokens, 0.0 tok/s · first token - · kv 12/∞ live, 0 trimmed, 2 KiB ·"},
		// Sizes read as in the chat's status line (bytesize.Format), not
		// "512.0 KiB".
		{"sizes as in the chat", engine.Stats{PromptTokens: 10, PrefillTokens: 10, KVBytes: 512 << 10, MemoryBytes: 3565158}, engine.CacheState{Live: 12, Seen: 12},
			"prompt 10 tokens, 0.0 tok/s · decode 0 tokens, 0.0 tok/s · first token - · kv 12/∞ live, 0 trimmed, 512 KiB · rss 3.4 MiB ·"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatStats(tc.s, tc.cache, engine.DoneStop); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("formatStats = %q, want prefix %q", got, tc.want)
			}
		})
	}
}

// TestConfigFile: run and bench take their generation defaults from the
// config file (--config or the default path); flags override it; a bad
// file is a one-line error naming it and the key.
func TestConfigFile(t *testing.T) {
	dir := tinyModel(t)
	write := func(path, body string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfg := write(filepath.Join(t.TempDir(), "c.json"), `{"max_tokens": 3, "no_loop_detect": true, "temp": 0.8, "seed": 5}`)
	want3 := engineAnswer(t, dir, "hello", engine.Settings{MaxTokens: 3, NoLoopDetect: true, Seed: 5, Temperature: 0.8})
	tests := []struct {
		name     string
		args     []string
		decoded  string
		wantText string
	}{
		{"--config gives the defaults", []string{"run", dir, "--prompt", "hello", "--config", cfg}, "decode 3 tokens", want3},
		{"a flag overrides the file", []string{"run", dir, "--prompt", "hello", "--config", cfg, "--max-tokens", "5"}, "decode 5 tokens", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := invoke(t, "", tc.args...)
			if code != 0 || !strings.Contains(errOut, tc.decoded) {
				t.Fatalf("exit %d, stderr %q: want %q", code, errOut, tc.decoded)
			}
			if tc.wantText != "" && strings.TrimSuffix(out, "\n") != tc.wantText {
				t.Fatalf("answer %q, want %q (the config's seed and temperature)", out, tc.wantText)
			}
		})
	}
	t.Run("default path", func(t *testing.T) {
		p := write(ui.DefaultConfigPath(), `{"max_tokens": 2, "no_loop_detect": true}`)
		t.Cleanup(func() { os.Remove(p) })
		code, _, errOut := invoke(t, "", "run", dir, "--prompt", "hello")
		if code != 0 || !strings.Contains(errOut, "decode 2 tokens") {
			t.Fatalf("exit %d, stderr %q: want the default config's 2 tokens", code, errOut)
		}
	})
	t.Run("bench", func(t *testing.T) {
		kvOf := func(args ...string) string {
			t.Helper()
			code, out, errOut := invoke(t, "", append([]string{"bench", dir, "--prompt-lens", "24", "--decode", "2", "--bandwidth-mb", "1"}, args...)...)
			if code != 0 {
				t.Fatalf("bench %v: exit %d, stderr %q", args, code, errOut)
			}
			m := regexp.MustCompile(`\n +24 +.* ([0-9.]+ [KMG]?i?B)(?: +[0-9.]+){3}\n`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no result row:\n%s", out)
			}
			return m[1]
		}
		capped := write(filepath.Join(t.TempDir(), "kv.json"), `{"max_kv_size": 16, "prefill_chunk_size": 8}`)
		fromFile, fromFlags, plain := kvOf("--config", capped), kvOf("--max-kv-size", "16", "--prefill-chunk-size", "8"), kvOf()
		if fromFile != fromFlags || fromFile == plain {
			t.Fatalf("kv bytes with the config %s, with the flags %s, uncapped %s: want the config to act like the flags", fromFile, fromFlags, plain)
		}
	})
	bad := []struct {
		name, body string
		want       []string
	}{
		{"bad value", `{"max_kv_size": -3}`, []string{"max_kv_size -3", "want 0 (off)"}},
		{"wrong type", `{"temp": "hot"}`, []string{`"temp" is a JSON string, want a number`}},
		{"unknown key", `{"tmep": 1}`, []string{"unknown key", "tmep", "known keys: theme"}},
		{"not JSON", `max_kv_size=3`, []string{"line 1, column 1: invalid character"}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			p := write(filepath.Join(t.TempDir(), "bad.json"), tc.body)
			for _, cmd := range []string{"run", "bench"} {
				code, out, errOut := invoke(t, "", cmd, dir, "--prompt-file", "-", "--config", p)
				if cmd == "bench" {
					code, out, errOut = invoke(t, "", cmd, dir, "--config", p)
				}
				if code != 2 || out != "" || strings.Count(strings.TrimSuffix(errOut, "\n"), "\n") != 0 || !strings.Contains(errOut, p) {
					t.Fatalf("%s: exit %d, stdout %q, stderr %q: want 2 and one line naming %s", cmd, code, out, errOut, p)
				}
				for _, w := range tc.want {
					if !strings.Contains(errOut, w) {
						t.Fatalf("%s: stderr %q lacks %q", cmd, errOut, w)
					}
				}
			}
		})
	}
	t.Run("missing --config file", func(t *testing.T) {
		code, _, errOut := invoke(t, "", "run", dir, "--prompt", "x", "--config", "/no/such/config.json")
		if code != 2 || !strings.Contains(errOut, "/no/such/config.json") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}

// TestUnreachableHub: an alias that is not on disk fails fast, in one line
// that names where it looked and says the hub is unreachable, both when
// nothing listens and when the hub accepts but never answers.
func TestUnreachableHub(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() { // accept and hold connections without answering
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := refused.Addr().String()
	refused.Close()
	tests := []struct{ name, endpoint string }{
		{"connection refused", "http://" + refusedAddr},
		{"silent hub", "http://" + silent.Addr().String()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HF_ENDPOINT", tc.endpoint)
			t.Setenv("HF_HOME", t.TempDir())
			t.Setenv("HF_HUB_OFFLINE", "")
			start := time.Now()
			_, err := resolveModel(context.Background(), "gemma3n-e2b-4bit", hubClient(200*time.Millisecond, 300*time.Millisecond), nil)
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("took %v to give up", took)
			}
			msg := fmt.Sprint(err)
			for _, want := range []string{"gemma3n-e2b-4bit", "looked in", "hub is unreachable", "local model directory"} {
				if !strings.Contains(msg, want) {
					t.Fatalf("error %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Fatalf("error is not one line: %q", msg)
			}
		})
	}
}

// TestFlagsOverrideConfig: values from the config file are the flags'
// defaults; each flag given replaces its value, --stop replaces the file's
// list and may repeat.
func TestFlagsOverrideConfig(t *testing.T) {
	maxKV, temp, sys, think, bits := 256, 0.5, "from file", false, 8
	file := ui.Config{MaxKV: &maxKV, Temperature: &temp, System: &sys, Stop: []string{"A", "B"}, Think: &think, KVBits: &bits}
	tests := []struct {
		name string
		args []string
		want func(s engine.Settings) bool
	}{
		{"file only", nil, func(s engine.Settings) bool {
			return s.MaxKV == 256 && s.Temperature == 0.5 && s.System == "from file" && strings.Join(s.StopStrings, ",") == "A,B" && s.PrefillChunk == 512 &&
				s.NoThinking && s.KVBits == 8
		}},
		{"--kv-bits overrides kv_bits", []string{"--kv-bits", "16"}, func(s engine.Settings) bool { return s.KVBits == 16 }},
		{"--think overrides think: false", []string{"--think"}, func(s engine.Settings) bool { return !s.NoThinking }},
		{"flags win", []string{"--max-kv-size", "0", "--system", "", "--stop", "X", "--stop", "Y"}, func(s engine.Settings) bool {
			return s.MaxKV == 0 && s.Temperature == 0.5 && s.System == "" && strings.Join(s.StopStrings, ",") == "X,Y"
		}},
	}
	var plain config
	if fs := plain.flags(); plain.settings().NoThinking {
		t.Fatal("thinking is off by default")
	} else if _, err := fs.parse([]string{"--think=false"}); err != nil || !plain.settings().NoThinking {
		t.Fatalf("--think=false: %v, settings %+v", err, plain.settings())
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c config
			fs := c.flags()
			c.useDefaults(file.Settings(c.settings()))
			if _, err := fs.parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if s := c.settings(); !tc.want(s) {
				t.Fatalf("settings %+v", s)
			}
		})
	}
}
