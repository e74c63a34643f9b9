package ui

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// liveChat is the real mlxchat binary running in a tmux session on the
// tiny model.
type liveChat struct {
	t       *testing.T
	tm      *tmux
	pidFile string
	state   string // XDG_STATE_HOME
}

// liveOpts configure one session.
type liveOpts struct {
	state string   // XDG_STATE_HOME (required)
	args  []string // flags before the model
	// mount, when set, is a mount(8) argument list run in a private mount
	// namespace (unshare -rm) before the chat starts, e.g. a small tmpfs
	// over the state dir.
	mount []string
	w, h  int
}

// hostileServer is one tmux server per test, on a private socket.
func hostileServer(t *testing.T, tmuxBin string) *tmux {
	sock := fmt.Sprintf("mlxchat-hostile-%d-%d", os.Getpid(), rand.Uint32())
	t.Cleanup(func() { _ = exec.Command(tmuxBin, "-L", sock, "kill-server").Run() })
	return &tmux{t: t, bin: tmuxBin, sock: sock}
}

// startLive starts a chat in a new session of srv named name.
func startLive(t *testing.T, srv *tmux, bin, model, name string, o liveOpts) *liveChat {
	t.Helper()
	work := t.TempDir()
	pidFile := filepath.Join(work, "pid")
	cfg := filepath.Join(work, "config")
	args := append(append([]string{}, o.args...), model)
	var q []string
	for _, a := range args {
		q = append(q, strconv.Quote(a))
	}
	run := filepath.Join(work, "run.sh")
	script := fmt.Sprintf("echo $$ > %q\nexec env XDG_STATE_HOME=%q XDG_CONFIG_HOME=%q NO_COLOR=1 TERM=xterm-256color %q %s\n",
		pidFile, o.state, cfg, bin, strings.Join(q, " "))
	if err := os.WriteFile(run, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	start := "sh " + strconv.Quote(run)
	if o.mount != nil {
		mnt := filepath.Join(work, "mount.sh")
		var mq []string
		for _, a := range o.mount {
			mq = append(mq, strconv.Quote(a))
		}
		body := fmt.Sprintf("mount %s || { echo '[mount failed]'; exit 97; }\nexec sh %q\n", strings.Join(mq, " "), run)
		if err := os.WriteFile(mnt, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		start = "unshare -rm sh " + strconv.Quote(mnt)
	}
	w, h := o.w, o.h
	if w == 0 {
		w, h = 100, 30
	}
	tm := &tmux{t: t, bin: srv.bin, sock: srv.sock, target: name}
	tm.run("new-session", "-d", "-s", name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h),
		"sh", "-c", start+`; echo "[exit $?]"; sleep 600`)
	lc := &liveChat{t: t, tm: tm, pidFile: pidFile, state: o.state}
	lc.waitFor("the chat to open", 60*time.Second, func(s string) bool { return strings.Contains(s, "is ready") })
	return lc
}

// pid is the chat's process id.
func (lc *liveChat) pid() int {
	lc.t.Helper()
	for range 100 {
		if data, err := os.ReadFile(lc.pidFile); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				return n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	lc.t.Fatal("the chat never wrote its pid")
	return 0
}

// waitFor waits for ok on the screen; a panic on screen fails at once.
func (lc *liveChat) waitFor(what string, d time.Duration, ok func(string) bool) {
	lc.t.Helper()
	deadline := time.Now().Add(d)
	var s string
	for time.Now().Before(deadline) {
		s = lc.tm.capture()
		if strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
			lc.t.Fatalf("panic while waiting for %s:\n%s", what, s)
		}
		if ok(s) {
			return
		}
		if strings.Contains(s, "[exit ") {
			break
		}
		time.Sleep(40 * time.Millisecond)
	}
	lc.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
}

func (lc *liveChat) typeLine(s string) {
	lc.t.Helper()
	lc.tm.keys("-l", s)
	lc.tm.keys("Enter")
}

// answerEnds waits for the answer to end (the stop hint is gone).
func (lc *liveChat) answerEnds(d time.Duration) {
	lc.t.Helper()
	lc.waitFor("the answer to end", d, func(s string) bool {
		return strings.Contains(s, "decode ") && !strings.Contains(s, "Esc stop")
	})
}

// askStreaming sends prompt and returns once its answer is seen
// streaming, with how many times it was sent. The tiny model decodes about
// a thousand tokens a second and samples an end of turn after a few
// hundred, so an answer can start and end between two looks at the
// screen; then the prompt is sent again (the conversation holds one
// exchange per send), up to maxAsks times.
func (lc *liveChat) askStreaming(prompt string) int {
	lc.t.Helper()
	const maxAsks = 20
	for n := 1; n <= maxAsks; n++ {
		lc.typeLine(prompt)
		label := fmt.Sprintf("#%d", 2*n) // the answer's number in its label
		streaming := false
		lc.waitFor("the answer to stream", 60*time.Second, func(s string) bool {
			streaming = strings.Contains(s, "Esc stop") && strings.Contains(s, "decode ")
			ended := strings.Contains(s, label) && strings.Contains(s, "decode ") && !strings.Contains(s, "Esc stop")
			return streaming || ended
		})
		if streaming {
			return n
		}
	}
	lc.t.Fatalf("%d answers ended before one was seen streaming", maxAsks)
	return 0
}

// summarizeStep matches the status line's "summarize k/n" and captures k.
var summarizeStep = regexp.MustCompile(`summarize (\d+)/\d+`)

// endBy ends the chat in session name (process pid) with sig (SIGHUP by
// closing its terminal, as closing a window does; the others with kill),
// waits for it to be gone and returns the one conversation it saved.
func (lc *liveChat) endBy(sig syscall.Signal, name string, pid int) conversationFile {
	lc.t.Helper()
	if sig == syscall.SIGHUP {
		lc.tm.run("kill-session", "-t", name)
		deadline := time.Now().Add(15 * time.Second)
		for processAlive(pid) {
			if time.Now().After(deadline) {
				lc.t.Fatal("the chat did not end after its terminal closed")
			}
			time.Sleep(20 * time.Millisecond)
		}
	} else {
		if err := syscall.Kill(pid, sig); err != nil {
			lc.t.Fatal(err)
		}
		lc.exited(0)
	}
	files := conversations(lc.t, lc.state)
	if len(files) != 1 {
		lc.t.Fatalf("conversations: %v", files)
	}
	return readConv(lc.t, files[0])
}

// quit presses Ctrl+C twice and wants exit status 0; it returns the
// screen after the exit (with the "conversation saved to" line).
func (lc *liveChat) quit() string {
	lc.t.Helper()
	lc.tm.keys("C-c")
	lc.tm.keys("C-c")
	return lc.exited(0)
}

// exited waits for the chat to end with status code and returns the screen.
func (lc *liveChat) exited(code int) string {
	lc.t.Helper()
	lc.waitFor("the chat to exit", 20*time.Second, func(s string) bool { return strings.Contains(s, "[exit ") })
	s := lc.tm.capture()
	if !strings.Contains(s, fmt.Sprintf("[exit %d]", code)) {
		lc.t.Fatalf("want exit status %d:\n%s", code, s)
	}
	return s
}

// flat joins the screen's words with single spaces (notices wrap).
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// savedRE finds the report line, joined over wrapped lines.
var savedRE = regexp.MustCompile(`conversation saved to (\S+\.json)`)

// savedPath is the file the exit report names.
func savedPath(t *testing.T, screen string) string {
	t.Helper()
	joined := strings.ReplaceAll(screen, "\n", "")
	m := savedRE.FindStringSubmatch(joined)
	if m == nil {
		t.Fatalf("no \"conversation saved to\" line:\n%s", screen)
	}
	return m[1]
}

// conversations lists the autosaves under state and checks that each is
// valid JSON.
func conversations(t *testing.T, state string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(state, "mlxchat", "conversations", "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c conversationFile
		if err := json.Unmarshal(data, &c); err != nil {
			t.Errorf("%s is not valid JSON (%d bytes): %v", f, len(data), err)
		}
	}
	return files
}

func orphanTemps(state string) []string {
	var out []string
	for _, d := range []string{filepath.Join(state, "mlxchat"), filepath.Join(state, "mlxchat", "conversations")} {
		m, _ := filepath.Glob(filepath.Join(d, ".*.tmp*"))
		out = append(out, m...)
	}
	return out
}

// canMount reports whether unshare -rm can mount a tmpfs here (root in a
// user namespace); the read-only and full-disk cases need it when the
// test runs as root (root ignores permission bits).
func canMount(t *testing.T) bool {
	dir := t.TempDir()
	err := exec.Command("unshare", "-rm", "mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", dir).Run()
	return err == nil
}

// needMount skips (fails in CI) when canMount is false.
func needMount(t *testing.T) {
	t.Helper()
	if canMount(t) {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("unshare -rm cannot mount a tmpfs here; the read-only and full-disk cases need user namespaces")
	}
	t.Skip("unshare -rm cannot mount a tmpfs here (no user namespaces)")
}

// TestHostile runs the real binary in tmux against hostile conditions:
// signals while an answer streams, an unusable state dir (a file,
// read-only, full), kill -9 during saves, two chats at once, a 10 MB
// paste, invalid UTF-8, a 1x1 terminal, /kv spam during decode, and /load
// of a device and a FIFO. Every case wants no hang, no panic, and nothing
// typed or streamed lost.
func TestHostile(t *testing.T) {
	bin, model, tmuxBin := realChat(t)
	srv := hostileServer(t, tmuxBin)
	long := []string{"--max-tokens", "3000", "--no-loop-detect", "--temp", "0.8", "--seed", "3"}

	// Signals while an answer streams: the partial answer is saved,
	// marked interrupted. HUP comes from closing the terminal (tmux
	// kill-session hangs up the pane), the others from kill.
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT} {
		t.Run("signal "+sig.String(), func(t *testing.T) {
			state := t.TempDir()
			name := "sig" + strconv.Itoa(int(sig))
			lc := startLive(t, srv, bin, model, name, liveOpts{state: state, args: long})
			pid := lc.pid()
			asks := lc.askStreaming("tell me a long story")
			c := lc.endBy(sig, name, pid)
			if len(c.Messages) != 2*asks || c.Messages[2*asks-2].Content != "tell me a long story" {
				t.Fatalf("saved %+v after %d asks", c.Messages, asks)
			}
			if a := c.Messages[2*asks-1]; a.Content == "" || !a.Partial || a.Note != noteInterrupted {
				t.Errorf("answer saved as %+v, want the streamed text, partial, interrupted", a)
			}
		})
	}

	// Signals during a /summarize: the piece summaries done so far are
	// saved as a partial answer, as Esc keeps them.
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run("summarize "+sig.String(), func(t *testing.T) {
			state := t.TempDir()
			name := "sum" + strconv.Itoa(int(sig))
			lc := startLive(t, srv, bin, model, name, liveOpts{state: state, args: []string{"--max-kv-size", "512", "--max-tokens", "30", "--threads", "1"}})
			pid := lc.pid()
			lc.tm.keys("-l", "/summarize ")
			// 48 KiB make a few dozen pieces: at the tiny model's speed they
			// take seconds, so a look at the screen finds one from the third
			// on while pieces remain (with 12 KiB, screens went from piece 2
			// straight to the end).
			lc.tm.paste(filepath.Join(t.TempDir(), "doc.txt"), longDocument(48<<10))
			lc.waitFor("the collapsed paste", 20*time.Second, func(s string) bool { return strings.Contains(s, "[pasted") })
			lc.tm.keys("Enter")
			lc.waitFor("the third piece or a later one", 60*time.Second, func(s string) bool {
				m := summarizeStep.FindStringSubmatch(s)
				if m == nil {
					return false
				}
				k, _ := strconv.Atoi(m[1])
				return k >= 3
			})
			c := lc.endBy(sig, name, pid)
			if len(c.Messages) != 2 {
				t.Fatalf("saved %d messages, want the /summarize and the pieces done", len(c.Messages))
			}
			if a := c.Messages[1]; !a.Partial || !strings.HasPrefix(a.Note, "interrupted after ") || a.Summary == nil || len(a.Summary.Pieces) < 2 {
				t.Errorf("answer saved as %+v, want the pieces done, partial, interrupted", a)
			}
		})
	}

	t.Run("state dir is a file", func(t *testing.T) {
		state := t.TempDir()
		os.WriteFile(filepath.Join(state, "mlxchat"), []byte("not a folder"), 0o600)
		lc := startLive(t, srv, bin, model, "file", liveOpts{state: state, args: []string{"--max-tokens", "8"}})
		lc.waitFor("the warning", 5*time.Second, func(s string) bool {
			return strings.Contains(flat(s), "not a directory: state dir") && strings.Contains(flat(s), "this session saves to")
		})
		lc.typeLine("hello")
		lc.answerEnds(30 * time.Second)
		screen := lc.quit()
		p := savedPath(t, screen)
		defer os.RemoveAll(filepath.Dir(filepath.Dir(p)))
		if c := readConv(t, p); len(c.Messages) != 2 || c.Messages[0].Content != "hello" {
			t.Errorf("fallback file holds %+v", c.Messages)
		}
		// The exit line's /load works in a new session, whose state dir
		// (still a file) falls back to another temporary folder.
		// The terminal wraps the line where it must; a space that falls on
		// the last column is trimmed from the captured screen, so the
		// comparison ignores whitespace.
		noSpace := func(s string) string { return strings.Join(strings.Fields(s), "") }
		if !strings.Contains(noSpace(screen), noSpace("(reopen it with /load "+p+")")) {
			t.Fatalf("the exit line does not give /load the whole path:\n%s", screen)
		}
		lc2 := startLive(t, srv, bin, model, "file2", liveOpts{state: state, args: []string{"--max-tokens", "8"}})
		lc2.typeLine("/load " + p)
		lc2.waitFor("the reopened conversation", 10*time.Second, func(s string) bool { return strings.Contains(s, "loaded ") && strings.Contains(s, "hello") })
		p2 := savedPath(t, lc2.quit())
		defer os.RemoveAll(filepath.Dir(filepath.Dir(p2)))
	})

	t.Run("state dir read-only", func(t *testing.T) {
		state := t.TempDir()
		dir := filepath.Join(state, "mlxchat")
		os.MkdirAll(dir, 0o700)
		o := liveOpts{state: state, args: []string{"--max-tokens", "8"}}
		if os.Getuid() == 0 {
			needMount(t)
			o.mount = []string{"-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", dir}
		} else {
			os.Chmod(dir, 0o500)
			defer os.Chmod(dir, 0o700)
		}
		lc := startLive(t, srv, bin, model, "ro", o)
		lc.waitFor("the warning", 5*time.Second, func(s string) bool {
			s = flat(s)
			return (strings.Contains(s, "read-only file system") || strings.Contains(s, "permission denied")) && strings.Contains(s, "saves to")
		})
		lc.typeLine("hello read-only")
		lc.answerEnds(30 * time.Second)
		p := savedPath(t, lc.quit())
		defer os.RemoveAll(filepath.Dir(filepath.Dir(p)))
		if c := readConv(t, p); len(c.Messages) != 2 || c.Messages[0].Content != "hello read-only" {
			t.Errorf("fallback file holds %+v", c.Messages)
		}
	})

	t.Run("state dir full", func(t *testing.T) {
		needMount(t)
		state := t.TempDir()
		dir := filepath.Join(state, "mlxchat")
		os.MkdirAll(dir, 0o700)
		lc := startLive(t, srv, bin, model, "full", liveOpts{state: state, args: []string{"--max-tokens", "8"},
			mount: []string{"-t", "tmpfs", "-o", "size=32k", "tmpfs", dir}})
		lc.typeLine("hello full disk")
		lc.answerEnds(30 * time.Second)
		doc := longDocument(40 << 10) // does not fit in 32k
		lc.tm.paste(filepath.Join(t.TempDir(), "doc.txt"), doc)
		lc.waitFor("the full-disk warning", 10*time.Second, func(s string) bool {
			s = flat(s)
			return strings.Contains(s, "no space left on device") && strings.Contains(s, "saving to")
		})
		p := savedPath(t, lc.quit())
		defer os.RemoveAll(filepath.Dir(p))
		c := readConv(t, p)
		if len(c.Messages) != 2 || c.Messages[0].Content != "hello full disk" || len(c.DraftPastes) != 1 || c.DraftPastes[0].Content != doc {
			t.Errorf("moved file lacks the chat or the pasted draft: %d messages, %d pastes", len(c.Messages), len(c.DraftPastes))
		}
	})

	t.Run("kill -9 during saves", func(t *testing.T) {
		state := t.TempDir()
		doc := longDocument(2 << 20)
		orphans := 0
		for i := range 12 {
			lc := startLive(t, srv, bin, model, fmt.Sprintf("k%d", i), liveOpts{state: state})
			pid := lc.pid()
			lc.tm.paste(filepath.Join(t.TempDir(), "doc.txt"), doc)
			lc.waitFor("the collapsed paste", 20*time.Second, func(s string) bool { return strings.Contains(s, "[pasted") })
			// Every paste saves the draft at once: small pastes now each write
			// the 2 MB draft, and the kill lands somewhere in those writes.
			small := filepath.Join(t.TempDir(), "small.txt")
			os.WriteFile(small, []byte("x"), 0o600)
			lc.tm.run("load-buffer", "-b", "small", small)
			stop := time.After(time.Duration(20+rand.IntN(300)) * time.Millisecond)
		spam:
			for {
				select {
				case <-stop:
					break spam
				default:
					lc.tm.run("paste-buffer", "-p", "-b", "small", "-t", lc.tm.target)
				}
			}
			syscall.Kill(pid, syscall.SIGKILL)
			lc.exited(137)
			conversations(t, state) // each file is valid JSON, every time
			orphans += len(orphanTemps(state))
		}
		// Each start removes what the killed one before it left.
		t.Logf("%d of 12 kills left a temporary file behind", orphans)
		lc := startLive(t, srv, bin, model, "after", liveOpts{state: state})
		lc.quit()
		if left := orphanTemps(state); len(left) != 0 {
			t.Errorf("temp files left after a restart: %v", left)
		}
		for _, f := range conversations(t, state) {
			if c := readConv(t, f); c.Draft != "" && (len(c.DraftPastes) != 1 || c.DraftPastes[0].Content != doc) {
				t.Errorf("%s: a saved draft lost its paste", f)
			}
		}
	})

	t.Run("two chats at once", func(t *testing.T) {
		state := t.TempDir()
		a := startLive(t, srv, bin, model, "twoA", liveOpts{state: state, args: []string{"--max-tokens", "6"}})
		b := startLive(t, srv, bin, model, "twoB", liveOpts{state: state, args: []string{"--max-tokens", "6"}})
		a.typeLine("first chat")
		b.typeLine("second chat")
		a.answerEnds(30 * time.Second)
		b.answerEnds(30 * time.Second)
		pa, pb := savedPath(t, a.quit()), savedPath(t, b.quit())
		if pa == pb {
			t.Fatalf("both chats saved to %s", pa)
		}
		if ca, cb := readConv(t, pa), readConv(t, pb); ca.Messages[0].Content != "first chat" || cb.Messages[0].Content != "second chat" {
			t.Errorf("files hold %q and %q", ca.Messages[0].Content, cb.Messages[0].Content)
		}
	})

	t.Run("10 MiB paste", func(t *testing.T) {
		state := t.TempDir()
		lc := startLive(t, srv, bin, model, "big", liveOpts{state: state, args: []string{"--max-kv-size", "64"}})
		doc := longDocument(10 << 20)
		start := time.Now()
		lc.tm.paste(filepath.Join(t.TempDir(), "doc.txt"), doc)
		lc.waitFor("the counted 10 MiB paste", 60*time.Second, func(s string) bool {
			return regexp.MustCompile(`\[pasted: [0-9,]+ tokens, 10\.0 MiB\]`).MatchString(s)
		})
		t.Logf("10 MiB paste collapsed and counted in %v", time.Since(start).Round(time.Millisecond))
		lc.tm.keys("Enter")
		lc.waitFor("the fit check of 10 MiB", 60*time.Second, func(s string) bool { return strings.Contains(flat(s), "> live window 64") })
		lc.tm.keys("Enter")
		lc.waitFor("its prefill", 60*time.Second, func(s string) bool { return strings.Contains(s, "prefill ") })
		lc.tm.keys("Escape")
		lc.waitFor("the stop", 30*time.Second, func(s string) bool {
			return strings.Contains(s, "your message is back in the editor")
		})
		p := savedPath(t, lc.quit())
		c := readConv(t, p)
		if len(c.DraftPastes) != 1 || c.DraftPastes[0].Content != doc {
			t.Errorf("the 10 MiB paste is not saved whole in the draft (%d pastes)", len(c.DraftPastes))
		}
	})

	t.Run("invalid UTF-8", func(t *testing.T) {
		state := t.TempDir()
		lc := startLive(t, srv, bin, model, "utf8", liveOpts{state: state, args: []string{"--max-tokens", "4"}})
		lc.tm.keys("-l", "typed ")
		lc.tm.keys("-H", "ff", "41")
		lc.tm.keys("-l", " pasted ")
		lc.tm.paste(filepath.Join(t.TempDir(), "bad.txt"), "ok \xfe\xc3 done")
		lc.waitFor("the invalid bytes, written out", 5*time.Second, func(s string) bool {
			return strings.Contains(s, `typed \xffA pasted ok \xfe\xc3 done`)
		})
		lc.tm.keys("Enter")
		lc.answerEnds(30 * time.Second)
		c := readConv(t, savedPath(t, lc.quit()))
		if got := c.Messages[0].Content; got != `typed \xffA pasted ok \xfe\xc3 done` {
			t.Errorf("sent %q", got)
		}
	})

	t.Run("1x1 terminal", func(t *testing.T) {
		state := t.TempDir()
		lc := startLive(t, srv, bin, model, "tiny", liveOpts{state: state, args: long})
		asks := lc.askStreaming("tell me a long story")
		for _, size := range [][2]string{{"1", "1"}, {"2", "1"}, {"1", "3"}, {"100", "30"}} {
			lc.tm.run("resize-window", "-t", "tiny", "-x", size[0], "-y", size[1])
			time.Sleep(150 * time.Millisecond)
		}
		lc.answerEnds(60 * time.Second)
		c := readConv(t, savedPath(t, lc.quit()))
		if len(c.Messages) != 2*asks || c.Messages[2*asks-1].Content == "" {
			t.Errorf("answer lost after the resizes: %+v", c.Messages)
		}
	})

	t.Run("kv spam during decode", func(t *testing.T) {
		state := t.TempDir()
		lc := startLive(t, srv, bin, model, "kv", liveOpts{state: state, args: append(long[:len(long):len(long)], "--max-kv-size", "64")})
		asks := lc.askStreaming("tell me a long story")
		for i := range 40 {
			lc.typeLine([]string{"/kv 16", "/kv off", "/kv 33", "/kv 8", "/kv 200"}[i%5])
		}
		lc.answerEnds(120 * time.Second)
		lc.typeLine("/kv 32")
		lc.waitFor("the last cap in the meter", 10*time.Second, func(s string) bool { return strings.Contains(s, "/32 live") })
		c := readConv(t, savedPath(t, lc.quit()))
		if len(c.Messages) != 2*asks || c.Messages[2*asks-1].Content == "" {
			t.Errorf("answer lost under /kv spam: %+v", c.Messages)
		}
	})

	t.Run("load of a device and a FIFO", func(t *testing.T) {
		state := t.TempDir()
		fifo := filepath.Join(t.TempDir(), "pipe.json")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		lc := startLive(t, srv, bin, model, "load", liveOpts{state: state, args: []string{"--max-tokens", "4"}})
		lc.typeLine("/load /dev/zero")
		lc.waitFor("the /dev/zero error", 5*time.Second, func(s string) bool {
			return strings.Contains(flat(s), "is a character device, expected a regular file")
		})
		// The failed command left the editor: what is typed next is not
		// glued onto it.
		lc.typeLine("/load " + fifo)
		lc.waitFor("the FIFO error", 5*time.Second, func(s string) bool { return strings.Contains(flat(s), "named pipe (FIFO), expected a regular file") })
		lc.typeLine("still here")
		lc.answerEnds(30 * time.Second)
		c := readConv(t, savedPath(t, lc.quit()))
		if len(c.Messages) != 2 || c.Messages[0].Content != "still here" {
			t.Errorf("saved %+v", c.Messages)
		}
	})
}
