// Package engine owns the generation goroutine: chat template, tokenize,
// chunked prefill under --max-kv-size, decode, sampling, streaming
// detokenization, and events back to the caller on a channel. Every failure
// inside a request, a panic included, becomes an error event.
//
// The API (settings, requests, events, delivery policy) is in api.go.
//
// Prefix reuse: the engine remembers every token id it has fed to the
// cache since the cache was last emptied, trimmed ones included. A new
// Generate re-renders the whole conversation; when that history is a proper
// prefix of the new prompt, the cache is continued and only the suffix is
// prefilled. This holds after trims too: the trimmed cache (attention sink
// plus the recent window, at their absolute positions) is a valid state to
// continue from, as in mlx-lm's rotating cache and llama.cpp's context
// shift, and re-prefilling a long document would only trim it again.
// Otherwise (history edited, the answer re-tokenized differently, another
// system prompt, the prompt identical, an earlier error, or the cache
// trimmed under a lower MaxKV than the current one) the cache is reset and
// the whole prompt is prefilled. Stats (ReusedTokens, ReusedTrimmed,
// CacheRestart) and PrefillProgress report the reuse or why there was none.
//
// MaxKV is enforced by kvcache at the start of every chunk (prefill chunks
// are clamped to kvcache's MaxChunk, decode steps are chunks of one); the
// engine reports each trim as a Trim event and the live window as
// CacheState after every chunk and step.
//
// Answer text: sampled ids go through the tokenizer's streaming decoder,
// except control tokens (SpecialTokens: <start_of_turn>, <pad>, ...), which
// are fed back to the model but never shown; stop tokens end the answer.
//
// Sampling (sample.go) applies repetition penalty, then temperature
// (0 = greedy), top-k, top-p and min-p, with a per-request PCG generator
// seeded from Settings.Seed. stop.go holds back text that may start a stop
// string and detects n-gram loops.
//
// It may import models (and their sub-packages), kvcache and tensor; never ui.
// Package enginetest (tests only) writes a tiny model directory.
package engine
