package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// byteLevel is the immutable GPT-2 byte/character mapping.
var byteLevel = newByteLevelTables()

// Tokenizer encodes text to token ids and back. It is immutable after Load
// apart from an internal word cache, and safe for concurrent use.
type Tokenizer struct {
	model *bpeModel

	norm normalizer
	pre  preTokenizer

	added           *addedMatcher // tokens matched on raw text (normalized: false)
	addedNormalized *addedMatcher // tokens matched on normalized text (normalized: true)
	addedByContent  map[string]int32
	special         map[int32]bool

	dec decoder

	idToToken []string
	isAdded   []bool

	prefix, suffix []int32 // ids added around the text when addSpecial is set

	bos, eos       int32 // -1 when unknown
	bosStr, eosStr string
}

// LoadDir loads tokenizer.json and, if present, tokenizer_config.json from a
// model directory.
func LoadDir(dir string) (*Tokenizer, error) {
	cfg := filepath.Join(dir, "tokenizer_config.json")
	if _, err := os.Stat(cfg); err != nil {
		cfg = ""
	}
	return Load(filepath.Join(dir, "tokenizer.json"), cfg)
}

// Load reads a tokenizer from the paths of a tokenizer.json and a
// tokenizer_config.json file; configPath may be empty when the model has no
// tokenizer_config.json.
func Load(tokenizerPath, configPath string) (*Tokenizer, error) {
	data, err := os.ReadFile(tokenizerPath)
	if err != nil {
		return nil, fmt.Errorf("loading tokenizer: %w", err)
	}
	var cfg []byte
	if configPath != "" {
		if cfg, err = os.ReadFile(configPath); err != nil {
			return nil, fmt.Errorf("loading tokenizer config: %w", err)
		}
	}
	t, err := Parse(data, cfg)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", tokenizerPath, err)
	}
	return t, nil
}

// Parse builds a tokenizer from the contents of tokenizer.json and of
// tokenizer_config.json (nil or empty when absent).
func Parse(tokenizerJSON, tokenizerConfig []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := parseTokenizerJSON(tokenizerJSON, &f); err != nil {
		return nil, fmt.Errorf("parsing tokenizer.json: %w", err)
	}
	var cfg configJSON
	if len(bytes.TrimSpace(tokenizerConfig)) > 0 {
		if err := json.Unmarshal(tokenizerConfig, &cfg); err != nil {
			return nil, fmt.Errorf("parsing tokenizer_config.json: %w", err)
		}
	}
	t := &Tokenizer{bos: -1, eos: -1}
	var err error
	if t.model, err = buildBPE(&f.Model); err != nil {
		return nil, fmt.Errorf("tokenizer.json model: %w", err)
	}
	if t.norm, err = buildNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("tokenizer.json normalizer: %w", err)
	}
	if t.pre, t.model.byteLevel, err = buildPreTokenizer(f.PreTokenizer); err != nil {
		return nil, fmt.Errorf("tokenizer.json pre_tokenizer: %w", err)
	}
	if t.dec, err = buildDecoder(f.Decoder); err != nil {
		return nil, fmt.Errorf("tokenizer.json decoder: %w", err)
	}
	t.model.init()
	if err := t.buildVocab(f.AddedTokens); err != nil {
		return nil, err
	}
	if err := t.buildSpecial(f.PostProcessor, &cfg); err != nil {
		return nil, err
	}
	return t, nil
}

func buildBPE(m *modelJSON) (*bpeModel, error) {
	if m.Type != "BPE" && m.Type != "" {
		return nil, fmt.Errorf("unsupported model type %q (only BPE is implemented)", m.Type)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return nil, fmt.Errorf("BPE dropout %g is not supported", *m.Dropout)
	}
	if (m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "") ||
		(m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "") {
		return nil, fmt.Errorf("BPE continuing_subword_prefix / end_of_word_suffix are not supported")
	}
	b := &bpeModel{vocab: m.vocab, unk: -1, byteFallback: m.ByteFallback, fuseUnk: m.FuseUnk, ignoreMerges: m.IgnoreMerges}
	if err := b.buildMerges(m.merges); err != nil {
		return nil, err
	}
	if m.UnkToken != nil {
		id, ok := b.vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("unk_token %q not in vocab", *m.UnkToken)
		}
		b.unk = id
	}
	return b, nil
}

