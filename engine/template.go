package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ardanlabs/jinja"

	"mlxchat/models/checkpoint"
	"mlxchat/models/tokenizer"
)

// Interim: until models/chat (the team's chat-template package) lands, the
// engine renders the model's Jinja chat template itself with
// github.com/ardanlabs/jinja. loadTemplate is the only entry point, so the
// switch to models/chat is local to this file.

// jinjaTemplate renders a compiled chat template.
type jinjaTemplate struct {
	t        *jinja.Template
	bos, eos string
}

func (j jinjaTemplate) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	ms := make([]any, len(msgs))
	for i, m := range msgs {
		ms[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	out, err := j.t.Render(map[string]any{
		"messages":              ms,
		"add_generation_prompt": addGenerationPrompt,
		"bos_token":             j.bos,
		"eos_token":             j.eos,
	})
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return out, nil
}

// endOfTurnTokens are the end-of-turn markers of common chat templates; the
// ones the tokenizer knows become stop tokens.
var endOfTurnTokens = []string{"<end_of_turn>", "<|im_end|>", "<|eot_id|>", "<|end|>", "<turn|>"}

// loadTemplate reads chat_template.jinja, else tokenizer_config.json's
// chat_template (a string, or a list of named templates of which "default"
// is used), and returns it with the end-of-turn strings that stop answers.
func loadTemplate(dir string, tk *tokenizer.Tokenizer) (Template, []string, error) {
	src, err := templateSource(dir)
	if err != nil {
		return nil, nil, err
	}
	t, err := jinja.Compile(src)
	if err != nil {
		return nil, nil, fmt.Errorf("compiling the chat template: %w", err)
	}
	var stops []string
	for _, s := range endOfTurnTokens {
		if _, ok := tk.TokenID(s); ok {
			stops = append(stops, s)
		}
	}
	return jinjaTemplate{t: t, bos: tk.BOSToken(), eos: tk.EOSToken()}, stops, nil
}

func templateSource(dir string) (string, error) {
	jinjaPath := filepath.Join(dir, checkpoint.ChatTemplateFile)
	if b, err := os.ReadFile(jinjaPath); err == nil {
		return string(b), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading %s: %w", jinjaPath, err)
	}
	cfgPath := filepath.Join(dir, checkpoint.TokenizerConfigFile)
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		return "", fmt.Errorf("no chat template: %w", err)
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w", cfgPath, err)
	}
	var s string
	if err := json.Unmarshal(cfg.ChatTemplate, &s); err == nil && s != "" {
		return s, nil
	}
	var named []struct{ Name, Template string }
	if err := json.Unmarshal(cfg.ChatTemplate, &named); err == nil {
		for _, n := range named {
			if n.Name == "default" {
				return n.Template, nil
			}
		}
	}
	return "", fmt.Errorf("%s has no chat_template and %s is missing", cfgPath, jinjaPath)
}
