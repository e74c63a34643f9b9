package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/muesli/cancelreader"
	"github.com/muesli/termenv"

	"mlxchat/engine"
	"mlxchat/themes"
)

// Engine is all the UI needs from the engine: *engine.Engine satisfies it.
// Submit must not block; Events is read until it closes.
type Engine interface {
	// Submit queues a request and returns its id.
	Submit(engine.Request) engine.RequestID
	// Events is the channel of engine events, closed at shutdown.
	Events() <-chan engine.Event
}

var _ Engine = (*engine.Engine)(nil)

// Options configure Run. Only Engine is required.
type Options struct {
	// Engine is a started engine (New or NewLoading, then Start). While a
	// NewLoading engine loads, its ModelLoading events drive a progress
	// view; the chat opens at Ready. A load Error ends Run with that error.
	// Run does not Close the engine; the caller does after Run returns.
	Engine Engine
	// ModelName is what the user asked for (a name or a directory); shown
	// while loading and until Ready's ModelInfo.Name replaces it.
	ModelName string
	// ModelDir is the resolved model directory, shown by /model.
	ModelDir string
	// Settings are the settings the engine was started with; slash commands
	// edit a copy and send UpdateSettings.
	Settings engine.Settings
	// CountTokens counts tokens for the collapsed-paste label; nil (or an
	// error) falls back to an estimate of bytes/4 shown with "~".
	CountTokens TokenCounter
	// Theme is --theme: a theme name overriding the config file; "" = the
	// config's theme or themes.Default.
	Theme string
	// ConfigPath is --config; "" = DefaultConfigPath(), which may be absent.
	// A named file that is missing or invalid is an error.
	ConfigPath string
	// StateDir holds autosaved conversations (StateDir/conversations/*.json)
	// and the input history (StateDir/history.json); "" = DefaultStateDir().
	StateDir string
	// NoColor drops all colours; Run also drops them when the NO_COLOR
	// environment variable is set (to anything non-empty).
	NoColor bool
	// Input and Output replace the terminal (tests); nil = stdin/stdout.
	Input  io.Reader
	Output io.Writer
	// Report, when set, gets one line after the screen is restored saying
	// where the conversation (draft included) was saved and how to reopen
	// it; nothing when nothing was saved.
	Report io.Writer
	// Inline keeps the main screen instead of the alternate screen and
	// does not capture the mouse (tests, or terminals that need it).
	Inline bool
}

// Run shows the chat until the user quits, ctx ends, a signal arrives, or
// the engine fails to load. The conversation is autosaved after every user
// message and every answer, every few seconds while a draft or an answer
// grows, and once more on every exit path (a panic in the UI included); an
// answer still streaming is saved as a partial answer. SIGHUP (the terminal
// closed), SIGINT, SIGTERM and SIGQUIT save and end the chat like a quit.
// A quit by the user or a signal returns nil.
func Run(ctx context.Context, opts Options) error {
	if opts.Engine == nil {
		return errors.New("ui.Run: Options.Engine is nil")
	}
	cfgPath, explicit := opts.ConfigPath, opts.ConfigPath != ""
	if !explicit {
		cfgPath = DefaultConfigPath()
	}
	cfg, err := LoadConfig(cfgPath, explicit)
	if err != nil {
		return err
	}
	noColor := opts.NoColor || os.Getenv("NO_COLOR") != ""
	themeName := cfg.Theme
	if opts.Theme != "" {
		themeName = opts.Theme
	}
	th, err := themes.Get(themeName, noColor)
	if err != nil {
		if opts.Theme != "" {
			return fmt.Errorf("--theme: %w", err)
		}
		return fmt.Errorf("config %s: %w", cfgPath, err)
	}
	stateDir := opts.StateDir
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	histPath := filepath.Join(stateDir, "history.json")
	hist, saveHist, herr := openHistory(histPath, time.Now(), os.Rename) // a bad history file is not fatal
	profile := lipgloss.ColorProfile()
	if noColor {
		profile = termenv.Ascii
	}
	m, err := newModel(modelConfig{
		eng:       opts.Engine,
		modelName: opts.ModelName,
		modelDir:  opts.ModelDir,
		settings:  opts.Settings,
		count:     opts.CountTokens,
		cfg:       cfg,
		cfgPath:   cfgPath,
		theme:     th,
		noColor:   noColor,
		profile:   profile,
		stateDir:  stateDir,
		history:   hist,
		noHistory: !saveHist,
		now:       time.Now,
	})
	if err != nil {
		return err
	}
	if herr != nil && m.files.stateWarning == "" { // an unusable state dir says so already
		m.setError(herr)
	}
	// runProgram handles the signals: bubbletea's own handler blocks for
	// good sending its QuitMsg when ctx ended the event loop first (main
	// cancels ctx on SIGTERM), and then p.Run never returns.
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithoutSignalHandler()}
	if !opts.Inline {
		popts = append(popts, tea.WithAltScreen(), tea.WithMouseCellMotion())
	}
	input, stopInput, err := m.filterInput(opts.Input)
	if err != nil {
		return err
	}
	defer stopInput()
	popts = append(popts, tea.WithInput(input))
	if opts.Output != nil {
		popts = append(popts, tea.WithOutput(opts.Output))
	}
	p := tea.NewProgram(m, popts...)
	runErr, settled := runProgram(ctx, p)
	// Every exit path saves: quit, ctx end, signal, or a recovered panic
	// (the model may then be half-updated, so a failure to snapshot it
	// leaves the last good snapshot to be written). An answer still
	// streaming is saved as a partial answer marked "interrupted".
	if settled {
		func() {
			defer func() { _ = recover() }()
			m.record(false)
		}()
	}
	saveErr := m.files.saver.flush()
	if p := m.files.saver.currentPath(); opts.Report != nil && p != "" && saveErr == nil {
		if _, err := os.Stat(p); err == nil {
			fmt.Fprintf(opts.Report, "conversation saved to %s (reopen it with /load %s)\n", p, loadName(p, filepath.Join(stateDir, "conversations")))
		}
	}
	switch {
	case errors.Is(runErr, errSignal):
		return errors.Join(saveErr)
	case ctx.Err() != nil:
		// The caller ended the session; the engine may have closed first.
		return errors.Join(ctx.Err(), saveErr)
	case m.fatal != nil:
		return m.fatal
	case errors.Is(runErr, tea.ErrProgramPanic):
		return fmt.Errorf("ui crashed (conversation saved to %s): %w", m.files.saver.currentPath(), runErr)
	case errors.Is(runErr, tea.ErrInterrupted):
		return errors.Join(saveErr)
	case runErr != nil:
		return errors.Join(fmt.Errorf("ui: %w", runErr), saveErr)
	}
	if saveErr != nil {
		return fmt.Errorf("autosave: %w", saveErr)
	}
	return nil
}

