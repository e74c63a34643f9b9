package engine

import (
	"mlxchat/models/chat"
)

// chatTemplate adapts a models/chat template to the engine's Template.
type chatTemplate struct{ t *chat.Template }

func (c chatTemplate) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	cm := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chat.Message{Role: m.Role, Content: m.Content}
	}
	return c.t.Render(cm, addGenerationPrompt)
}

// NewTemplate wraps a compiled models/chat template for New.
func NewTemplate(t *chat.Template) Template { return chatTemplate{t} }
