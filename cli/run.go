package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/term"

	"mlxchat/bytesize"
	"mlxchat/engine"
	"mlxchat/textinput"
)

// readPrompt returns the prompt of `run`: --prompt, --prompt-file (or "-"),
// else stdin when it is not a terminal.
func readPrompt(c *config, io_ IO) (string, error) {
	switch {
	case c.prompt != "" && c.promptFile != "":
		return "", usageErr(errors.New("give either --prompt or --prompt-file, not both"))
	case c.prompt != "":
		return c.prompt, nil
	case c.promptFile != "" && c.promptFile != "-":
		return readTextFile(c.promptFile)
	}
	if io_.StdinIsTerminal && c.promptFile != "-" {
		return "", usageErr(errors.New("no prompt: give --prompt TEXT, --prompt-file FILE or pipe it on stdin"))
	}
	if io_.Stdin == nil {
		return "", usageErr(errors.New("no prompt: give --prompt TEXT or --prompt-file FILE"))
	}
	return readTextStdin(io_.Stdin)
}

// readTextFile reads --prompt-file as text to give the model (the check
// the chat's /read makes: textinput), at most textinput.MaxBytes; input
// that is not text (a binary or huge file, a directory) is a usage error
// naming the file and what was expected.
func readTextFile(path string) (string, error) {
	return textOrUsage(textinput.ReadFile(path, "--prompt-file "+path, textinput.MaxBytes))
}

// readTextStdin is readTextFile for stdin.
func readTextStdin(r io.Reader) (string, error) {
	return textOrUsage(textinput.Read(r, "stdin", textinput.MaxBytes))
}

// textOrUsage makes a textinput.NotTextError, and a prompt file that is
// missing or not readable by the user, a usage error: like any other bad
// --prompt-file, the argument is what must change (exit status 2).
func textOrUsage(text string, err error) (string, error) {
	var nt *textinput.NotTextError
	if errors.As(err, &nt) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return "", usageErr(err)
	}
	return text, err
}

// DefaultRunMaxTokens caps the answer of `run` when neither --max-tokens
// nor the config file sets a limit and the model does not say its context
// length: a model that never stops must not run forever.
const DefaultRunMaxTokens = 4096

// defaultAnswerCap is the answer cap `run` sets when none was asked for
// (0: the settings' MaxTokens stands): the model's context length, else
// DefaultRunMaxTokens, so that a model that never emits its end-of-turn
// token cannot run forever. --max-tokens (or the config's max_tokens)
// overrides it, 0 then meaning no limit. A summary needs none: its pieces
// and answer are capped by the room Summarize keeps for them.
func defaultAnswerCap(c *config, contextLength int) int {
	if c.maxTokens > 0 || c.maxTokensSet || c.summarize {
		return 0
	}
	if contextLength > 0 {
		return contextLength
	}
	return DefaultRunMaxTokens
}

