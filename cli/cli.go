package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"mlxchat/engine"
	"mlxchat/ui"
)

// Version is the release version; builds may set it with
// -ldflags "-X mlxchat/cli.Version=v1.2.3". When empty, the VCS revision
// recorded by the Go toolchain is shown.
var Version = ""

// IO is where a command reads and writes.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// StdinIsTerminal says stdin is interactive: run then refuses to wait
	// for a prompt on it, and the chat may start.
	StdinIsTerminal bool
	// StderrIsTerminal makes run draw its progress line on Stderr as on a
	// terminal (tests; a *os.File Stderr on a tty is detected anyway).
	StderrIsTerminal bool
	// ForceTUI starts the chat even when stdin is not a terminal (tests
	// that drive the TUI through Stdin and Stdout).
	ForceTUI bool
}

// config holds every flag's value.
type config struct {
	maxKV, chunk, topK, maxTokens, threads, repWindow, decode, sink int
	bandwidthMB                                                     int
	temp, topP, minP, repPenalty                                    float64
	seed                                                            uint64
	system, backend, theme, configPath, promptFile, prompt          string
	keepSystem, noLoop, help, quiet, version, summarize, profile    bool
	promptLens                                                      []int
	stops                                                           []string
	stopsFromFlags                                                  bool
	// maxTokensSet says --max-tokens (or the config's max_tokens) was
	// given: run then takes 0 as "no limit" instead of its default cap.
	maxTokensSet bool
	kvBits       int // --kv-bits: 32, 16 or 8 (0 = the engine's default, 32)
	// maxKVFrom names where maxKV came from, for errors: "--max-kv-size"
	// or "config PATH: max_kv_size".
	maxKVFrom string
	think     bool // --think (default true); false sets engine.Settings.NoThinking
}

