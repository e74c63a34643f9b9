package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Token ids of the generated Gemma tokenizer; they are Gemma's own, so
// the eos_token_id [1, 106] that config.json and generation_config.json
// carry name <eos> and <end_of_turn>.
const (
	GemmaPadID         = 0
	GemmaEOSID         = 1
	GemmaBOSID         = 2
	GemmaUnkID         = 3
	GemmaStartOfTurnID = 105
	GemmaEndOfTurnID   = 106
	gemmaFirstByteID   = 107 // <0x00> .. <0xFF> are 107 .. 362
)

// GemmaChatTemplate is the chat template of the generated tokenizer, in
// the Gemma format: <bos>, then one <start_of_turn>ROLE\nTEXT<end_of_turn>\n
// per message with the assistant's role written "model", a system message
// folded into the first user turn, roles that must alternate, and
// <start_of_turn>model\n as the generation prompt.
const GemmaChatTemplate = "{{ bos_token }}" +
	"{%- if messages and messages[0]['role'] == 'system' -%}" +
	"{%- set prefix = messages[0]['content'] ~ '\n\n' -%}{%- set turns = messages[1:] -%}" +
	"{%- else -%}{%- set prefix = '' -%}{%- set turns = messages -%}{%- endif -%}" +
	"{%- for m in turns -%}" +
	"{%- if (m['role'] == 'user') != (loop.index0 % 2 == 0) -%}" +
	"{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}" +
	"{%- endif -%}" +
	"{{ '<start_of_turn>' ~ ('model' if m['role'] == 'assistant' else m['role']) ~ '\n' }}" +
	"{{ (prefix if loop.first else '') ~ (m['content'] | trim) ~ '<end_of_turn>\n' }}" +
	"{%- endfor -%}" +
	"{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"

// trainingText is the text the generated tokenizer's merges are learned
// from (written for this purpose): everyday English about chatting with a
// small model, so common words become single tokens.
const trainingText = `Hello! How are you today? I am fine, thank you. What can I do for you?
This is a small test model. It runs on your own computer, and the answers it gives are random words,
because the weights are random. The tokenizer is real: it turns the text you type into tokens,
and the tokens the model writes back into text. Any text works, in any language and with any symbol,
because every byte has a token of its own.
Tell me a story about the sea. There was a little boat on the water, and the wind was strong.
The sun was in the sky and the people on the shore were watching the waves.
Can you write a short poem? Of course. Here is one about the morning light and the first coffee of the day.
Please explain how a language model works. It reads the conversation so far and predicts the next token,
then the one after that, until the answer is finished. The context window holds the tokens it can see.
When the window is full, the oldest tokens are trimmed, and the model keeps going.
Thank you for your help. You are welcome! Have a good day, and come back any time.
What is the time? What is the weather like? Where is the nearest station? Which one is better, and why?
The quick brown fox jumps over the lazy dog. One, two, three, four, five, six, seven, eight, nine, ten.
`

// gemmaSpecials are the named tokens at the front of the vocabulary, by id;
// the other ids below the byte tokens are <unusedN>.
func gemmaSpecials() map[int]string {
	return map[int]string{GemmaPadID: "<pad>", GemmaEOSID: "<eos>", GemmaBOSID: "<bos>", GemmaUnkID: "<unk>",
		4: "<mask>", GemmaStartOfTurnID: "<start_of_turn>", GemmaEndOfTurnID: "<end_of_turn>"}
}

// MinGemmaTokenizerVocab is the smallest vocabulary GemmaTokenizer can
// fill: the special tokens, the 256 byte tokens and the training text's
// characters.
func MinGemmaTokenizerVocab() int {
	return gemmaFirstByteID + 256 + len(trainingChars())
}

