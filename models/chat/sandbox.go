package chat

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// A chat template comes with a downloaded model and is untrusted: Jinja can
// recurse through macros, build huge lists with range() and double strings
// in a loop. A Go stack overflow or an out-of-memory error cannot be
// recovered, and the Jinja library has no limits of its own, so templates
// are compiled and rendered in a child process (this same executable,
// re-run with sandboxEnv set) that runs under the limits below and is
// killed when it overruns them. The parent process never parses a template.
type renderLimits struct {
	// Timeout bounds one compilation or rendering, wall clock.
	Timeout time.Duration
	// MaxMemory bounds the memory the child maps; past it the child exits
	// with exitMemory.
	MaxMemory uint64
	// MaxStack bounds the child's goroutine stack: endless macro recursion
	// ends the child with a stack overflow instead of growing to Go's
	// default 1 GB.
	MaxStack int
	// MaxOutput bounds the rendered prompt, in bytes.
	MaxOutput int
	// MaxRange bounds the length of a range() list.
	MaxRange int64
}

// defaultLimits are the limits of a rendering of a conversation up to a
// few MiB: far above what real templates need (a few milliseconds and a
// few MiB), low enough that a hostile one fails within seconds (string
// doubling at the memory limit in about one). forInput raises the time,
// memory and output limits for longer conversations, since a long paste
// makes a long prompt: rendering a 10 MiB message took 0.7-1.6 s, a 50 MiB
// one 2-3.6 s (the real Gemma 3n, Qwen 3 and Llama 3 templates on the
// shared 2-core development machine).
var defaultLimits = renderLimits{Timeout: 5 * time.Second, MaxMemory: 512 << 20, MaxStack: 16 << 20, MaxOutput: 64 << 20, MaxRange: 1_000_000}

// A conversation of n bytes (message contents and extra variables) may
// need up to n times these of output and memory, and n/inputPerSecond of
// time; forInput takes these when they exceed the defaults.
const (
	outputPerInputByte = 4
	memoryPerInputByte = 32
	inputPerSecond     = 2 << 20
)

// forInput is lim for a conversation of n bytes: each limit at least what
// n needs (see the constants above), sizes in whole MiB.
func (lim renderLimits) forInput(n int) renderLimits {
	const mib = 1 << 20
	lim.MaxOutput = max(lim.MaxOutput, (outputPerInputByte*n+mib-1)/mib*mib)
	lim.MaxMemory = max(lim.MaxMemory, uint64((memoryPerInputByte*n+mib-1)/mib*mib))
	lim.Timeout = max(lim.Timeout, time.Duration(float64(n)/inputPerSecond*float64(time.Second)).Round(time.Second))
	return lim
}

// sandboxEnv, set to "1" in a process's environment, makes the process a
// template renderer: it reads one request from stdin and exits.
const sandboxEnv = "MLXCHAT_CHAT_TEMPLATE_SANDBOX"

// Exit codes of the child.
const (
	exitOK       = 0
	exitTemplate = 1 // the template failed: stdout holds the message
	exitMemory   = 3
	exitProtocol = 4
	exitOutput   = 5
)

func init() {
	// The renderer child is this executable re-run; it must do nothing else.
	if os.Getenv(sandboxEnv) == "1" {
		os.Exit(serveSandbox(os.Stdin, os.Stdout))
	}
}

// renderRequest is what the parent sends the child (gob keeps strings
// byte for byte, invalid UTF-8 included).
type renderRequest struct {
	Limits              renderLimits
	Source              string
	CompileOnly         bool
	Messages            []Message
	AddGenerationPrompt bool
	Special             map[string]string
	NowUnixNano         int64
	NowZone             string
	NowOffset           int
	Extra               map[string]wireValue
}

// wireValue carries one extra template variable with its Go type.
type wireValue struct {
	Kind string // "nil", "bool", "int", "float", "string", "list", "dict"
	B    bool
	I    int64
	F    float64
	S    string
	L    []wireValue
	M    map[string]wireValue
}