// buildMerges resolves the merge strings to ids. The lookups (three per
// merge, half a million merges for Gemma) run on two goroutines.
func (b *bpeModel) buildMerges(pairs [][2]string) error {
	type resolved struct {
		a, c int32
		m    merge
	}
	res := make([]resolved, len(pairs))
	errs := make([]error, 2)
	var wg sync.WaitGroup
	half := len(pairs) / 2
	for w, r := range [][2]int{{0, half}, {half, len(pairs)}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := r[0]; i < r[1]; i++ {
				p := pairs[i]
				a, okA := b.vocab[p[0]]
				c, okC := b.vocab[p[1]]
				buf = append(append(buf[:0], p[0]...), p[1]...)
				id, okM := b.vocab[string(buf)]
				if !okA || !okC || !okM {
					errs[w] = fmt.Errorf("merge %d (%q %q): token not in vocab", i, p[0], p[1])
					return
				}
				res[i] = resolved{a, c, merge{rank: int32(i), id: id}}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	b.merges = newMergeTable(len(pairs))
	for _, r := range res {
		b.merges.put(r.a, r.c, r.m)
	}
	return nil
}

// maxIDSlack bounds the ids of a tokenizer.json: the largest id may exceed
// the number of distinct ids by at most that number plus maxIDSlack (ids are
// dense in real tokenizers), so the id tables are sized from the real count
// and a hostile id such as 2147483647 is an error, not a 34 GB allocation.
const maxIDSlack = 1024

func (t *Tokenizer) buildVocab(added []addedTokenJSON) error {
	distinct := make(map[int32]string, len(t.model.vocab)+len(added))
	maxID, maxKey := int32(-1), ""
	for tok, id := range t.model.vocab {
		if id < 0 {
			return fmt.Errorf("tokenizer.json model.vocab: negative id %d for %q", id, tok)
		}
		if other, dup := distinct[id]; dup {
			a, b := min(tok, other), max(tok, other)
			return fmt.Errorf("tokenizer.json model.vocab: id %d is used by both %q and %q", id, a, b)
		}
		distinct[id] = tok
		if id > maxID {
			maxID, maxKey = id, tok
		}
	}
	for _, a := range added {
		if a.ID < 0 {
			return fmt.Errorf("tokenizer.json added_tokens: negative id %d for %q", a.ID, a.Content)
		}
		distinct[a.ID] = a.Content
		if a.ID > maxID {
			maxID, maxKey = a.ID, a.Content
		}
	}
	if limit := 2*len(distinct) + maxIDSlack; int(maxID) >= limit {
		return fmt.Errorf("tokenizer.json: id %d of %q is out of range: %d distinct ids, so ids must be below %d", maxID, maxKey, len(distinct), limit)
	}
	size := int(maxID) + 1
	t.idToToken = make([]string, size)
	t.isAdded = make([]bool, size)
	for tok, id := range t.model.vocab {
		t.idToToken[id] = tok
	}
	t.addedByContent = make(map[string]int32, len(added))
	t.special = make(map[int32]bool)
	var raw, normalized []addedToken
	for _, a := range added {
		t.idToToken[a.ID] = a.Content
		t.isAdded[a.ID] = true
		t.addedByContent[a.Content] = a.ID
		if a.Special {
			t.special[a.ID] = true
		}
		tok := addedToken{id: a.ID, content: a.Content, singleWord: a.SingleWord, lstrip: a.LStrip,
			rstrip: a.RStrip, normalized: a.Normalized, special: a.Special}
		// Special tokens are always matched on the raw text.
		if a.Normalized && !a.Special && t.norm != nil {
			tok.content = t.norm.normalize(a.Content)
			normalized = append(normalized, tok)
		} else {
			raw = append(raw, tok)
		}
	}
	t.added = newAddedMatcher(raw)
	if len(normalized) > 0 {
		t.addedNormalized = newAddedMatcher(normalized)
	}
	return nil
}

// buildSpecial derives the ids added around encoded text from the
// post-processor, adjusted by add_bos_token / add_eos_token, and resolves the
// BOS and EOS tokens.
func (t *Tokenizer) buildSpecial(pp *componentJSON, cfg *configJSON) error {
	var err error
	if t.prefix, t.suffix, err = postProcessorIDs(pp); err != nil {
		return fmt.Errorf("tokenizer.json post_processor: %w", err)
	}
	for _, id := range append(append([]int32(nil), t.prefix...), t.suffix...) {
		if _, ok := t.Token(id); !ok {
			return fmt.Errorf("tokenizer.json post_processor: special token id %d is not in the vocabulary (%d ids)", id, len(t.idToToken))
		}
	}
	for _, p := range []struct {
		raw json.RawMessage
		str *string
		id  *int32
		key string
	}{{cfg.BOSToken, &t.bosStr, &t.bos, "bos_token"}, {cfg.EOSToken, &t.eosStr, &t.eos, "eos_token"}} {
		s, ok, err := tokenString(p.raw)
		if err != nil {
			return fmt.Errorf("tokenizer_config.json %s: %w", p.key, err)
		}
		if !ok {
			continue
		}
		id, found := t.TokenID(s)
		if !found {
			return fmt.Errorf("tokenizer_config.json %s %q is not in the vocabulary", p.key, s)
		}
		*p.str, *p.id = s, id
	}
	if t.bos < 0 && len(t.prefix) > 0 {
		t.bos = t.prefix[0]
		t.bosStr = t.idToToken[t.bos]
	}
	if cfg.AddBOSToken != nil {
		t.prefix = setEdge(t.prefix, t.bos, *cfg.AddBOSToken, true)
	}
	if cfg.AddEOSToken != nil {
		t.suffix = setEdge(t.suffix, t.eos, *cfg.AddEOSToken, false)
	}
	return nil
}

// setEdge makes ids start (front) or end with id, or not, as want says.
func setEdge(ids []int32, id int32, want, front bool) []int32 {
	if id < 0 {
		return ids
	}
	at := -1
	if front && len(ids) > 0 && ids[0] == id {
		at = 0
	} else if !front && len(ids) > 0 && ids[len(ids)-1] == id {
		at = len(ids) - 1
	}
	switch {
	case want && at < 0 && front:
		return append([]int32{id}, ids...)
	case want && at < 0:
		return append(append([]int32(nil), ids...), id)
	case !want && at >= 0:
		return append(append([]int32(nil), ids[:at]...), ids[at+1:]...)
	}
	return ids
}

func postProcessorIDs(c *componentJSON) (prefix, suffix []int32, err error) {
	if c == nil {
		return nil, nil, nil
	}
	switch c.Type {
	case "ByteLevel":
		return nil, nil, nil
	case "Sequence":
		for i, sub := range c.Processors {
			p, s, err := postProcessorIDs(sub)
			if err != nil {
				return nil, nil, fmt.Errorf("Sequence[%d]: %w", i, err)
			}
			prefix = append(prefix, p...)
			suffix = append(s, suffix...)
		}
		return prefix, suffix, nil
	case "TemplateProcessing":
		seen := false
		for _, item := range c.Single {
			switch {
			case item.Sequence != nil:
				seen = true
			case item.SpecialToken != nil:
				st, ok := c.SpecialTokens[item.SpecialToken.ID]
				if !ok {
					return nil, nil, fmt.Errorf("TemplateProcessing: special token %q missing from special_tokens", item.SpecialToken.ID)
				}
				if seen {
					suffix = append(suffix, st.IDs...)
				} else {
					prefix = append(prefix, st.IDs...)
				}
			}
		}
		return prefix, suffix, nil
	case "RobertaProcessing", "BertProcessing":
		cls, err := tokenPairID(c.Cls)
		if err != nil {
			return nil, nil, fmt.Errorf("%s cls: %w", c.Type, err)
		}
		sep, err := tokenPairID(c.Sep)
		if err != nil {
			return nil, nil, fmt.Errorf("%s sep: %w", c.Type, err)
		}
		return []int32{cls}, []int32{sep}, nil
	default:
		return nil, nil, fmt.Errorf("unsupported post_processor type %q", c.Type)
	}
}

// tokenPairID reads the id of a ["token", id] pair.
func tokenPairID(pair []json.RawMessage) (int32, error) {
	var id int32
	if len(pair) != 2 {
		return 0, errors.New("expected [token, id]")
	}
	if err := json.Unmarshal(pair[1], &id); err != nil {
		return 0, fmt.Errorf("expected [token, id]: %w", err)
	}
	return id, nil
}

// Encode returns the token ids of text. Added and special tokens written in
// the text (such as "<start_of_turn>") are matched first and never split.
// With addSpecial, the ids the tokenizer adds around a single sequence (BOS
// for Gemma) are added too; chat prompts rendered from a template that
// already writes the BOS token must be encoded with addSpecial false.
// Invalid UTF-8 in text is encoded as U+FFFD, one per maximal subpart.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int32 {
	text = toValidUTF8(text)
	out := make([]int32, 0, len(text)/3+len(t.prefix)+len(t.suffix)+1)
	if addSpecial {
		out = append(out, t.prefix...)
	}
	for _, seg := range t.added.split(text, nil) {
		if seg.token >= 0 {
			out = append(out, seg.token)
			continue
		}
		out = t.encodeSection(seg.text, seg.start, out)
	}
	if addSpecial {
		out = append(out, t.suffix...)
	}
	return out
}

// encodeSection normalizes, pre-tokenizes and BPE-encodes text that holds no
// raw-matched added token.
func (t *Tokenizer) encodeSection(s string, atStart bool, out []int32) []int32 {
	if t.norm != nil {
		s = t.norm.normalize(s)
	}
	if s == "" {
		return out
	}
	segs := []segment{{text: s, token: -1, start: atStart}}
	if t.addedNormalized != nil {
		segs = t.addedNormalized.split(s, segs[:0])
		if atStart && len(segs) > 0 {
			segs[0].start = segs[0].start && segs[0].token < 0
		}
	}
	for _, seg := range segs {
		if seg.token >= 0 {
			out = append(out, seg.token)
			continue
		}
		pieces := []piece{{seg.text, seg.start && atStart}}
		if t.pre != nil {
			pieces = t.pre.split(pieces)
		}
		for _, p := range pieces {
			out = t.model.encodeWord(p.s, out)
		}
	}
	return out
}

// Decode returns the text of ids: added tokens as written, the rest through
// the tokenizer.json decoder chain, as Hugging Face tokenizers decodes with
// skip_special_tokens=False and clean_up_tokenization_spaces=False. Bytes
// that do not form valid UTF-8 become U+FFFD (one per maximal subpart), and
// ids outside the vocabulary decode to U+FFFD.
func (t *Tokenizer) Decode(ids []int32) string {
	return toValidUTF8(t.decodeRaw(ids))
}

// decodeRaw is Decode before the final UTF-8 repair.
func (t *Tokenizer) decodeRaw(ids []int32) string {
	toks := make([]dtoken, len(ids))
	for i, id := range ids {
		if id < 0 || int(id) >= len(t.idToToken) || (t.idToToken[id] == "" && !t.isAdded[id]) {
			toks[i] = dtoken{s: "\uFFFD", added: true}
			continue
		}
		toks[i] = dtoken{s: t.idToToken[id], added: t.isAdded[id]}
	}
	if t.dec == nil {
		parts := make([]string, len(toks))
		for i, tk := range toks {
			parts[i] = tk.s
		}
		return strings.Join(parts, " ")
	}
	toks = t.dec.decode(toks)
	if len(toks) == 1 {
		return toks[0].s
	}
	var b strings.Builder
	for _, tk := range toks {
		b.WriteString(tk.s)
	}
	return b.String()
}

// TokenID returns the id of a token string (an added token's content or a
// vocabulary entry, written as in tokenizer.json).
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	if id, ok := t.addedByContent[s]; ok {
		return id, true
	}
	id, ok := t.model.vocab[s]
	return id, ok
}