// flags registers every flag on a new flagSet bound to c.
func (c *config) flags() *flagSet {
	d := engine.DefaultSettings()
	c.chunk = d.PrefillChunk
	c.repWindow = d.RepetitionWindow
	c.sink = d.SinkTokens
	c.think = true
	c.backend = ""
	c.promptLens = []int{128, 512, 2048}
	c.decode = 64
	f := newFlagSet()
	f.Int(&c.maxKV, "max-kv-size", 0, "0 (off) or a positive number of tokens", "cap on live KV keys, at most the model's context length; older tokens after the attention sink are trimmed (0 = off: the model's context length is the cap)")
	setMaxKV := f.specs["max-kv-size"].set
	f.specs["max-kv-size"].set = func(v string) error {
		c.maxKVFrom = "--max-kv-size"
		return setMaxKV(v)
	}
	f.Int(&c.chunk, "prefill-chunk-size", 1, "a positive number of tokens", "prompt tokens per prefill forward pass (default 512)")
	f.Float(&c.temp, "temp", 0, 100, "a number from 0 to 100", "sampling temperature; 0 = greedy (default 0)")
	f.Float(&c.topP, "top-p", 0, 1, "a number from 0 to 1", "nucleus sampling mass; 0 or 1 = off")
	f.Int(&c.topK, "top-k", 0, "0 (off) or a positive count", "keep only the K most likely tokens; 0 = off")
	f.Float(&c.minP, "min-p", 0, 1, "a number from 0 to 1", "drop tokens below min-p times the top probability; 0 = off")
	f.Float(&c.repPenalty, "repetition-penalty", 0, 100, "a number from 0 to 100 (1 = off)", "penalize tokens seen in the last --repetition-window tokens; 0 or 1 = off")
	f.Int(&c.repWindow, "repetition-window", 1, "a positive number of tokens", "tokens the repetition penalty looks back over (default 64)")
	f.Uint(&c.seed, "seed", "a non-negative integer", "random seed for sampling (same seed, same answer)")
	f.Int(&c.maxTokens, "max-tokens", 0, "0 (no limit) or a positive count", "stop the answer after this many tokens; 0 = no limit (run without the flag: the model's context length, else 4096)")
	setMaxTokens := f.specs["max-tokens"].set
	f.specs["max-tokens"].set = func(v string) error {
		c.maxTokensSet = true
		return setMaxTokens(v)
	}
	f.add(&flagSpec{name: "stop", want: "a non-empty string", usage: "stop the answer when this text appears (repeatable)", set: func(v string) error {
		if v == "" {
			return fmt.Errorf("want a non-empty string")
		}
		if !c.stopsFromFlags {
			c.stops, c.stopsFromFlags = nil, true // flags replace the config's list
		}
		c.stops = append(c.stops, v)
		return nil
	}})
	f.String(&c.system, "system", nil, "a string", "system prompt")
	f.Int(&c.sink, "sink-tokens", 1, "a positive number of tokens", "tokens at the front that trimming never drops (default 4)")
	f.Bool(&c.keepSystem, "keep-system", "never trim the system prompt (the sink covers it)")
	f.Bool(&c.noLoop, "no-loop-detect", "do not stop answers that loop")
	f.Bool(&c.think, "think", "let a reasoning model (Qwen 3) think before it answers; --think=false asks its chat template for no reasoning (default true)")
	f.String(&c.backend, "backend", []string{"cpu", "metal", "vulkan"}, "cpu, metal or vulkan", "compute backend (default metal on Apple silicon, else cpu)")
	f.add(&flagSpec{name: "kv-bits", want: "32, 16 or 8", usage: "KV cache storage: 32 (float32, default), 16 (float16: half the memory) or 8 (int8 with a scale per token and head: a little over a quarter); 16 and 8 add a float32 copy of one layer's keys and values and decode into it at every step", set: func(v string) error {
		switch strings.TrimSpace(v) {
		case "32":
			c.kvBits = 32
		case "16":
			c.kvBits = 16
		case "8":
			c.kvBits = 8
		default:
			return fmt.Errorf("want 32, 16 or 8")
		}
		return nil
	}})
	f.Int(&c.threads, "threads", 0, "0 (all cores) or a positive count", "CPU threads; 0 = all cores")
	f.String(&c.theme, "theme", nil, "a theme name", "TUI colour theme (dark, light, high-contrast)")
	f.String(&c.configPath, "config", nil, "a file path", "JSON config file with defaults for every command (max_kv_size, temp, ...; flags override them) and the chat's theme (default $XDG_CONFIG_HOME/mlxchat/config.json)")
	f.String(&c.promptFile, "prompt-file", nil, "a file path", "run: read the prompt from this file ('-' = stdin)")
	f.String(&c.prompt, "prompt", nil, "a string", "run: the prompt text")
	f.Bool(&c.quiet, "quiet", "run: print only the answer, no stats")
	f.Bool(&c.summarize, "summarize", "run: summarize the document of --prompt-file (or stdin) in pieces that fit --max-kv-size and print the combined answer (piece summaries on stderr); --prompt is the instruction")
	f.IntList(&c.promptLens, "prompt-lens", "comma-separated positive token counts, e.g. 128,512,2048", "bench: prompt lengths to measure")
	c.bandwidthMB = 256
	f.Int(&c.bandwidthMB, "bandwidth-mb", 1, "a positive number of MiB", "bench: buffer size of the memory-bandwidth probe (default 256)")
	f.Int(&c.decode, "decode", 1, "a positive number of tokens", "bench: tokens to decode per prompt length")
	f.Bool(&c.profile, "profile", "bench: afterwards decode again at the first prompt length with GPU timestamps and print where a token's GPU time goes, per kernel (GPU backends)")
	f.Bool(&c.help, "help", "show this help")
	f.Bool(&c.version, "version", "print the version")
	f.specs["h"] = f.specs["help"]
	return f
}

// settings builds the engine settings from the flags.
func (c *config) settings() engine.Settings {
	s := engine.Settings{
		MaxKV:             c.maxKV,
		PrefillChunk:      c.chunk,
		Temperature:       c.temp,
		TopK:              c.topK,
		TopP:              c.topP,
		MinP:              c.minP,
		RepetitionPenalty: c.repPenalty,
		RepetitionWindow:  c.repWindow,
		Seed:              c.seed,
		MaxTokens:         c.maxTokens,
		System:            c.system,
		SinkTokens:        c.sink,
		KeepSystem:        c.keepSystem,
		NoLoopDetect:      c.noLoop,
		NoThinking:        !c.think,
		KVBits:            c.kvBits,
	}
	if len(c.stops) > 0 {
		s.StopStrings = append([]string(nil), c.stops...)
	}
	return s
}

// useDefaults sets the flag values from s (the config file's defaults), so
// flags parsed afterwards override them.
func (c *config) useDefaults(s engine.Settings) {
	c.maxKV, c.chunk, c.temp, c.topK, c.topP, c.minP = s.MaxKV, s.PrefillChunk, s.Temperature, s.TopK, s.TopP, s.MinP
	c.repPenalty, c.repWindow, c.seed, c.maxTokens = s.RepetitionPenalty, s.RepetitionWindow, s.Seed, s.MaxTokens
	c.system, c.sink, c.keepSystem, c.noLoop, c.kvBits = s.System, s.SinkTokens, s.KeepSystem, s.NoLoopDetect, s.KVBits
	c.think = !s.NoThinking
	c.stops = append([]string(nil), s.StopStrings...)
}

