// Package engine owns the generation goroutine: chat template, tokenize,
// chunked prefill under --max-kv-size, decode, sampling, streaming
// detokenization, and events back to the caller on a channel. Every failure
// inside a request, a panic included, becomes an error event.
//
// It may import models (and their sub-packages), kvcache and tensor; never ui.
package engine
