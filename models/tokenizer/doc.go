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
// (the WHATWG / Python errors="replace" convention: what the references see
// when the bytes reach them as text), and Decode returns valid UTF-8 with the
// same convention. For byte-fallback tokens that do not form valid UTF-8 this
// matches transformers.js; Hugging Face's Rust ByteFallback decoder instead
// writes one U+FFFD per byte token, which would make streamed text depend on
// where the stream was cut. StreamDecoder turns ids into text incrementally
// without ever emitting a broken UTF-8 sequence.
//
// Goldens in testdata/ come from the @lenml/tokenizers JavaScript port of
// transformers.js run under node and are checked there against Hugging Face
// tokenizers itself (Rust, via its node bindings): testdata/make_golden.mjs.
// The tokenizer files are fetched by scripts/fetch-tokenizers.sh; the golden
// tests skip without them unless CI is set (TestMain then fetches them).
//
// This package imports only the standard library and golang.org/x/text.
package tokenizer