// pieces splits normalized text into the units merges stay within: each
// word with the "▁" (space) before it, and every newline on its own.
func pieces(text string) []string {
	var out []string
	cur := []rune{}
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	for _, r := range strings.ReplaceAll(text, " ", "▁") {
		switch r {
		case '▁':
			flush()
			cur = append(cur, r)
		case '\n':
			flush()
			out = append(out, "\n")
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// trainingChars are the distinct characters of the training text, most
// frequent first (ties in code-point order).
func trainingChars() []string {
	count := map[string]int{}
	for _, r := range strings.ReplaceAll(trainingText, " ", "▁") {
		count[string(r)]++
	}
	chars := make([]string, 0, len(count))
	for c := range count {
		chars = append(chars, c)
	}
	sort.Slice(chars, func(i, j int) bool {
		if count[chars[i]] != count[chars[j]] {
			return count[chars[i]] > count[chars[j]]
		}
		return chars[i] < chars[j]
	})
	return chars
}

// learnMerges runs byte-pair-encoding training on the training text: it
// repeatedly merges the most frequent adjacent pair (ties broken by the
// pair's text) until n merges are made or no pair occurs twice.
func learnMerges(n int) [][2]string {
	type word struct {
		syms  []string
		count int
	}
	counts := map[string]int{}
	for _, p := range pieces(trainingText) {
		counts[p]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	words := make([]word, len(keys))
	for i, k := range keys {
		for _, r := range k {
			words[i].syms = append(words[i].syms, string(r))
		}
		words[i].count = counts[k]
	}
	var merges [][2]string
	for len(merges) < n {
		pairs := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				pairs[[2]string{w.syms[i], w.syms[i+1]}] += w.count
			}
		}
		var best [2]string
		bestN := 1
		for p, c := range pairs {
			if c > bestN || (c == bestN && c > 1 && p[0]+"\x00"+p[1] < best[0]+"\x00"+best[1]) {
				best, bestN = p, c
			}
		}
		if bestN < 2 {
			break
		}
		merges = append(merges, best)
		for wi := range words {
			s := words[wi].syms
			out := s[:0]
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					out = append(out, best[0]+best[1])
					i++
					continue
				}
				out = append(out, s[i])
			}
			words[wi].syms = out
		}
	}
	return merges
}

// GemmaTokenizer generates a small working tokenizer of exactly vocab ids
// for synthetic Gemma models, in the format of Gemma's tokenizer.json: a
// BPE model over "▁"-for-space text with byte fallback (so any text
// encodes), Gemma's special tokens at Gemma's ids, merges learned from a
// short English text, and <unusedN> fillers up to vocab. It returns
// tokenizer.json and tokenizer_config.json (bos/eos/pad/unk tokens and
// GemmaChatTemplate).
func GemmaTokenizer(vocab int) (tokenizerJSON, tokenizerConfig []byte, err error) {
	if min := MinGemmaTokenizerVocab(); vocab < min {
		return nil, nil, fmt.Errorf("synth: a generated tokenizer needs a vocabulary of at least %d, got %d", min, vocab)
	}
	ids := map[string]int{}
	names := make([]string, 0, vocab)
	add := func(s string) bool {
		if _, dup := ids[s]; dup || len(names) >= vocab {
			return false
		}
		ids[s] = len(names)
		names = append(names, s)
		return true
	}
	specials := gemmaSpecials()
	for id := 0; id < gemmaFirstByteID; id++ {
		if s, ok := specials[id]; ok {
			add(s)
		} else {
			add(fmt.Sprintf("<unused%d>", id))
		}
	}
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b))
	}
	for _, c := range trainingChars() {
		add(c)
	}
	var merges [][2]string
	for _, m := range learnMerges(vocab - len(names)) {
		if add(m[0] + m[1]) {
			merges = append(merges, m)
		}
	}
	for len(names) < vocab {
		add(fmt.Sprintf("<unused%d>", len(names)))
	}
	type addedToken struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var added []addedToken
	for id := 0; id < gemmaFirstByteID; id++ {
		added = append(added, addedToken{ID: id, Content: names[id], Special: true})
	}
	mergeList := make([][]string, len(merges))
	for i, m := range merges {
		mergeList[i] = []string{m[0], m[1]}
	}
	doc := map[string]any{
		"version":       "1.0",
		"truncation":    nil,
		"padding":       nil,
		"added_tokens":  added,
		"normalizer":    map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		"pre_tokenizer": nil,
		"post_processor": map[string]any{
			"type":           "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<bos>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair":           []any{map[string]any{"SpecialToken": map[string]any{"id": "<bos>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{"<bos>": map[string]any{"id": "<bos>", "ids": []int{GemmaBOSID}, "tokens": []string{"<bos>"}}},
		},
		"decoder": map[string]any{
			"type": "Sequence",
			"decoders": []any{
				map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
				map[string]any{"type": "ByteFallback"},
				map[string]any{"type": "Fuse"},
			},
		},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": "<unk>", "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
			"vocab": ids, "merges": mergeList,
		},
	}
	if tokenizerJSON, err = marshalJSON(doc, ""); err != nil {
		return nil, nil, err
	}
	cfg := map[string]any{
		"add_bos_token":   true,
		"add_eos_token":   false,
		"bos_token":       "<bos>",
		"eos_token":       "<eos>",
		"pad_token":       "<pad>",
		"unk_token":       "<unk>",
		"padding_side":    "left",
		"chat_template":   GemmaChatTemplate,
		"tokenizer_class": "GemmaTokenizer",
	}
	if tokenizerConfig, err = marshalJSON(cfg, "  "); err != nil {
		return nil, nil, err
	}
	return tokenizerJSON, tokenizerConfig, nil
}

// marshalJSON encodes v without escaping <, > and & (the special tokens
// stay readable), indented by indent when it is not empty.
func marshalJSON(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