// loadName is what /load needs in a new session, whose conversations
// folder is convDir, to reopen the file at path: its bare name when it
// lies there, else the whole path (a temporary folder the chat fell back
// to, or a file /load or /save named elsewhere).
func loadName(path, convDir string) string {
	if filepath.Clean(filepath.Dir(path)) == filepath.Clean(convDir) {
		return strings.TrimSuffix(filepath.Base(path), ".json")
	}
	return path
}

// errSignal is runProgram's error when a signal ended the chat.
var errSignal = errors.New("stopped by a signal")

// exitGrace is how long runProgram waits for the program to end after a
// signal or ctx end before it gives up on it (a hung UI loop must not keep
// the process, and the last snapshot, from being saved).
const exitGrace = 3 * time.Second

// runProgram runs p until it ends. SIGHUP, SIGINT, SIGTERM and SIGQUIT
// quit it the way /quit does (saving first); the returned error is then
// errSignal. settled reports that p.Run returned, so the model may be read;
// when p does not end within exitGrace of a signal or of ctx ending, it is
// left running and settled is false.
func runProgram(ctx context.Context, p *tea.Program) (err error, settled bool) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() {
		_, err := p.Run()
		done <- err
	}()
	var signalled bool
	var grace <-chan time.Time
	ctxDone := ctx.Done()
	for {
		select {
		case err := <-done:
			// After a signal the terminal may be gone (SIGHUP), so a read
			// or write error is part of the signal, not a failure.
			if signalled && !errors.Is(err, tea.ErrProgramPanic) {
				err = errSignal
			}
			return err, true
		case <-sigs:
			if !signalled {
				signalled = true
				p.Send(signalMsg{})
			}
			if grace == nil {
				grace = time.After(exitGrace)
			}
		case <-ctxDone:
			ctxDone = nil
			if grace == nil {
				grace = time.After(exitGrace)
			}
		case <-grace:
			p.Kill()
			if signalled {
				return errSignal, false
			}
			return ctx.Err(), false
		}
	}
}

// filterInput starts pasteInput between in (nil = stdin) and bubbletea and
// returns the end bubbletea reads. A terminal is put into raw mode here
// (bubbletea only does that for a terminal it reads itself); stop restores
// it and stops the filter.
func (m *model) filterInput(in io.Reader) (io.Reader, func(), error) {
	if in == nil {
		in = os.Stdin
	}
	restore := func() {}
	if f, ok := in.(*os.File); ok && term.IsTerminal(f.Fd()) {
		st, err := term.MakeRaw(f.Fd())
		if err != nil {
			return nil, nil, fmt.Errorf("terminal raw mode: %w", err)
		}
		restore = func() { _ = term.Restore(f.Fd(), st) }
	}
	src, err := cancelreader.NewReader(in)
	if err != nil {
		restore()
		return nil, nil, fmt.Errorf("terminal input: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		restore()
		return nil, nil, fmt.Errorf("terminal input: %w", err)
	}
	m.sess.input = newPasteInput()
	go func() { _ = m.sess.input.copy(pw, src) }()
	stop := func() {
		src.Cancel()
		// Closing the write end ends bubbletea's reader (EOF); the read end
		// is left to it (it may still be reading) and to the GC.
		pw.Close()
		restore()
	}
	// bubbletea gets the pipe as a plain io.Reader, not an *os.File: for a
	// file it would poll it with an epoll cancel reader and close it at
	// shutdown even when its read loop has not stopped within its 500 ms
	// wait (seen under load), a data race on the descriptor. A plain
	// reader's loop simply ends at the EOF that stop causes.
	return struct{ io.Reader }{pr}, stop, nil
}
