package enginetest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"mlxchat/models/synth"
)

// Token ids of the tiny tokenizer that match Gemma's (and synth's
// config.json eos_token_id [1, 106]).
const (
	PadID         = 0
	EOSID         = 1
	BOSID         = 2
	UnkID         = 3
	StartOfTurnID = 105
	EndOfTurnID   = 106
	firstByteID   = 107 // <0x00> .. <0xFF> are 107 .. 362
	vocabSize     = 512
)

// ChatTemplate is the Gemma-style template written into
// tokenizer_config.json: turns are <start_of_turn>ROLE\nTEXT<end_of_turn>\n
// with "assistant" spelled "model".
const ChatTemplate = "{{ bos_token }}{% for message in messages %}" +
	"{% if message['role'] == 'assistant' %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}" +
	"<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n" +
	"{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"

// WriteTinyModel writes the tiny model into dir (created if needed).
// Weights are random (seed), 4-bit quantized when bits is 4 or 8, dense
// when 0.
func WriteTinyModel(dir string, bits int, seed uint64) error {
	return writeWithTokenizer(dir, bits, func(opt synth.Options) error {
		opt.Seed = seed
		_, err := synth.WriteTiny(dir, opt)
		return err
	})
}

// writeWithTokenizer writes the tiny tokenizer's files next to dir, calls
// write with synth options that copy them in (and the quantization bits
// asked for), and removes them again.
func writeWithTokenizer(dir string, bits int, write func(synth.Options) error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	tokJSON, err := tokenizerJSON()
	if err != nil {
		return err
	}
	tokPath := filepath.Join(dir, "tiny-tokenizer.json")
	if err := os.WriteFile(tokPath, tokJSON, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", tokPath, err)
	}
	cfg, err := json.MarshalIndent(map[string]any{
		"add_bos_token": false, // the template writes {{ bos_token }}
		"add_eos_token": false,
		"bos_token":     "<bos>",
		"eos_token":     "<eos>",
		"pad_token":     "<pad>",
		"unk_token":     "<unk>",
		"chat_template": ChatTemplate,
	}, "", " ")
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(dir, "tiny-tokenizer_config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", cfgPath, err)
	}
	opt := synth.Options{Bits: bits, TokenizerJSON: tokPath, TokenizerConfig: cfgPath}
	if bits != 0 {
		opt.GroupSize = 64
	}
	if err := write(opt); err != nil {
		return fmt.Errorf("writing tiny model: %w", err)
	}
	for _, p := range []string{tokPath, cfgPath} {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}

// tokenizerJSON builds the tokenizer: specials, unused fillers, byte
// fallback tokens, single characters and merges of common pairs, exactly
// vocabSize ids.
func tokenizerJSON() ([]byte, error) {
	vocab := map[string]int{}
	names := make([]string, 0, vocabSize)
	add := func(s string) {
		if _, dup := vocab[s]; dup {
			return
		}
		vocab[s] = len(names)
		names = append(names, s)
	}
	for _, s := range []string{"<pad>", "<eos>", "<bos>", "<unk>"} {
		add(s)
	}
	for len(names) < StartOfTurnID {
		add(fmt.Sprintf("<unused%d>", len(names)))
	}
	add("<start_of_turn>")
	add("<end_of_turn>")
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b))
	}
	singles := "▁abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'\"-:;()\n"
	for _, r := range singles {
		add(string(r))
	}
	pairs := [][2]string{
		{"▁", "t"}, {"h", "e"}, {"▁", "a"}, {"i", "n"}, {"e", "r"}, {"a", "n"}, {"r", "e"}, {"o", "n"},
		{"▁", "s"}, {"▁", "w"}, {"▁t", "he"}, {"▁", "o"}, {"▁", "i"}, {"▁", "h"}, {"▁", "b"}, {"▁", "c"},
		{"▁", "m"}, {"▁", "f"}, {"▁", "d"}, {"▁", "p"}, {"o", "u"}, {"i", "s"}, {"i", "t"}, {"a", "t"},
		{"e", "n"}, {"o", "r"}, {"e", "s"}, {"l", "l"}, {"▁i", "s"}, {"▁i", "t"}, {"▁", "he"}, {"▁a", "n"},
		{"▁an", "d"}, {"in", "g"}, {"▁", "l"}, {"▁", "n"}, {"e", "d"}, {"▁", "y"}, {"▁y", "ou"}, {"▁", "g"},
		{"a", "r"}, {"a", "l"}, {"s", "t"}, {"▁th", "e"}, {"▁", "e"}, {"l", "e"}, {"▁", "r"}, {"▁", "T"},
		{"▁", "I"}, {"▁", "H"}, {"▁H", "e"}, {"l", "lo"}, {"l", "o"}, {"▁he", "llo"}, {"▁", "u"}, {"▁u", "s"},
		{"▁", "1"}, {"▁", "2"}, {"o", "f"}, {"▁o", "f"}, {"▁t", "o"}, {"▁", "to"}, {"▁i", "n"}, {"▁", "k"},
		{"▁", "v"}, {"▁", "j"}, {"o", "w"}, {"▁h", "ow"}, {"▁", "A"}, {"▁", "S"}, {"▁", "W"},
	}
	var merges [][2]string
	for _, p := range pairs {
		if len(names) >= vocabSize {
			break
		}
		if _, ok := vocab[p[0]]; !ok {
			continue
		}
		if _, ok := vocab[p[1]]; !ok {
			continue
		}
		if _, dup := vocab[p[0]+p[1]]; dup {
			continue
		}
		merges = append(merges, p)
		add(p[0] + p[1])
	}
	for len(names) < vocabSize {
		add(fmt.Sprintf("<unused%d>", len(names)))
	}
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var addedTokens []added
	for _, s := range []string{"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"} {
		addedTokens = append(addedTokens, added{ID: vocab[s], Content: s, Special: true})
	}
	doc := map[string]any{
		"version":      "1.0",
		"added_tokens": addedTokens,
		"normalizer": map[string]any{
			"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁",
		},
		"pre_tokenizer":  nil,
		"post_processor": nil,
		"decoder": map[string]any{
			"type": "Sequence",
			"decoders": []any{
				map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
				map[string]any{"type": "ByteFallback"},
				map[string]any{"type": "Fuse"},
			},
		},
		"model": map[string]any{
			"type":          "BPE",
			"unk_token":     "<unk>",
			"byte_fallback": true,
			"fuse_unk":      true,
			"ignore_merges": false,
			"vocab":         vocab,
			"merges":        merges,
		},
	}
	return json.MarshalIndent(doc, "", " ")
}