// configFile loads --config (or the default config file, which may be
// absent).
func (c *config) configFile() (ui.Config, error) {
	return ui.LoadConfig(c.configFilePath(), c.configPath != "")
}

// configFilePath is --config, else the default config file's path.
func (c *config) configFilePath() string {
	if c.configPath != "" {
		return c.configPath
	}
	return ui.DefaultConfigPath()
}

// checkMaxKV refuses a --max-kv-size (or the config's max_kv_size) above
// the model's context length (max_position_embeddings; 0 = unknown), as
// the chat's /kv refuses one: a live window wider than the positions the
// model was trained on cannot help, and 0 already makes the whole context
// the live window. The error names the flag or the config file and key,
// the value and the limit.
func (c *config) checkMaxKV(contextLength int) error {
	if contextLength <= 0 || c.maxKV <= contextLength {
		return nil
	}
	from, fix := "--max-kv-size", fmt.Sprintf("use --max-kv-size %d or less, or --max-kv-size 0", contextLength)
	if c.maxKVFrom != "" && c.maxKVFrom != from {
		from, fix = c.maxKVFrom, fmt.Sprintf("set max_kv_size to %d or less, or to 0", contextLength)
	}
	return fmt.Errorf("%s %d: above the model's context length of %s tokens (max_position_embeddings); %s for the whole context",
		from, c.maxKV, groupDigits(contextLength), fix)
}

// groupDigits writes n >= 0 with thousands separators, as the chat does:
// 4096 -> "4,096".
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// usageError is a mistake in how mlxchat was called (exit code 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// Main runs mlxchat with args (the program name excluded) and returns the
// process exit code: 0 success, 1 failure, 2 bad usage, 130 interrupted.
func Main(ctx context.Context, args []string, io IO) int {
	// Flags are parsed twice: first to find --config, then over the
	// config file's defaults so that every flag given overrides them.
	var c config
	fs := c.flags()
	pos, err := fs.parse(args)
	if err != nil {
		fmt.Fprintf(io.Stderr, "mlxchat: %v\n", err)
		return 2
	}
	if c.help || (len(pos) > 0 && pos[0] == "help") {
		fmt.Fprint(io.Stdout, usage(fs))
		return 0
	}
	if c.version {
		if len(pos) > 0 && !(len(pos) == 1 && pos[0] == "version") {
			fmt.Fprintf(io.Stderr, "mlxchat: --version takes no arguments, got %s\n", strings.Join(pos, " "))
			return 2
		}
		fmt.Fprintln(io.Stdout, versionString())
		return 0
	}
	if len(pos) == 0 {
		fmt.Fprint(io.Stderr, usage(fs))
		return 2
	}
	cmd := "chat"
	switch pos[0] {
	case "version", "run", "bench", "chat", "list", "rm":
		cmd, pos = pos[0], pos[1:]
	}
	switch cmd {
	case "list":
		if len(pos) > 0 {
			fmt.Fprintf(io.Stderr, "mlxchat list: takes no arguments, got %s\n", strings.Join(pos, " "))
			return 2
		}
		if err := listCmd(io.Stdout); err != nil {
			fmt.Fprintf(io.Stderr, "mlxchat list: %v\n", err)
			return 1
		}
		return 0
	case "rm":
		if len(pos) != 1 {
			fmt.Fprintf(io.Stderr, "mlxchat rm: want one MODEL (a name like gemma3n-e2b-4bit, a repo id or a folder of the model caches), got %d arguments\n", len(pos))
			return 2
		}
		if err := rmCmd(ctx, pos[0], io.Stdout); err != nil {
			fmt.Fprintf(io.Stderr, "mlxchat rm: %v\n", err)
			return 1
		}
		return 0
	}
	if cmd != "version" {
		file, err := c.configFile()
		if err != nil {
			fmt.Fprintf(io.Stderr, "mlxchat: %v\n", err)
			return 2
		}
		var withFile config
		fs = withFile.flags()
		withFile.useDefaults(file.Settings(withFile.settings()))
		withFile.maxTokensSet = file.MaxTokens != nil // the file's max_tokens counts as given
		if file.MaxKV != nil {
			withFile.maxKVFrom = "config " + c.configFilePath() + ": max_kv_size"
		}
		if _, err := fs.parse(args); err != nil {
			fmt.Fprintf(io.Stderr, "mlxchat: %v\n", err)
			return 2
		}
		c = withFile
	}
	if err := c.settings().Validate(); err != nil {
		fmt.Fprintf(io.Stderr, "mlxchat: --%v\n", err)
		return 2
	}
	if err := checkFlagsFor(cmd, args); err != nil {
		fmt.Fprintf(io.Stderr, "mlxchat: %v\n", err)
		return 2
	}
	switch cmd {
	case "version":
		if len(pos) > 0 {
			fmt.Fprintf(io.Stderr, "mlxchat version: takes no arguments, got %s\n", strings.Join(pos, " "))
			return 2
		}
		fmt.Fprintln(io.Stdout, versionString())
		return 0
	}
	if len(pos) != 1 {
		if len(pos) == 0 {
			fmt.Fprintf(io.Stderr, "mlxchat %s: missing MODEL (a name like gemma3n-e2b-4bit or a model directory)\n", cmd)
		} else {
			fmt.Fprintf(io.Stderr, "mlxchat %s: want one MODEL, got %d arguments: %s\n", cmd, len(pos), strings.Join(pos, " "))
		}
		return 2
	}
	model := pos[0]
	switch cmd {
	case "run":
		err = runCmd(ctx, &c, model, io)
	case "bench":
		err = benchCmd(ctx, &c, model, io)
	default:
		err = chatCmd(ctx, &c, model, io)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.Canceled):
		return 130
	case errors.As(err, new(usageError)):
		fmt.Fprintf(io.Stderr, "mlxchat %s: %v\n", cmd, err)
		return 2
	default:
		fmt.Fprintf(io.Stderr, "mlxchat %s: %v\n", cmd, err)
		return 1
	}
}

