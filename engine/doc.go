// Package engine owns the generation goroutine: chat template, tokenize,
// chunked prefill under --max-kv-size, decode, sampling, streaming
// detokenization, and events back to the caller on a channel. Every failure
// inside a request, a panic included, becomes an error event.
//
// The API (settings, requests, events, delivery policy) is in api.go; the
// part for documents longer than the live window (FitCheck and Fit, Layout
// and MessageSpan, Message.Pinned, Summarize and its events) is in
// api_context.go.
//
// Long documents (issue #15). FitCheck (fit.go) renders and tokenizes the
// conversation with the draft on a goroutine of its own (latest request
// wins) and predicts the live set after the prefill: the sink, the pinned
// messages and the newest tokens up to the live cap (liveAfter), with the KV bytes
// per token and for a suggested cap from kvcache.Footprint over the
// model's layer specs. Layout (layout.go) places each message's content in
// the prompt: the template is rendered once more with markers for the
// contents, the prompt's ids are decoded in blocks so any position maps to
// a byte offset with one short decode, and the cache's live spans give each
// message's live and trimmed tokens and the byte where its live part
// begins. Pinned messages become kvcache pins (SetPins) before each
// prefill; a pinned message already trimmed makes the request prefill from
// scratch (RestartPinned). Summarize (summarize.go, split.go) renders the
// prompt with a marker for the document, so the text before it is the
// shared prefix, prefills that once and anchors the cache there
// (kvcache's Anchor), splits the document on heading, paragraph, sentence,
// line, word and character boundaries into pieces that fit with the room
// for an answer under the cap, answers each piece after rewinding to the
// anchor, and combines the summaries in rounds; every prompt plus its
// answer stays under the cap, so the cache never trims. Settings.KVBits 16
// or 8 makes a new kvcache with Float16 or Quantized8 (32, the default,
// keeps float32 rows; a change empties the cache; Stats says
// RestartKVBits).
//
// Prefix reuse: the engine remembers every token id it has fed to the
// cache since the cache was last emptied, trimmed ones included. A new
// Generate re-renders the whole conversation and keeps the longest common
// prefix of that history and the new prompt (at most all but the prompt's
// last token, which must run for the next-token logits), as llama.cpp and
// mlx-lm's trim_prompt_cache do. When the history is a prefix of the prompt
// the cache is continued and only the suffix is prefilled. When they differ
// near the end, which is common (the template trims whitespace off the last
// answer, a stop string cut it, it re-tokenizes differently), the cache is
// rewound (kvcache's Rewind) to the divergence and only the rest is
// prefilled, instead of the whole conversation with any long pasted
// document in it. Both hold after trims too: the trimmed cache (attention
// sink plus the recent window, at their absolute positions) is a valid
// state to continue from, as in mlx-lm's rotating cache and llama.cpp's
// context shift, and re-prefilling a long document would only trim it
// again. The cache is reset and the whole prompt prefilled when it cannot
// rewind that far (the divergence lies in trimmed tokens, or further back
// than the sliding layers' rewind slack of kvcache.DefaultRewindSlack
// tokens), when nothing is shared, after an earlier error, or when the
// cache trimmed under a lower MaxKV than the current one. Stats
// (ReusedTokens, ReusedTrimmed, RewoundTokens, CacheRewind, CacheRestart)
// and PrefillProgress report the reuse or why there was none.
//
// The live cap (Settings.LiveCap: MaxKV, or with MaxKV 0 the model's
// context length, ModelInfo.ContextLength) is enforced by kvcache at the
// start of every chunk (prefill chunks are clamped to kvcache's MaxChunk,
// decode steps are chunks of one); the engine reports each trim as a Trim
// event and the live window as CacheState after every chunk and step. A
// conversation longer than the model's context is therefore trimmed like
// one over a cap, never refused; FitCheck predicts it with the same cap.
//
// Answer text: sampled ids go through the tokenizer's streaming decoder,
// except control tokens (SpecialTokens: <start_of_turn>, <pad>, ...), which
// are fed back to the model but never shown; stop tokens end the answer.
// Stop tokens come from the checkpoint: generation_config.json's
// eos_token_id (else config.json's) plus every end-of-turn token the chat
// template writes (models/chat StopTokens: OLMo 3's <|im_end|>, Cohere's
// <|END_RESPONSE|>, <|endoftext|> for ChatML models).
//
// Reasoning (think.go): when the tokenizer has <think> and </think> as
// tokens (ModelInfo.Reasoning), the decoded text is split as it streams:
// text inside the tags goes out as Token events with Reasoning set, the
// tags never, and Done carries the reasoning apart from the answer. A
// prompt that ends inside an open block (OLMo 3 Think's template opens it)
// starts the answer as reasoning. Message.Reasoning goes back to the
// template as reasoning_content, which decides what past reasoning to keep
// (Qwen 3's drops it before the last user message). Settings.NoThinking
// renders every prompt of the request with enable_thinking=false, for
// templates that read it (ModelInfo.ThinkingSwitch).
//
// Sampling (sample.go) applies repetition penalty, then temperature
// (0 = greedy), top-k, top-p and min-p, with a per-request PCG generator
// seeded from Settings.Seed. When the choice is the plain argmax
// (Sampler.Greedy: temperature 0, no repetition penalty) each decode step
// asks the model for that index (models.Greedy, tensor.ArgmaxF32's rule)
// instead of its logits: GPU backends take it on the GPU and copy back one
// integer, not a vocabulary-sized row; the answer is the same. stop.go
// holds back text that may start a stop string and detects n-gram loops.
//
// It may import models (and their sub-packages), kvcache and tensor; never ui.
// Package enginetest (tests only) writes a tiny model directory.
package engine
