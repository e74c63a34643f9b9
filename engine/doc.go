// Package engine owns the generation goroutine: chat template, tokenize,
// chunked prefill under --max-kv-size, decode, sampling, streaming
// detokenization, and events back to the caller on a channel. Every failure
// inside a request, a panic included, becomes an error event.
//
// The API (settings, requests, events, delivery policy) is in api.go.
//
// Prefix reuse: the engine remembers the token ids whose keys and values
// the cache holds. A new Generate re-renders the whole conversation; when
// those ids are a proper prefix of the new prompt and the cache never
// trimmed, only the suffix is prefilled. Otherwise (history edited, the
// answer re-tokenized differently, a trim happened, or the prompt is
// identical) the cache is reset and the whole prompt is prefilled. Stats
// and PrefillProgress report how many tokens were reused.
//
// MaxKV is enforced by kvcache at the start of every chunk (prefill chunks
// are clamped to kvcache's MaxChunk, decode steps are chunks of one); the
// engine reports each trim as a Trim event and the live window as
// CacheState after every chunk and step.
//
// Sampling (sample.go) applies repetition penalty, then temperature
// (0 = greedy), top-k, top-p and min-p, with a per-request PCG generator
// seeded from Settings.Seed. stop.go holds back text that may start a stop
// string and detects n-gram loops.
//
// It may import models (and their sub-packages), kvcache and tensor; never ui.
// Package enginetest (tests only) writes a tiny model directory.
package engine