// usageErr marks err as a usage error (exit code 2).
func usageErr(err error) error { return usageError{err} }

// commandFlags lists the flags only some subcommands accept.
var commandFlags = map[string][]string{
	"prompt-file":  {"run"},
	"prompt":       {"run"},
	"quiet":        {"run"},
	"summarize":    {"run"},
	"prompt-lens":  {"bench"},
	"decode":       {"bench"},
	"bandwidth-mb": {"bench"},
	"profile":      {"bench"},
	"theme":        {"chat"},
}

// checkFlagsFor rejects a flag given to a subcommand that ignores it.
func checkFlagsFor(cmd string, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		cmds, limited := commandFlags[name]
		if !limited {
			continue
		}
		ok := false
		for _, c := range cmds {
			ok = ok || c == cmd
		}
		if !ok {
			return fmt.Errorf("flag --%s is for mlxchat %s, not %s", name, strings.Join(cmds, "/"), cmd)
		}
	}
	return nil
}

// versionString is what `mlxchat --version` prints, from this binary's
// build information (see versionLine).
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return versionLine(Version, bi)
}

// versionLine is the version line for the release version (Version; ""
// is "devel") and the build information bi (nil: none): "mlxchat devel
// (rev 0655c6157a4e, modified, go1.26.8, linux/amd64)". The revision and
// whether the tree had uncommitted changes ("modified") are the
// vcs.revision and vcs.modified that `go build` records in a git checkout;
// without them (go run, -buildvcs=false, a git worktree, whose .git is a
// file the toolchain does not follow) the line says "rev unknown".
func versionLine(version string, bi *debug.BuildInfo) string {
	if version == "" {
		version = "devel"
	}
	rev, modified := "", false
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	parts := []string{"rev unknown"}
	if rev != "" {
		parts = []string{"rev " + rev[:min(12, len(rev))]}
		if modified {
			parts = append(parts, "modified")
		}
	}
	parts = append(parts, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("mlxchat %s (%s)", version, strings.Join(parts, ", "))
}

func usage(fs *flagSet) string {
	return `mlxchat: chat with a local LLM in the terminal

Usage:
  mlxchat [flags] MODEL                 open the chat (downloads MODEL if missing)
  mlxchat run MODEL [flags]             print the answer to a prompt (--prompt, --prompt-file or stdin), stats on stderr
  mlxchat run MODEL --summarize [flags] summarize a document (--prompt-file or stdin) of any length in pieces under
                                        --max-kv-size; --prompt is the instruction
  mlxchat bench MODEL [flags]           measure prefill and decode speed
  mlxchat list                          list the models in the Hugging Face cache and the data dir
  mlxchat rm MODEL                      remove a model from those caches (every copy; says what it removed)
  mlxchat version, mlxchat --version    print the version
  mlxchat help                          show this help

MODEL is a name (gemma3n-e2b-4bit), a Hugging Face repo (mlx-community/gemma-3n-E2B-it-4bit)
or a path to an MLX model directory.

Flags:
` + fs.usage()
}
