package engine

import (
	"mlxchat/models/chat"
)

// chatTemplate adapts a models/chat template to the engine's Template.
type chatTemplate struct{ t *chat.Template }

func (c chatTemplate) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	return c.RenderVars(msgs, addGenerationPrompt, nil)
}

// RenderVars renders with extra template variables (enable_thinking).
func (c chatTemplate) RenderVars(msgs []Message, addGenerationPrompt bool, vars map[string]any) (string, error) {
	cm := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chat.Message{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning}
	}
	return c.t.RenderWith(cm, addGenerationPrompt, vars)
}

// NewTemplate wraps a compiled models/chat template for New.
func NewTemplate(t *chat.Template) Template { return chatTemplate{t} }
