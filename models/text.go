package models

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"mlxchat/models/chat"
	"mlxchat/models/checkpoint"
	"mlxchat/models/tokenizer"
)

// Text is what turns a conversation into a model's tokens and back: the
// tokenizer, the chat template and the ids that end an answer.
type Text struct {
	// Tokenizer is tokenizer.json with tokenizer_config.json.
	Tokenizer *tokenizer.Tokenizer
	// Template is the model's chat template.
	Template *chat.Template
	// StopTokens end an answer: the model's end-of-sequence ids and the
	// template's end-of-turn token.
	StopTokens []int32
}

// LoadText loads and checks the tokenizer and chat template of the model
// directory dir for the model info describes (Model.Config): tokenizer.json
// must parse and hold no more ids than the model has rows (vocab_size),
// the template must compile and render a test conversation (chat.Load),
// and the model must have an end-of-sequence token. Each file read must be
// a regular file of a bounded size (checkFiles). Each error is one line
// naming the file.
func LoadText(dir string, info Info) (*Text, error) {
	tokPath := filepath.Join(dir, checkpoint.TokenizerFile)
	cfgPath := filepath.Join(dir, checkpoint.TokenizerConfigFile)
	if err := checkFiles(dir); err != nil {
		return nil, err
	}
	tk, err := tokenizer.LoadDir(dir)
	if err != nil {
		return nil, namingFile(err, dir, "loading tokenizer "+tokPath)
	}
	tmpl, err := chat.Load(dir)
	if err != nil {
		return nil, namingFile(err, dir, cfgPath)
	}
	// Checked here, not at the first prefill: ids the model has no row for.
	if n := tk.VocabSize(); n > info.VocabSize {
		return nil, fmt.Errorf("%s has %d token ids but %s has vocab_size %d: the tokenizer does not belong to this model",
			tokPath, n, filepath.Join(dir, checkpoint.ConfigFile), info.VocabSize)
	}
	stops := tmpl.StopTokens(tk, info.StopIDs)
	if len(stops) == 0 {
		return nil, errors.New("the model has no end-of-sequence token (generation_config.json eos_token_id)")
	}
	return &Text{Tokenizer: tk, Template: tmpl, StopTokens: stops}, nil
}

// namingFile returns err as is when its message already names a file in
// dir, else prefixed with what (so the one-line error names the file once).
func namingFile(err error, dir, what string) error {
	if strings.Contains(err.Error(), dir) {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}
