package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// This file is the chat's side of reasoning models (Qwen 3, OLMo 3 Think):
// the engine streams their reasoning apart from the answer
// (engine.Token.Reasoning, engine.Done.Reasoning); the transcript shows it
// as a dimmed part folded above the answer (Ctrl+O unfolds every fold),
// the turn keeps it and sends it back as engine.Message.Reasoning (the
// template decides what past reasoning the model sees), conversation
// files save it (also while it streams, and when the model was stopped
// while thinking: an answer without text, its fold titled "stopped while
// thinking", or "cut at /max 30 tokens while thinking" when the token
// limit ended it), and /think on|off asks the template for reasoning or
// none (engine.Settings.NoThinking).

// thinkingSegment is the folded part for a turn's reasoning; ok is false
// when there is none.
func thinkingSegment(t *turn) (segment, bool) {
	r := strings.TrimSpace(t.reasoning)
	if r == "" {
		return segment{}, false
	}
	state := "thought"
	if t.partial && t.content == "" {
		state = endedWhileThinking(t) // no answer text came
	}
	return segment{folded: true, dim: true, title: state + " · " + wordCount(r), text: r}, true
}

// endedWhileThinking says why an answer with reasoning and no text ended,
// from its note: "cut at /max 30 tokens while thinking" for the token
// limit, "stopped while thinking" for Esc...
func endedWhileThinking(t *turn) string {
	switch n := t.note; {
	case strings.Contains(n, "max tokens") && t.maxTokens > 0:
		return fmt.Sprintf("cut at /max %d tokens while thinking", t.maxTokens)
	case strings.Contains(n, "max tokens"):
		return "cut at the token limit while thinking"
	case strings.Contains(n, noteInterrupted):
		return "interrupted while thinking"
	case strings.Contains(n, "failed"):
		return "failed while thinking"
	case strings.Contains(n, "repeating"):
		return "stopped repeating itself while thinking"
	}
	return "stopped while thinking"
}

// wordCount is "N words" (or "1 word") for a fold's title.
func wordCount(s string) string {
	n := len(strings.Fields(s))
	if n == 1 {
		return "1 word"
	}
	return fmt.Sprintf("%d words", n)
}

// renderDim renders a folded part's text as plain dimmed text (reasoning
// is a draft, not markdown worth laying out).
func (tr *transcript) renderDim(text string) string {
	return indent(tr.theme.Dim.Render(ansi.Wrap(sanitize(text), tr.width-2, "")), "  ")
}

// renderThinking renders the reasoning of a streaming answer above its
// text: one dimmed line while folded, the text as it comes when unfolded.
func (tr *transcript) renderThinking(t *turn) string {
	r := strings.TrimSpace(t.reasoning)
	if r == "" {
		return ""
	}
	state := "thinking…"
	if t.stream != nil && t.stream.text != "" {
		state = "thought"
	}
	title := state + " · " + wordCount(r)
	if !tr.unfold {
		return "  " + tr.theme.Fold.Render("▸ "+title+" (Ctrl+O shows it)")
	}
	return "  " + tr.theme.Fold.Render("▾ "+title+" (Ctrl+O hides it)") + "\n" + tr.renderDim(r)
}

// thinkCommand carries out /think on|off.
func (m *model) thinkCommand(c Command) error {
	s := m.set.cur
	s.NoThinking = c.Off
	if m.info.Name != "" && !m.info.ThinkingSwitch {
		return fmt.Errorf("/think: the chat template of %s has no thinking switch (enable_thinking)", m.info.Name)
	}
	msg := "thinking on: the model may reason before it answers (Ctrl+O shows the reasoning)"
	if c.Off {
		msg = "thinking off: the template asks the model to answer without reasoning"
	}
	return m.changeSettings("/think", s, msg)
}

// parseOnOff reads "on" or "off" (any case); Command.Off is set for off.
func parseOnOff(c *Command, arg string) error {
	switch strings.ToLower(arg) {
	case "on":
		return nil
	case "off":
		c.Off = true
		return nil
	}
	return fmt.Errorf("expected on or off, got %q", arg)
}

// toggleFolds shows or hides the folded parts of every answer (Ctrl+O).
func (m *model) toggleFolds() {
	if m.tr.toggleFold() {
		m.st.setNotice("folded parts shown (Ctrl+O hides them)")
	} else {
		m.st.setNotice("folded parts hidden (Ctrl+O shows them)")
	}
	m.tr.refresh()
}
