// Package tokenizer loads Hugging Face tokenizer.json files and encodes and
// decodes text with them, in pure Go.
//
// Supported: the BPE model (merges as "a b" strings or ["a","b"] pairs,
// byte fallback, ignore_merges, unk fusing); the normalizers NFC/NFD/NFKC/NFKD,
// Replace, Prepend, Lowercase, Strip and Sequence; the pre-tokenizers Split
// (string or regex patterns, every delimiter behaviour), ByteLevel, Metaspace,
// Digits, WhitespaceSplit and Sequence; added and special tokens, matched
// before normalization and never split; TemplateProcessing / ByteLevel /
// Roberta / Bert post-processors plus add_bos_token / add_eos_token from
// tokenizer_config.json; and the decoders Replace, ByteFallback, Fuse, Strip,
// ByteLevel, Metaspace and Sequence. This covers Gemma 3 / Gemma 3n
// (SentencePiece-style BPE with byte fallback) and Llama 3 / Qwen 3
// (byte-level BPE with regex pre-tokenization).
//
// Go's regexp has no lookahead, so the regexes the Llama 3, Qwen 2/3 and
// GPT-2 pre-tokenizers use are implemented as hand-written scanners that
// reproduce the backtracking matcher's leftmost-first results exactly (see
// pattern.go); other regexes are translated to Go's regexp when they need no
// lookaround, and rejected with an error otherwise.
//
// Invalid UTF-8 given to Encode is replaced with U+FFFD per maximal subpart
// (the WHATWG / Python errors="replace" convention the references use), and
// Decode returns valid UTF-8 with the same convention. StreamDecoder turns ids
// into text incrementally without ever emitting a broken UTF-8 sequence.
//
// Goldens in testdata/ come from the @lenml/tokenizers JavaScript port of
// transformers.js run under node (testdata/make_golden.mjs); the tokenizer
// files themselves are fetched by scripts/fetch-tokenizers.sh.
//
// This package imports only the standard library and golang.org/x/text.
package tokenizer