// runCmd prints the streamed answer to one prompt (or, with --summarize,
// the answer about a document summarized in pieces), then stats on stderr.
// Cancelling ctx (Ctrl+C) stops the answer, keeps what was printed, and
// returns context.Canceled.
func runCmd(ctx context.Context, c *config, model string, io_ IO) error {
	var req engine.Request
	var doc string
	if c.summarize {
		var instruction string
		var err error
		doc, instruction, err = readDocument(c, io_)
		if err != nil {
			return err
		}
		req = engine.Summarize{Document: doc, Instruction: instruction}
	} else {
		prompt, err := readPrompt(c, io_)
		if err != nil {
			return err
		}
		if strings.TrimSpace(prompt) == "" {
			switch {
			case c.prompt != "":
				return usageErr(errors.New("--prompt: the prompt is empty (only whitespace)"))
			case c.promptFile != "" && c.promptFile != "-":
				return usageErr(fmt.Errorf("--prompt-file %s: the prompt is empty (want a text file with the prompt)", c.promptFile))
			default:
				return usageErr(errors.New("the prompt read from stdin is empty"))
			}
		}
		req = engine.Generate{Conversation: []engine.Message{{Role: engine.RoleUser, Content: prompt}}}
	}
	b, closeModel, err := openBundle(ctx, c, model, io_.Stderr)
	if err != nil {
		return err
	}
	defer closeModel()
	s := c.settings()
	defaultCap := defaultAnswerCap(c, b.Info.ContextLength)
	if defaultCap > 0 {
		s.MaxTokens = defaultCap
	}
	e, err := engine.FromBundle(b, engine.Options{Settings: s})
	if err != nil {
		return err
	}
	e.Start(context.Background())
	defer e.Close()
	id := e.Submit(req)
	st := &statusLine{w: io_.Stderr, on: (io_.StderrIsTerminal || isTerminal(io_.Stderr)) && !c.quiet, width: terminalWidth(io_.Stderr)}
	var stats *engine.Stats
	var cache engine.CacheState
	cancelled := false
	thinking := false // reasoning is being written to stderr
	done := ctx.Done()
	for {
		select {
		case <-done:
			e.Submit(engine.Cancel{ID: id})
			cancelled, done = true, nil
		case ev, ok := <-e.Events():
			if !ok {
				st.clear()
				return errors.New("engine stopped before the answer ended")
			}
			if ev.Request() != id {
				continue
			}
			switch v := ev.(type) {
			case engine.PrefillProgress:
				st.show(fmt.Sprintf("prefill %d/%d chunks · %d/%d tokens · %.0f tok/s", v.Chunk, v.Chunks, v.Tokens, v.Total, v.TokPerSec))
			case engine.SummarizeProgress:
				st.prefix = fmt.Sprintf("summarize %d/%d", v.Piece, v.Pieces)
				if v.Phase == engine.PhaseReduce {
					st.prefix = fmt.Sprintf("combine %d/%d (round %d)", v.Piece, v.Pieces, v.Round)
				}
				st.show("")
			case engine.PieceSummary:
				if !c.quiet {
					st.clear()
					fmt.Fprintf(io_.Stderr, "%s\n%s\n\n", pieceTitle(v.Piece, len(doc)), strings.TrimSpace(v.Piece.Text))
				}
			case engine.Token:
				st.clear()
				if v.Reasoning {
					// A reasoning model's thinking goes to stderr (not with
					// --quiet), so stdout holds the answer alone.
					if !c.quiet {
						if !thinking {
							fmt.Fprintln(io_.Stderr, "thinking:")
						}
						io.WriteString(io_.Stderr, v.Text)
					}
					thinking = true
					continue
				}
				if thinking {
					thinking = false
					if !c.quiet {
						fmt.Fprint(io_.Stderr, "\n\n")
					}
				}
				if _, err := io.WriteString(io_.Stdout, v.Text); err != nil {
					return fmt.Errorf("writing the answer: %w", err)
				}
			case engine.Stats:
				stats = &v
			case engine.CacheState:
				cache = v
			case engine.Done:
				st.clear()
				if thinking && !c.quiet {
					fmt.Fprintln(io_.Stderr) // the reasoning ended the output
				}
				if v.Text != "" && !strings.HasSuffix(v.Text, "\n") {
					fmt.Fprintln(io_.Stdout)
				}
				if v.Reason == engine.DoneCancelled && c.summarize && v.Text == "" && len(v.Pieces) > 0 {
					if err := keepPieces(c, io_, v.Pieces, len(doc)); err != nil {
						return err
					}
				}
				if !c.quiet && stats != nil {
					fmt.Fprintln(io_.Stderr, formatStats(*stats, cache, v.Reason))
				}
				if v.Reason == engine.DoneMaxTokens && defaultCap > 0 {
					fmt.Fprintf(io_.Stderr, "mlxchat run: the answer was cut at %d tokens, the default limit (the model's context length, or %d when unknown); set --max-tokens N to change it\n", defaultCap, DefaultRunMaxTokens)
				}
				if cancelled || v.Reason == engine.DoneCancelled {
					return context.Canceled
				}
				return nil
			case engine.Error:
				st.clear()
				var room *engine.SummarizeRoomError
				if errors.As(v.Err, &room) {
					return usageErr(summarizeRoom(c, room))
				}
				return v.Err
			}
		}
	}
}

// readDocument returns the document and instruction of `run --summarize`:
// the document from --prompt-file (or "-"), else stdin when it is not a
// terminal; the instruction from --prompt ("" = the engine's default).
func readDocument(c *config, io_ IO) (doc, instruction string, err error) {
	switch {
	case c.promptFile != "" && c.promptFile != "-":
		if doc, err = readTextFile(c.promptFile); err != nil {
			return "", "", err
		}
	case io_.StdinIsTerminal && c.promptFile != "-", io_.Stdin == nil:
		return "", "", usageErr(errors.New("--summarize: no document: give --prompt-file FILE or pipe it on stdin (--prompt is the instruction)"))
	default:
		if doc, err = readTextStdin(io_.Stdin); err != nil {
			return "", "", err
		}
	}
	if strings.TrimSpace(doc) == "" {
		if c.promptFile != "" && c.promptFile != "-" {
			return "", "", usageErr(fmt.Errorf("--prompt-file %s: the document is empty (want a text file to summarize)", c.promptFile))
		}
		return "", "", usageErr(errors.New("--summarize: the document read from stdin is empty"))
	}
	return doc, c.prompt, nil
}

// summarizeRoom words the engine's SummarizeRoomError for `run`: which
// flags leave the document too little room, and which to change.
func summarizeRoom(c *config, e *engine.SummarizeRoomError) error {
	capName := fmt.Sprintf("--max-kv-size %d", e.Cap)
	var fixes []string
	if c.maxKV > 0 {
		fixes = append(fixes, "raise --max-kv-size")
	} else {
		capName = fmt.Sprintf("the model's %d-token context (--max-kv-size is off)", e.Cap)
	}
	fixes = append(fixes, "shorten --prompt or --system")
	if !e.ShortestAnswers {
		fixes = append(fixes, "lower --max-tokens")
	}
	fix := strings.Join(fixes, ", or ")
	return fmt.Errorf("--summarize: %s leaves %d tokens for pieces of the document, want at least %d: the prompt around it (chat template, --system, --prompt) takes %d and each answer keeps room for %d; %s",
		capName, e.Left, e.Need, e.PromptTokens, e.AnswerTokens, fix)
}

