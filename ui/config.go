package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/adrg/xdg"

	"mlxchat/engine"
	"mlxchat/safefile"
)

// Config is the user's config file, JSON, by default at
// $XDG_CONFIG_HOME/mlxchat/config.json (see DefaultConfigPath). Every field
// is optional; unknown fields are an error so typos are caught:
//
//	{
//	  "theme": "dark",            // dark | light | high-contrast (/theme saves it here)
//	  "autosave": true,           // write conversations to the state dir
//	  "history_limit": 500,       // input history entries kept
//	  "paste_min_chars": 1000,    // collapse pastes at least this long ...
//	  "paste_min_lines": 8,       // ... or with at least this many lines
//
//	  "max_kv_size": 4096,        // generation defaults for the chat, run
//	  "prefill_chunk_size": 512,  // and bench; the command-line flag of the
//	  "sink_tokens": 4,           // same name (with dashes) overrides each
//	  "keep_system": false,
//	  "temp": 0.7, "top_p": 0.95, "top_k": 40, "min_p": 0.05,
//	  "repetition_penalty": 1.1, "repetition_window": 64,
//	  "seed": 0, "max_tokens": 0, "no_loop_detect": false,
//	  "think": true,              // false: reasoning models answer without thinking
//	  "kv_bits": 32,              // float32; 16: float16 (half the memory); 8: int8 (a little over a quarter)
//	  "system": "You are concise.",
//	  "stop": ["</answer>"]
//	}
//
// (JSON has no comments; they are only explanations here.)
type Config struct {
	Theme         string `json:"theme,omitempty"`
	Autosave      *bool  `json:"autosave,omitempty"`
	HistoryLimit  int    `json:"history_limit,omitempty"`
	PasteMinChars int    `json:"paste_min_chars,omitempty"`
	PasteMinLines int    `json:"paste_min_lines,omitempty"`

	// Generation defaults (engine.Settings); nil = the built-in default.
	MaxKV             *int     `json:"max_kv_size,omitempty"`
	PrefillChunk      *int     `json:"prefill_chunk_size,omitempty"`
	SinkTokens        *int     `json:"sink_tokens,omitempty"`
	KeepSystem        *bool    `json:"keep_system,omitempty"`
	Temperature       *float64 `json:"temp,omitempty"`
	TopP              *float64 `json:"top_p,omitempty"`
	TopK              *int     `json:"top_k,omitempty"`
	MinP              *float64 `json:"min_p,omitempty"`
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	RepetitionWindow  *int     `json:"repetition_window,omitempty"`
	Seed              *uint64  `json:"seed,omitempty"`
	MaxTokens         *int     `json:"max_tokens,omitempty"`
	NoLoopDetect      *bool    `json:"no_loop_detect,omitempty"`
	Think             *bool    `json:"think,omitempty"`   // false: engine.Settings.NoThinking
	KVBits            *int     `json:"kv_bits,omitempty"` // 32, 16 or 8: engine.Settings.KVBits
	System            *string  `json:"system,omitempty"`
	Stop              []string `json:"stop,omitempty"`
}

// Settings returns base with the generation defaults the file sets.
func (c Config) Settings(base engine.Settings) engine.Settings {
	s := base
	setIf(&s.MaxKV, c.MaxKV)
	setIf(&s.PrefillChunk, c.PrefillChunk)
	setIf(&s.SinkTokens, c.SinkTokens)
	setIf(&s.KeepSystem, c.KeepSystem)
	setIf(&s.Temperature, c.Temperature)
	setIf(&s.TopP, c.TopP)
	setIf(&s.TopK, c.TopK)
	setIf(&s.MinP, c.MinP)
	setIf(&s.RepetitionPenalty, c.RepetitionPenalty)
	setIf(&s.RepetitionWindow, c.RepetitionWindow)
	setIf(&s.MaxTokens, c.MaxTokens)
	setIf(&s.NoLoopDetect, c.NoLoopDetect)
	setIf(&s.KVBits, c.KVBits)
	if c.Think != nil {
		s.NoThinking = !*c.Think
	}
	setIf(&s.Seed, c.Seed)
	setIf(&s.System, c.System)
	if c.Stop != nil {
		s.StopStrings = append([]string(nil), c.Stop...)
	}
	return s
}

