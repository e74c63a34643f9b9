package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/adrg/xdg"
)

// Config is the user's config file, JSON, by default at
// $XDG_CONFIG_HOME/mlxchat/config.json (see DefaultConfigPath). Every field
// is optional; unknown fields are an error so typos are caught:
//
//	{
//	  "theme": "dark",            // dark | light | high-contrast
//	  "autosave": true,           // write conversations to the state dir
//	  "history_limit": 500,       // input history entries kept
//	  "paste_min_chars": 1000,    // collapse pastes at least this long ...
//	  "paste_min_lines": 8        // ... or with at least this many lines
//	}
//
// (JSON has no comments; they are only explanations here.)
type Config struct {
	Theme         string `json:"theme,omitempty"`
	Autosave      *bool  `json:"autosave,omitempty"`
	HistoryLimit  int    `json:"history_limit,omitempty"`
	PasteMinChars int    `json:"paste_min_chars,omitempty"`
	PasteMinLines int    `json:"paste_min_lines,omitempty"`
}

// DefaultConfigPath is $XDG_CONFIG_HOME/mlxchat/config.json.
func DefaultConfigPath() string {
	return filepath.Join(xdg.ConfigHome, "mlxchat", "config.json")
}

// DefaultStateDir is $XDG_STATE_HOME/mlxchat; conversations are autosaved in
// its conversations/ folder and the input history in history.json.
func DefaultStateDir() string {
	return filepath.Join(xdg.StateHome, "mlxchat")
}

// LoadConfig reads the config file at path. With explicit false, a missing
// file is not an error (the default path need not exist); with explicit true
// (the user named it with --config) it is.
func LoadConfig(path string, explicit bool) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("config %s: %w (expected JSON like {\"theme\": \"dark\"})", path, err)
	}
	if c.HistoryLimit < 0 || c.PasteMinChars < 0 || c.PasteMinLines < 0 {
		return c, fmt.Errorf("config %s: history_limit, paste_min_chars and paste_min_lines must be >= 0", path)
	}
	return c, nil
}

// withDefaults fills unset fields.
func (c Config) withDefaults() Config {
	if c.Autosave == nil {
		t := true
		c.Autosave = &t
	}
	if c.HistoryLimit == 0 {
		c.HistoryLimit = 500
	}
	if c.PasteMinChars == 0 {
		c.PasteMinChars = DefaultPasteMinChars
	}
	if c.PasteMinLines == 0 {
		c.PasteMinLines = DefaultPasteMinLines
	}
	return c
}