func toWire(v any) (wireValue, error) {
	switch x := v.(type) {
	case nil:
		return wireValue{Kind: "nil"}, nil
	case bool:
		return wireValue{Kind: "bool", B: x}, nil
	case int:
		return wireValue{Kind: "int", I: int64(x)}, nil
	case int64:
		return wireValue{Kind: "int", I: x}, nil
	case float64:
		return wireValue{Kind: "float", F: x}, nil
	case string:
		return wireValue{Kind: "string", S: x}, nil
	case []any:
		w := wireValue{Kind: "list", L: make([]wireValue, len(x))}
		for i, e := range x {
			var err error
			if w.L[i], err = toWire(e); err != nil {
				return wireValue{}, err
			}
		}
		return w, nil
	case map[string]any:
		w := wireValue{Kind: "dict", M: make(map[string]wireValue, len(x))}
		for k, e := range x {
			ew, err := toWire(e)
			if err != nil {
				return wireValue{}, err
			}
			w.M[k] = ew
		}
		return w, nil
	}
	return wireValue{}, fmt.Errorf("template variable of type %T is not supported (want nil, bool, int, int64, float64, string, []any or map[string]any)", v)
}

// size is about how many bytes the value takes as text: its strings and
// keys, 8 per scalar.
func (w wireValue) size() int {
	n := 8 + len(w.S)
	for _, e := range w.L {
		n += e.size()
	}
	for k, e := range w.M {
		n += len(k) + e.size()
	}
	return n
}

func (w wireValue) toGo() any {
	switch w.Kind {
	case "bool":
		return w.B
	case "int":
		return w.I
	case "float":
		return w.F
	case "string":
		return w.S
	case "list":
		l := make([]any, len(w.L))
		for i, e := range w.L {
			l[i] = e.toGo()
		}
		return l
	case "dict":
		m := make(map[string]any, len(w.M))
		for k, e := range w.M {
			m[k] = e.toGo()
		}
		return m
	}
	return nil
}

// runSandboxed runs req in a child process and returns the rendered text.
func runSandboxed(req *renderRequest) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot start the template renderer: %w", err)
	}
	var in bytes.Buffer
	if err := gob.NewEncoder(&in).Encode(req); err != nil {
		return "", fmt.Errorf("encoding the render request: %w", err)
	}
	lim := req.Limits
	ctx, cancel := context.WithTimeout(context.Background(), lim.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), sandboxEnv+"=1")
	if raceEnabled {
		// The race runtime sleeps a second at exit by default.
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	}
	cmd.Stdin = &in
	out := &cappedBuffer{max: lim.MaxOutput + 1}
	stderr := &cappedBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("rendering took longer than the renderer's time limit of %v for this conversation (an endless or huge loop?)", lim.Timeout.Round(time.Millisecond))
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), nil
	case !errors.As(err, &exit):
		return "", fmt.Errorf("cannot run the template renderer %s: %w", exe, err)
	}
	switch code := exit.ExitCode(); {
	case code == exitTemplate:
		return "", errors.New(oneLine(out.String()))
	case code == exitMemory || strings.Contains(stderr.String(), "out of memory"):
		return "", fmt.Errorf("rendering needs more than the renderer's memory limit of %s for this conversation (a string doubled in a loop, or a huge list?)", size(int64(lim.MaxMemory)))
	case code == exitOutput || out.overflow:
		return "", fmt.Errorf("the rendered prompt is larger than the renderer's output limit of %s for this conversation", size(int64(lim.MaxOutput)))
	case strings.Contains(stderr.String(), "stack exceeds"):
		return "", fmt.Errorf("recursion deeper than the renderer's %s stack (a macro calling itself without end?)", size(int64(lim.MaxStack)))
	default:
		return "", fmt.Errorf("template renderer failed (%v): %s", exit, oneLine(firstLines(stderr.String(), 2)))
	}
}

