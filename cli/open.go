package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"mlxchat/bytesize"
	"mlxchat/engine"
	"mlxchat/metal"
	"mlxchat/models"
	"mlxchat/models/hub"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// threadCount is --threads, or every core when it is 0.
func (c *config) threadCount() int {
	if c.threads > 0 {
		return c.threads
	}
	return runtime.NumCPU()
}

// backendHandle is an opened compute backend and how to release it.
type backendHandle struct {
	backend tensor.Backend
	close   func()
}

// openBackend opens --backend: the CPU backend, or a GPU backend through
// metal.Open, whose error says in one line why it is unavailable here.
// When no backend was asked for and the default GPU backend cannot start
// (no Metal device, a kernel the GPU compiler rejects), it falls back to
// the CPU backend and says why in one line on note; with --backend given
// explicitly that is an error.
func openBackend(c *config, note io.Writer) (*backendHandle, error) {
	return pickBackend(c.backend, metal.Default(), c.threadCount(), metal.Open, note)
}

// pickBackend is openBackend with the default backend and the GPU opener
// as arguments (tests pass failing ones).
func pickBackend(asked, def string, threads int, open func(string) (tensor.Backend, error), note io.Writer) (*backendHandle, error) {
	name := asked
	if name == "" {
		name = def
	}
	cpuBackend := func() *backendHandle {
		b := cpu.New(threads)
		return &backendHandle{backend: b, close: b.Close}
	}
	if name == "cpu" {
		return cpuBackend(), nil
	}
	b, err := open(name)
	if err != nil {
		if asked != "" {
			return nil, err
		}
		why := strings.TrimPrefix(oneLine(err), "--backend "+name+": ")
		fmt.Fprintf(note, "mlxchat: the %s GPU backend is unavailable (%s); using the CPU backend\n", name, why)
		return cpuBackend(), nil
	}
	h := &backendHandle{backend: b, close: func() {}}
	switch cl := b.(type) {
	case interface{ Close() error }:
		h.close = func() { cl.Close() }
	case interface{ Close() }:
		h.close = cl.Close
	}
	return h, nil
}

// oneLine joins an error's lines (a compiler log can have several).
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// localDir returns name when it is an existing directory, else "".
func localDir(name string) string {
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		return name
	}
	return ""
}

// Limits on waiting for the hub. A download may take as long as it needs
// (Ctrl+C stops it), but an unreachable or silent hub must fail in seconds,
// not hang the chat or run on a connect that never completes.
const (
	hubDialTimeout   = 10 * time.Second // TCP connect and TLS handshake
	hubHeaderTimeout = 20 * time.Second // from request sent to response headers
)

// hubClient is the HTTP client for the hub: no overall timeout (downloads
// are long), but bounded connect, handshake and response-header waits.
func hubClient(dial, header time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = dial
	tr.ResponseHeaderTimeout = header
	return &http.Client{Transport: tr}
}

// resolveModel turns a model name, repo id or directory into a local model
// directory (models/hub: path, Hugging Face cache, XDG data dir, else a
// download), reporting download progress as (stage, done, total) over all
// files. A hub that cannot be reached gives one line that says so and what
// to do instead.
func resolveModel(ctx context.Context, name string, client *http.Client, progress func(stage string, done, total int64)) (string, error) {
	res, err := hub.Resolve(ctx, name, hub.Options{Client: client, CheckConfig: models.CheckConfig, Progress: func(p hub.Progress) {
		if progress == nil {
			return
		}
		stage := fmt.Sprintf("downloading %s (%d/%d)", p.File, p.FileIndex, p.Files)
		if p.Waiting {
			progress("waiting for another download of "+p.Repo+" to finish", 0, 0)
			return
		}
		if p.Verifying {
			stage = fmt.Sprintf("verifying %s (%d/%d)", p.File, p.FileIndex, p.Files)
		}
		progress(stage, p.AllDone, p.AllTotal)
	}})
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ctx.Err() == nil {
			return "", fmt.Errorf("%w (the Hugging Face hub is unreachable: pass a local model directory, or download it where there is a network; HF_HUB_OFFLINE=1 skips the hub)", err)
		}
		return "", err
	}
	return res.Dir, nil
}

// openBundle resolves the model (with a progress bar on stderr), opens the
// backend and loads the model, tokenizer and chat template, refuses a
// --max-kv-size above the model's context length (checkMaxKV), and prints
// the model's load-time notes on stderr, one "note:" line each. The
// returned func releases the model and the backend.
func openBundle(ctx context.Context, c *config, model string, stderr io.Writer) (*engine.Bundle, func(), error) {
	be, err := openBackend(c, stderr)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	bar := newProgressBar(stderr)
	dir, err := resolveModel(ctx, model, hubClient(hubDialTimeout, hubHeaderTimeout), bar.update)
	bar.finish()
	if err != nil {
		be.close()
		return nil, nil, err
	}
	b, err := engine.LoadBundle(dir, be.backend, model)
	if err != nil {
		be.close()
		return nil, nil, err
	}
	if err := c.checkMaxKV(b.Info.ContextLength); err != nil {
		b.Close()
		be.close()
		return nil, nil, usageErr(err)
	}
	for _, n := range b.Info.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	return b, func() {
		b.Close()
		be.close()
	}, nil
}

// progressBar draws download progress on one terminal line, at most ten
// times a second:  "model.safetensors  42% [========>           ] 1.1/2.6 GiB".
type progressBar struct {
	w     io.Writer
	mu    sync.Mutex
	last  time.Time
	stage string
	drawn bool
}

func newProgressBar(w io.Writer) *progressBar { return &progressBar{w: w} }

func (p *progressBar) update(stage string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	newStage := stage != p.stage
	if !newStage && now.Sub(p.last) < 100*time.Millisecond && done != total {
		return
	}
	p.last = now
	if newStage && p.drawn {
		fmt.Fprintln(p.w)
	}
	p.stage = stage
	p.drawn = true
	if total <= 0 {
		fmt.Fprintf(p.w, "\r%s %s\x1b[K", stage, bytesize.Format(done))
		return
	}
	const width = 30
	frac := float64(done) / float64(total)
	frac = max(0, min(1, frac))
	fill := int(frac * width)
	bar := strings.Repeat("=", fill)
	if fill < width {
		bar += ">" + strings.Repeat(" ", width-fill-1)
	}
	fmt.Fprintf(p.w, "\r%s %3.0f%% [%s] %s/%s\x1b[K", stage, frac*100, bar, bytesize.Format(done), bytesize.Format(total))
}

func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
