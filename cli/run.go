package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"mlxchat/engine"
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
		b, err := os.ReadFile(c.promptFile)
		if err != nil {
			return "", fmt.Errorf("--prompt-file: %w", err)
		}
		return string(b), nil
	}
	if io_.StdinIsTerminal && c.promptFile != "-" {
		return "", usageErr(errors.New("no prompt: give --prompt TEXT, --prompt-file FILE or pipe it on stdin"))
	}
	if io_.Stdin == nil {
		return "", usageErr(errors.New("no prompt: give --prompt TEXT or --prompt-file FILE"))
	}
	b, err := io.ReadAll(io_.Stdin)
	if err != nil {
		return "", fmt.Errorf("reading the prompt from stdin: %w", err)
	}
	return string(b), nil
}

// runCmd prints the streamed answer to one prompt, then stats on stderr.
// Cancelling ctx (Ctrl+C) stops the answer, keeps what was printed, and
// returns context.Canceled.
func runCmd(ctx context.Context, c *config, model string, io_ IO) error {
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
	b, closeModel, err := openBundle(ctx, c, model, io_.Stderr)
	if err != nil {
		return err
	}
	defer closeModel()
	e, err := engine.FromBundle(b, engine.Options{Settings: c.settings()})
	if err != nil {
		return err
	}
	e.Start(context.Background())
	defer e.Close()
	id := e.Submit(engine.Generate{Conversation: []engine.Message{{Role: engine.RoleUser, Content: prompt}}})
	var stats *engine.Stats
	var cache engine.CacheState
	cancelled := false
	done := ctx.Done()
	for {
		select {
		case <-done:
			e.Submit(engine.Cancel{ID: id})
			cancelled, done = true, nil
		case ev, ok := <-e.Events():
			if !ok {
				return errors.New("engine stopped before the answer ended")
			}
			if ev.Request() != id {
				continue
			}
			switch v := ev.(type) {
			case engine.Token:
				if _, err := io.WriteString(io_.Stdout, v.Text); err != nil {
					return fmt.Errorf("writing the answer: %w", err)
				}
			case engine.Stats:
				stats = &v
			case engine.CacheState:
				cache = v
			case engine.Done:
				if v.Text != "" && !strings.HasSuffix(v.Text, "\n") {
					fmt.Fprintln(io_.Stdout)
				}
				if !c.quiet && stats != nil {
					fmt.Fprintln(io_.Stderr, formatStats(*stats, cache, v.Reason))
				}
				if cancelled || v.Reason == engine.DoneCancelled {
					return context.Canceled
				}
				return nil
			case engine.Error:
				return v.Err
			}
		}
	}
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
	kv := humanBytes(s.KVBytes)
	if cache.Seen > 0 {
		limit := "∞"
		if cache.Max > 0 {
			limit = fmt.Sprint(cache.Max)
		}
		kv = fmt.Sprintf("%d/%s live, %d trimmed, %s", cache.Live, limit, cache.Trimmed, kv)
	}
	return fmt.Sprintf("%s, %.1f tok/s · decode %d tokens, %.1f tok/s · first token %s · kv %s · rss %s · %s",
		prompt, s.PromptTokPerSec, s.DecodeTokens, s.DecodeTokPerSec,
		first, kv, humanBytes(s.MemoryBytes), reason)
}

// humanBytes formats a byte count with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
