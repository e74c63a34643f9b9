package models

import (
	"io"

	"mlxchat/models/checkpoint"
	"mlxchat/tensor"
)

// Check reports whether the model directory dir would load on backend as
// a chat model, the way Load followed by LoadText loads it (which is what
// the engine's LoadBundle does), without mapping or reading the weights'
// data: it reads config.json and the other configuration files, every
// safetensors header (checkpoint.OpenHeaders), builds the architecture
// from the headers (so config.json's bounds and each tensor's name, dtype
// and shape are checked by the loader's own code), then loads the
// tokenizer and the chat template as LoadText does (tokenizer.json parsed
// and its vocabulary checked against the model's, the template compiled
// and a test conversation rendered). The error is the one the load would
// give. What Check cannot see is the data itself: a weight file whose
// bytes are garbage of the right size loads.
func Check(dir string, backend tensor.Backend) error {
	m, err := build(dir, backend, checkpoint.OpenHeaders)
	if err != nil {
		return err
	}
	info := m.Config()
	if c, ok := m.(io.Closer); ok {
		c.Close()
	}
	_, err = LoadText(dir, info)
	return err
}
