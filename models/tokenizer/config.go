package tokenizer

import (
	"encoding/json"
	"fmt"
)

// fileJSON is the subset of tokenizer.json this package reads.
type fileJSON struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    *componentJSON   `json:"normalizer"`
	PreTokenizer  *componentJSON   `json:"pre_tokenizer"`
	PostProcessor *componentJSON   `json:"post_processor"`
	Decoder       *componentJSON   `json:"decoder"`
	Model         modelJSON        `json:"model"`
}

type addedTokenJSON struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type modelJSON struct {
	Type                    string   `json:"type"`
	UnkToken                *string  `json:"unk_token"`
	ContinuingSubwordPrefix *string  `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string  `json:"end_of_word_suffix"`
	FuseUnk                 bool     `json:"fuse_unk"`
	ByteFallback            bool     `json:"byte_fallback"`
	IgnoreMerges            bool     `json:"ignore_merges"`
	Dropout                 *float64 `json:"dropout"`

	// Read by parseTokenizerJSON's own scanner.
	vocab     map[string]int32
	merges    [][2]string
	haveVocab bool
}

// componentJSON holds the fields of every normalizer, pre-tokenizer,
// post-processor and decoder kind this package understands; each kind reads
// the fields it needs.
type componentJSON struct {
	Type string `json:"type"`

	Normalizers   []*componentJSON `json:"normalizers"`
	Pretokenizers []*componentJSON `json:"pretokenizers"`
	Decoders      []*componentJSON `json:"decoders"`
	Processors    []*componentJSON `json:"processors"`

	Pattern  *patternJSON `json:"pattern"`
	Content  *string      `json:"content"`
	Prepend  *string      `json:"prepend"`
	Behavior string       `json:"behavior"`
	Invert   bool         `json:"invert"`

	AddPrefixSpace *bool   `json:"add_prefix_space"`
	UseRegex       *bool   `json:"use_regex"`
	Replacement    *string `json:"replacement"`
	PrependScheme  *string `json:"prepend_scheme"`
	Split          *bool   `json:"split"`

	Start int `json:"start"`
	Stop  int `json:"stop"`

	StripLeft  bool `json:"strip_left"`
	StripRight bool `json:"strip_right"`

	IndividualDigits bool `json:"individual_digits"`

	Single        []templateItemJSON          `json:"single"`
	SpecialTokens map[string]specialTokenJSON `json:"special_tokens"`
	Cls           []json.RawMessage           `json:"cls"`
	Sep           []json.RawMessage           `json:"sep"`
}

type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

type templateItemJSON struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

type specialTokenJSON struct {
	ID     string   `json:"id"`
	IDs    []int32  `json:"ids"`
	Tokens []string `json:"tokens"`
}

// configJSON is the subset of tokenizer_config.json this package reads.
type configJSON struct {
	AddBOSToken *bool           `json:"add_bos_token"`
	AddEOSToken *bool           `json:"add_eos_token"`
	BOSToken    json.RawMessage `json:"bos_token"`
	EOSToken    json.RawMessage `json:"eos_token"`
	PadToken    json.RawMessage `json:"pad_token"`
	UnkToken    json.RawMessage `json:"unk_token"`
}

// tokenString reads a special-token entry of tokenizer_config.json, which is
// either null, a string, or an AddedToken object with a "content" field.
func tokenString(raw json.RawMessage) (string, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", false, fmt.Errorf("expected a string or an object with \"content\", got %.60s", raw)
	}
	return *obj.Content, true, nil
}
