package models

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"mlxchat/models/checkpoint"
	"mlxchat/safefile"
)

// maxSideFileBytes bounds each file of a model directory that is read
// whole into memory (config.json, the tokenizer files, the chat template,
// the shard index): real ones are at most tens of MiB (Gemma 3's
// tokenizer.json is 33 MiB).
const maxSideFileBytes = 512 << 20

// sideFiles are the files of a model directory that loading reads whole.
var sideFiles = []string{
	checkpoint.ConfigFile, checkpoint.GenerationConfigFile, checkpoint.WeightsIndexFile,
	checkpoint.TokenizerFile, checkpoint.TokenizerConfigFile,
	checkpoint.ChatTemplateFile, "chat_template.json",
}

// checkFiles makes sure that each file a load of dir reads is a regular
// file (links followed), and that those read whole are of a bounded size,
// before any is opened: a named pipe there would block the load forever
// (reading it waits for a writer) and a link to /dev/zero would read
// until memory runs out. The error is one line naming the file.
func checkFiles(dir string) error {
	weights, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return fmt.Errorf("model directory %s: %w", dir, err)
	}
	for _, name := range sideFiles {
		if err := checkFile(filepath.Join(dir, name), maxSideFileBytes); err != nil {
			return err
		}
	}
	for _, p := range weights {
		if err := checkFile(p, -1); err != nil {
			return err
		}
	}
	return nil
}

// checkFile checks one file for checkFiles: absent is fine (the loader
// says whether it needs it), anything else but a regular file of at most
// limit bytes (limit < 0: any size) is an error.
func checkFile(path string, limit int64) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", path, safefile.Unwrap(err))
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s is %s, expected a regular file", path, safefile.Kind(st.Mode()))
	case limit >= 0 && st.Size() > limit:
		return fmt.Errorf("%s is %d bytes, expected at most %d", path, st.Size(), limit)
	}
	return nil
}
