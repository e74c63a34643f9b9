package models

import (
	"fmt"
	"path/filepath"
	"slices"

	"mlxchat/models/blocks"
	"mlxchat/models/checkpoint"
	"mlxchat/models/cohere2"
	"mlxchat/models/gemma3"
	"mlxchat/models/gemma3n"
	"mlxchat/models/llama"
	"mlxchat/models/olmo3"
	"mlxchat/models/qwen3"
	"mlxchat/tensor"
)

// Every architecture takes greedy decoding's argmax itself.
var (
	_ Greedy = (*gemma3n.Model)(nil)
	_ Greedy = (*gemma3.Model)(nil)
	_ Greedy = (*llama.Model)(nil)
	_ Greedy = (*qwen3.Model)(nil)
	_ Greedy = (*olmo3.Model)(nil)
	_ Greedy = (*cohere2.Model)(nil)
)

// architecture builds a Model from an opened checkpoint.
type architecture struct {
	types []string
	build func(ck *checkpoint.Checkpoint, be tensor.Backend) (Model, error)
}

// architectures lists every supported model family; a new one is one entry.
func architectures() []architecture {
	return []architecture{
		{gemma3n.ModelTypes, func(ck *checkpoint.Checkpoint, be tensor.Backend) (Model, error) {
			return gemma3n.New(ck, be)
		}},
		{gemma3.ModelTypes, func(ck *checkpoint.Checkpoint, be tensor.Backend) (Model, error) {
			return gemma3.New(ck, be)
		}},
		{llama.ModelTypes, func(ck *checkpoint.Checkpoint, be tensor.Backend) (Model, error) {
			return llama.New(ck, be)
		}},
		{qwen3.ModelTypes, func(ck *checkpoint.Checkpoint, be tensor.Backend) (Model, error) {
			return qwen3.New(ck, be)
		}},
		{olmo3.ModelTypes, func(ck *checkpoint.Checkpoint, be tensor.Backend) (Model, error) {
			return olmo3.New(ck, be)
		}},
		{cohere2.ModelTypes, func(ck *checkpoint.Checkpoint, be tensor.Backend) (Model, error) {
			return cohere2.New(ck, be)
		}},
	}
}

// KnownModelTypes lists the config.json model_type values Load accepts.
func KnownModelTypes() []string {
	var out []string
	for _, a := range architectures() {
		out = append(out, a.types...)
	}
	return out
}

// CheckConfig reports whether Load supports the model_type that the
// config.json at path names; the error names the file and lists the
// supported types. hub.Options.CheckConfig calls it before downloading
// any weights.
func CheckConfig(path string) error {
	if err := checkFile(path, maxSideFileBytes); err != nil {
		return err
	}
	cfg, err := checkpoint.LoadConfig(path)
	if err != nil {
		return err
	}
	mt, err := cfg.ModelType()
	if err != nil {
		return err
	}
	if slices.Contains(KnownModelTypes(), mt) {
		return nil
	}
	return checkpoint.UnknownModelType(cfg, KnownModelTypes())
}

// Load opens the MLX model directory dir and builds the architecture its
// config.json model_type names, on backend. Every file it reads must be a
// regular file (checkFiles: a named pipe or /dev/zero there is an error,
// not a hang or memory run out). The model keeps the checkpoint
// mapped; close it through io.Closer when done. The tokenizer and chat
// template are LoadText's.
func Load(dir string, backend tensor.Backend) (Model, error) {
	return build(dir, backend, checkpoint.Open)
}

// build opens dir with open (checkpoint.Open, or checkpoint.OpenHeaders
// for Check) and builds the architecture its config.json names on
// backend: every check of a load (config.json's values and bounds, the
// weights' headers, each tensor's name, dtype and shape against the
// architecture) runs here, for Load and Check alike.
func build(dir string, backend tensor.Backend, open func(dir string) (*checkpoint.Checkpoint, error)) (Model, error) {
	if backend == nil {
		return nil, fmt.Errorf("loading %s: no backend", dir)
	}
	if err := checkFiles(dir); err != nil {
		return nil, err
	}
	cfg, err := checkpoint.LoadConfig(filepath.Join(dir, checkpoint.ConfigFile))
	if err != nil {
		return nil, err
	}
	mt, err := cfg.ModelType()
	if err != nil {
		return nil, err
	}
	for _, a := range architectures() {
		if !slices.Contains(a.types, mt) {
			continue
		}
		ck, err := open(dir)
		if err != nil {
			return nil, err
		}
		if err := blocks.MapWeights(ck, backend); err != nil {
			ck.Close()
			return nil, err
		}
		m, err := a.build(ck, backend)
		if err != nil {
			ck.Close()
			return nil, fmt.Errorf("loading %s: %w", filepath.Clean(dir), err)
		}
		return m, nil
	}
	return nil, checkpoint.UnknownModelType(cfg, KnownModelTypes())
}
