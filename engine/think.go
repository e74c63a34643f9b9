package engine

import "strings"

// The tags around a model's reasoning (Qwen 3, OLMo 3 Think, DeepSeek R1
// distills).
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// varsRenderer is a Template that takes extra template variables;
// chatTemplate implements it.
type varsRenderer interface {
	RenderVars(messages []Message, addGenerationPrompt bool, vars map[string]any) (string, error)
}

// templateReader is a Template that can say whether it reads a variable.
type templateReader interface {
	Reads(name string) bool
}

// Reads reports whether the chat template mentions the variable name.
func (c chatTemplate) Reads(name string) bool { return c.t.Reads(name) }

// withVars renders through base with extra variables, when base takes
// them (a template that does not is rendered as it is).
type withVars struct {
	base Template
	vars map[string]any
}

func (t withVars) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	if r, ok := t.base.(varsRenderer); ok {
		return r.RenderVars(msgs, addGenerationPrompt, t.vars)
	}
	return t.base.Render(msgs, addGenerationPrompt)
}

// forSettings returns the prompt tools for a request under s: with
// NoThinking the template renders with enable_thinking=false.
func (w promptTools) forSettings(s Settings) promptTools {
	if s.NoThinking {
		w.tmpl = withVars{base: w.tmpl, vars: map[string]any{"enable_thinking": false}}
	}
	return w
}

// thinkTags are the ids of the reasoning tags.
type thinkTags struct{ open, close int32 }

// findThinkTags returns the tags' ids when the tokenizer has each as one
// token (nil otherwise: the model does not reason in tags).
func findThinkTags(tok Tokenizer) *thinkTags {
	var ids [2]int32
	for i, s := range []string{thinkOpen, thinkClose} {
		got, err := tok.Encode(s)
		if err != nil || len(got) != 1 {
			return nil
		}
		ids[i] = got[0]
	}
	return &thinkTags{open: ids[0], close: ids[1]}
}

// is reports whether id is one of the tags.
func (t *thinkTags) is(id int32) bool { return t != nil && (id == t.open || id == t.close) }

// openAtEnd reports whether the prompt ends inside a reasoning block (the
// template opened <think> for the model, as OLMo 3 Think's does): an open
// tag among its last few tokens with no close tag after it.
func (t *thinkTags) openAtEnd(prompt []int32) bool {
	if t == nil {
		return false
	}
	for i := len(prompt) - 1; i >= max(0, len(prompt)-16); i-- {
		switch prompt[i] {
		case t.open:
			return true
		case t.close:
			return false
		}
	}
	return false
}

// textPart is a piece of streamed text: answer or reasoning.
type textPart struct {
	text      string
	reasoning bool
}

// thinkSplitter splits streamed answer text into reasoning (between
// <think> and </think>) and answer. The tags never reach the output; one
// split across pieces is held back until it is decided. A reasoning block
// is recognised only before the answer has begun. The newlines templates
// strip when they render a past turn are dropped: after <think>, before
// </think>, and at the start of the answer that follows a reasoning block.
type thinkSplitter struct {
	on       bool   // the model reasons in tags
	inside   bool   // within a reasoning block
	answered bool   // answer text other than white space was emitted
	trimLead bool   // drop newlines at the start of the current segment
	pending  string // held back: part of a tag, or newlines before </think>
}

// newThinkSplitter starts a splitter; inside when the prompt already
// opened a reasoning block.
func newThinkSplitter(on, inside bool) *thinkSplitter {
	return &thinkSplitter{on: on, inside: on && inside, trimLead: on && inside}
}

// add takes the next streamed text and returns what can be shown now.
func (t *thinkSplitter) add(text string) []textPart {
	if !t.on {
		if text == "" {
			return nil
		}
		return []textPart{{text: text}}
	}
	buf := t.pending + text
	t.pending = ""
	var out []textPart
	for {
		tag := thinkOpen
		if t.inside {
			tag = thinkClose
		} else if t.answered {
			out = t.emit(out, buf)
			return out
		}
		if i := strings.Index(buf, tag); i >= 0 {
			seg := buf[:i]
			if !t.inside && strings.TrimSpace(seg) != "" {
				// The answer began before the tag: it is text.
				return t.emit(out, buf)
			}
			if t.inside {
				seg = strings.TrimRight(seg, "\n")
			}
			out = t.emit(out, seg)
			t.inside = !t.inside
			t.trimLead = true
			buf = buf[i+len(tag):]
			continue
		}
		// Hold back what may begin the tag and, inside, trailing newlines
		// (they are dropped if </think> follows).
		hold := 0
		for l := min(len(tag)-1, len(buf)); l > 0; l-- {
			if strings.HasSuffix(buf, tag[:l]) {
				hold = l
				break
			}
		}
		if t.inside {
			rest := buf[:len(buf)-hold]
			hold += len(rest) - len(strings.TrimRight(rest, "\n"))
		}
		t.pending = buf[len(buf)-hold:]
		return t.emit(out, buf[:len(buf)-hold])
	}
}

// flush returns the text held back when the answer ends.
func (t *thinkSplitter) flush() []textPart {
	buf := t.pending
	t.pending = ""
	if t.inside {
		buf = strings.TrimRight(buf, "\n")
	}
	return t.emit(nil, buf)
}

// emit appends text to out as the current kind, dropping leading newlines
// while trimLead holds.
func (t *thinkSplitter) emit(out []textPart, text string) []textPart {
	if t.trimLead {
		text = strings.TrimLeft(text, "\n")
		if text == "" {
			return out
		}
		t.trimLead = false
	}
	if text == "" {
		return out
	}
	if !t.inside && strings.TrimSpace(text) != "" {
		t.answered = true
	}
	if n := len(out); n > 0 && out[n-1].reasoning == t.inside {
		out[n-1].text += text
		return out
	}
	return append(out, textPart{text: text, reasoning: t.inside})
}