// checkSettings validates the generation defaults alone (over the built-in
// defaults); the error names the config key.
func (c Config) checkSettings() error {
	if c.PrefillChunk != nil && *c.PrefillChunk <= 0 {
		return fmt.Errorf("prefill_chunk_size %d: want a positive number of tokens", *c.PrefillChunk)
	}
	if c.SinkTokens != nil && *c.SinkTokens <= 0 {
		return fmt.Errorf("sink_tokens %d: want a positive number of tokens", *c.SinkTokens)
	}
	if c.KVBits != nil && *c.KVBits != 32 && *c.KVBits != 16 && *c.KVBits != 8 {
		return fmt.Errorf("kv_bits %d: want 32 (float32), 16 (float16) or 8 (int8)", *c.KVBits)
	}
	if c.RepetitionWindow != nil && *c.RepetitionWindow <= 0 {
		return fmt.Errorf("repetition_window %d: want a positive number of tokens", *c.RepetitionWindow)
	}
	if err := c.Settings(engine.DefaultSettings()).Validate(); err != nil {
		// engine names settings like the flags (max-kv-size); the file's
		// keys use underscores.
		msg := err.Error()
		name, rest, _ := strings.Cut(msg, " ")
		return errors.New(strings.ReplaceAll(name, "-", "_") + " " + rest)
	}
	return nil
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
	data, err := readConfigFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, err
	}
	return parseConfig(path, data)
}

// maxConfigBytes bounds the config file: a few hundred bytes of settings
// and a system prompt fit many times over.
const maxConfigBytes = 1 << 20

// readConfigFile reads the config file as /load reads a conversation
// (safefile.Read): a FIFO, a device such as /dev/zero, a directory or
// a file over maxConfigBytes is one error line at once, never a hang or
// memory run out. The error names the file.
func readConfigFile(path string) ([]byte, error) {
	data, err := safefile.Read(path, maxConfigBytes)
	var pe *fs.PathError
	switch {
	case err == nil:
		return data, nil
	case errors.As(err, &pe):
		return nil, fmt.Errorf("config %s: %w", path, pe.Err)
	}
	return nil, fmt.Errorf("config file %w", err) // "config file X is a directory, ..."
}

// parseConfig decodes a config file's bytes (path names it in errors) and
// checks every value: unknown keys, a wrong JSON type or a bad value are
// one error line naming the file and the key.
func parseConfig(path string, data []byte) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil // an empty file sets nothing
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("config %s: %s", path, describeJSONError(data, err))
	}
	if dec.More() {
		return c, fmt.Errorf("config %s: unexpected data after the JSON object", path)
	}
	if c.HistoryLimit < 0 || c.PasteMinChars < 0 || c.PasteMinLines < 0 {
		return c, fmt.Errorf("config %s: history_limit, paste_min_chars and paste_min_lines must be >= 0", path)
	}
	if err := c.checkSettings(); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// describeJSONError turns a decoding error into one line that names the
// key or the line and column, and what was expected.
func describeJSONError(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := lineCol(data, se.Offset)
		return fmt.Sprintf("line %d, column %d: %v (expected a JSON object like {\"theme\": \"dark\", \"max_kv_size\": 4096})", line, col, se)
	case errors.As(err, &te):
		return fmt.Sprintf("%q is a JSON %s, want %s", te.Field, te.Value, jsonKind(te.Type.Kind()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends early (a missing } or \"?)"
	}
	msg := err.Error()
	if key, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Sprintf("unknown key %s (known keys: %s)", key, strings.Join(configKeys(), ", "))
	}
	return strings.TrimPrefix(msg, "json: ")
}

// lineCol converts a byte offset (just past the error) to a 1-based line
// and column.
func lineCol(data []byte, off int64) (int, int) {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	if off > 0 {
		col-- // the offset is just past the offending byte
	}
	return line, max(1, col)
}

func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Uint64:
		return "a whole number >= 0"
	case reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list of strings"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return k.String()
}

// configKeys lists the JSON keys of Config.
func configKeys() []string {
	t := reflect.TypeFor[Config]()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}

// SaveTheme records theme as the "theme" of the config file at path,
// keeping every other field; the file and its folder are created when
// missing. The write is atomic (temp file + rename). A file that is not a
// JSON object is left alone and reported.
func SaveTheme(path, theme string) error {
	fields := map[string]json.RawMessage{}
	data, err := readConfigFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if len(bytes.TrimSpace(data)) > 0 {
			if err := json.Unmarshal(data, &fields); err != nil {
				return fmt.Errorf("config %s is not a JSON object, not rewriting it: %w", path, err)
			}
		}
	}
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	v, err := json.Marshal(theme)
	if err != nil {
		return err
	}
	fields["theme"] = v
	out, err := json.MarshalIndent(fields, "", "  ")
	if err != nil {
		return err
	}
	out = append(out, '\n')
	perm := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm() // keep the user's permissions
	}
	return writeFileAtomic(path, out, 0o755, perm)
}

// setIf sets *dst to *v when v is not nil.
func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
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