// Token returns the string of a token id as written in tokenizer.json.
func (t *Tokenizer) Token(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.idToToken) || (t.idToToken[id] == "" && !t.isAdded[id]) {
		return "", false
	}
	return t.idToToken[id], true
}

// VocabSize is one more than the largest token id (vocabulary and added
// tokens together).
func (t *Tokenizer) VocabSize() int { return len(t.idToToken) }

// BOS returns the beginning-of-sequence token id, from tokenizer_config.json
// bos_token or else the post-processor's leading special token.
func (t *Tokenizer) BOS() (int32, bool) { return t.bos, t.bos >= 0 }

// EOS returns the id of tokenizer_config.json eos_token.
func (t *Tokenizer) EOS() (int32, bool) { return t.eos, t.eos >= 0 }

// BOSToken and EOSToken return the strings of the BOS and EOS tokens ("" if
// unknown), as chat templates use them.
func (t *Tokenizer) BOSToken() string { return t.bosStr }

// EOSToken returns the string of the EOS token ("" if unknown).
func (t *Tokenizer) EOSToken() string { return t.eosStr }

// AddsBOS reports whether Encode with addSpecial starts with the BOS token.
func (t *Tokenizer) AddsBOS() bool { return len(t.prefix) > 0 && t.bos >= 0 && t.prefix[0] == t.bos }

// SpecialPrefix and SpecialSuffix return copies of the ids Encode adds
// around the text when addSpecial is set.
func (t *Tokenizer) SpecialPrefix() []int32 { return append([]int32(nil), t.prefix...) }

// SpecialSuffix returns a copy of the ids Encode appends when addSpecial is set.
func (t *Tokenizer) SpecialSuffix() []int32 { return append([]int32(nil), t.suffix...) }

// IsSpecial reports whether id is an added token marked special (control
// tokens such as <bos>, <end_of_turn>, <|im_end|>).
func (t *Tokenizer) IsSpecial(id int32) bool { return t.special[id] }

// IsAdded reports whether id is an added token (special or not).
func (t *Tokenizer) IsAdded(id int32) bool {
	return id >= 0 && int(id) < len(t.isAdded) && t.isAdded[id]
}