// serveSandbox is the child's side: it reads one request, applies the
// limits and compiles or renders.
func serveSandbox(stdin io.Reader, stdout io.Writer) int {
	// Until the request (and its limits) is read, the defaults apply.
	debug.SetMaxStack(defaultLimits.MaxStack)
	limitAddressSpace(addressSpace(defaultLimits.MaxMemory))
	var req renderRequest
	if err := gob.NewDecoder(stdin).Decode(&req); err != nil {
		fmt.Fprintf(stdout, "template renderer: reading the request: %v", err)
		return exitProtocol
	}
	lim := req.Limits
	debug.SetMaxStack(lim.MaxStack)
	limitAddressSpace(addressSpace(lim.MaxMemory))
	// The collector works harder near the limit, so garbage (a loop
	// building and dropping lists) does not count as memory the
	// template needs; what it keeps alive still ends it.
	debug.SetMemoryLimit(int64(lim.MaxMemory) * 3 / 4)
	go watchMemory(lim.MaxMemory)
	tmpl, err := jinja.Compile(req.Source)
	if err != nil {
		fmt.Fprint(stdout, oneLine(err.Error()))
		return exitTemplate
	}
	if req.CompileOnly {
		return exitOK
	}
	extra := make(map[string]any, len(req.Extra))
	for k, v := range req.Extra {
		extra[k] = v.toGo()
	}
	now := time.Unix(0, req.NowUnixNano).In(time.FixedZone(req.NowZone, req.NowOffset))
	rng := jinja.NewCallable("range", func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		return boundedRange(args, kwargs, lim.MaxRange)
	})
	text, err := renderValues(tmpl, req.Messages, req.AddGenerationPrompt, req.Special, func() time.Time { return now }, extra, rng)
	if err != nil {
		fmt.Fprint(stdout, oneLine(err.Error()))
		return exitTemplate
	}
	if len(text) > lim.MaxOutput {
		return exitOutput
	}
	if _, err := io.WriteString(stdout, text); err != nil {
		return exitProtocol
	}
	return exitOK
}

// addressSpace is the child's address-space limit, a backstop behind
// watchMemory: the Go runtime reserves far more address space than it
// uses, so it is 4 times the memory limit and at least 8 GiB.
func addressSpace(maxMemory uint64) uint64 {
	return max(4*maxMemory, 8<<30)
}

// watchMemory ends the child when the memory it maps passes the limit.
func watchMemory(limit uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > limit {
			os.Exit(exitMemory)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// boundedRange is Jinja's range() refusing lists longer than limit, which
// would otherwise be built whole before the loop over them starts.
func boundedRange(args []jinja.Value, _ map[string]jinja.Value, limit int64) (jinja.Value, error) {
	var start, stop, step int64 = 0, 0, 1
	ints := make([]int64, len(args))
	for i, a := range args {
		ints[i] = rangeInt(a)
	}
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return jinja.Undefined(), fmt.Errorf("range: expected 1-3 arguments, got %d", len(args))
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range: step must not be zero")
	}
	var n int64
	switch {
	case step > 0 && stop > start:
		n = (stop-start-1)/step + 1
	case step < 0 && stop < start:
		n = (start-stop-1)/(-step) + 1
	}
	if n > limit || n < 0 {
		return jinja.Undefined(), fmt.Errorf("range(%d, %d, %d) would have more than %d items", start, stop, step, limit)
	}
	items := make([]jinja.Value, n)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}

// rangeInt converts a range() argument as the library's own range does:
// floats truncate, booleans are 0 or 1, strings are read as decimal
// integers, anything else is 0.
func rangeInt(v jinja.Value) int64 {
	switch {
	case v.IsInt():
		return v.AsInt()
	case v.IsFloat():
		return int64(v.AsFloat())
	case v.IsBool():
		if v.AsBool() {
			return 1
		}
		return 0
	case v.IsString():
		var n int64
		fmt.Sscanf(v.AsString(), "%d", &n)
		return n
	}
	return 0
}

// cappedBuffer keeps at most max bytes and notes whether more came.
type cappedBuffer struct {
	bytes.Buffer
	max      int
	overflow bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); len(p) > room {
		c.overflow = true
		c.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[:min(len(lines), n)], " | ")
}