// keepPieces is what `run --summarize` keeps when it is stopped before
// the final answer began: the finished piece summaries go to stdout (where
// a redirected answer would have gone) unless they were already shown on
// the same terminal, and stderr says how far it got.
func keepPieces(c *config, io_ IO, pieces []engine.SummaryPiece, docLen int) error {
	shown := !c.quiet && isTerminal(io_.Stdout) && (io_.StderrIsTerminal || isTerminal(io_.Stderr))
	if !shown {
		for _, p := range pieces {
			if _, err := fmt.Fprintf(io_.Stdout, "%s\n%s\n\n", pieceTitle(p, docLen), strings.TrimSpace(p.Text)); err != nil {
				return fmt.Errorf("writing the piece summaries: %w", err)
			}
		}
	}
	last := pieces[len(pieces)-1]
	fmt.Fprintf(io_.Stderr, "mlxchat run: stopped after %d of %d pieces (bytes 0-%d of %d summarized); no combined answer\n",
		len(pieces), last.Pieces, last.SourceEnd, docLen)
	return nil
}

// pieceTitle heads a piece summary on stderr: "── piece 3/9 · bytes
// 2048-3071 of 9000 ──", or "── combined 1/2 (round 1) ──".
func pieceTitle(p engine.SummaryPiece, docLen int) string {
	if p.Phase == engine.PhaseReduce {
		return fmt.Sprintf("── combined %d/%d (round %d) ──", p.Piece, p.Pieces, p.Round)
	}
	cut := ""
	if p.Reason == engine.DoneMaxTokens {
		cut = " · cut at the answer room"
	}
	return fmt.Sprintf("── piece %d/%d · bytes %d-%d of %d%s ──", p.Piece, p.Pieces, p.SourceStart, p.SourceEnd, docLen, cut)
}

// statusLine draws progress on one terminal line of stderr, redrawn in
// place, and erases it before anything else is written; when stderr is
// not a terminal it writes nothing.
type statusLine struct {
	w      io.Writer
	on     bool
	width  int    // the terminal's columns; a longer line is cut (0 = unknown)
	prefix string // e.g. "summarize 3/9", shown before the progress
	shown  bool
}

func (s *statusLine) show(text string) {
	if !s.on {
		return
	}
	var parts []string
	for _, p := range []string{s.prefix, text} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	line := strings.Join(parts, " · ")
	if r := []rune(line); s.width > 1 && len(r) >= s.width {
		// A wrapped line could not be erased in place.
		line = string(r[:s.width-1])
	}
	fmt.Fprintf(s.w, "\r\x1b[K%s", line)
	s.shown = true
}

func (s *statusLine) clear() {
	if s.shown {
		fmt.Fprint(s.w, "\r\x1b[K")
		s.shown = false
	}
}

// terminalWidth is the width of the terminal w is, 0 when unknown.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

// isTerminal reports whether w is a terminal (a *os.File on a tty).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// formatStats is the one-line summary `run` prints on stderr. The cache
// part says how many keys are live under the cap and how many tokens were
// trimmed, so a prompt cut to fit --max-kv-size never goes unnoticed.
func formatStats(s engine.Stats, cache engine.CacheState, reason engine.DoneReason) string {
	prompt := fmt.Sprintf("prompt %d tokens", s.PromptTokens)
	var notes []string
	if s.ReusedTokens > 0 {
		if s.ReusedTrimmed > 0 {
			notes = append(notes, fmt.Sprintf("%d cached, %d of them trimmed", s.ReusedTokens, s.ReusedTrimmed))
		} else {
			notes = append(notes, fmt.Sprintf("%d cached", s.ReusedTokens))
		}
	}
	if todo := s.PromptTokens - s.ReusedTokens; s.PrefillTokens < todo {
		notes = append(notes, fmt.Sprintf("%d of %d prefilled", s.PrefillTokens, todo))
	}
	if len(notes) > 0 {
		prompt += " (" + strings.Join(notes, "; ") + ")"
	}
	first := "-"
	if s.TimeToFirstToken > 0 {
		first = s.TimeToFirstToken.Round(1e6).String()
	}
	kv := bytesize.Format(s.KVBytes)
	if cache.Seen > 0 {
		limit := "∞"
		if cache.Max > 0 {
			limit = fmt.Sprint(cache.Max)
		}
		kv = fmt.Sprintf("%d/%s live, %d trimmed, %s", cache.Live, limit, cache.Trimmed, kv)
	}
	return fmt.Sprintf("%s, %.1f tok/s · decode %d tokens, %.1f tok/s · first token %s · kv %s · rss %s · %s",
		prompt, s.PromptTokPerSec, s.DecodeTokens, s.DecodeTokPerSec,
		first, kv, bytesize.Format(s.MemoryBytes), reason)
}
