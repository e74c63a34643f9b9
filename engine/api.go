package engine

import (
	"fmt"
	"time"
)

// This file is the engine's public contract with its callers (the TUI, the
// run and bench subcommands): settings, requests and events.
//
// Flow: the caller builds an Engine (New or NewLoading), calls Start, then
// Submit-s requests and reads Events until the channel closes. Submit never
// blocks. Requests run one at a time in submission order, except Cancel,
// which acts at once.
//
// Event delivery policy: the engine never blocks on a slow reader. Events go
// into an unbounded in-memory queue that a pump goroutine feeds into the
// Events channel. Token, Done, Error and every other event are delivered
// exactly once and in order; only CacheState events may be coalesced (when a
// newer CacheState is queued behind an undelivered one, the older one is
// replaced), so a reader that falls behind sees the latest meter, not every
// step.

// RequestID identifies a submitted request; every event carries the id of the
// request it belongs to (0 for engine-level events such as model loading).
type RequestID uint64

// Chat roles used in Message.Role.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string // RoleSystem, RoleUser or RoleAssistant
	Content string
	// Pinned keeps the message's tokens in the never-trimmed prefix of
	// the cache, beside the attention sink and the system prompt (/pin):
	// trimming to MaxKV drops older and newer tokens but never these. The
	// sink and every pinned message together may use at most half of
	// MaxKV; a Generate whose pins do not fit fails with an Error saying
	// so. A message pinned after its tokens were trimmed makes the next
	// Generate prefill the conversation again (Stats.CacheRestart
	// RestartPinned), so that it is attended.
	Pinned bool
	// Reasoning is an assistant turn's reasoning (Done.Reasoning: what the
	// model wrote between <think> and </think>), kept apart from Content.
	// It reaches the template as the message's reasoning_content, so the
	// template decides what to keep: Qwen 3's drops the reasoning of every
	// turn before the last user message, as it was trained.
	Reasoning string
}

// Defaults applied by DefaultSettings and, for zero fields, by Normalize.
const (
	DefaultPrefillChunk     = 512
	DefaultRepetitionWindow = 64
	DefaultSinkTokens       = 4
)

// Settings are the per-request generation and cache settings. They can change
// between turns (UpdateSettings, or Generate.Settings); lowering MaxKV makes
// the next chunk's kvcache Begin trim the cache, which is reported with a Trim
// event.
type Settings struct {
	// MaxKV caps the live keys of global-attention layers; 0 = off: the
	// model's context length caps them instead (LiveCap). Older tokens
	// after the attention sink are trimmed to fit.
	MaxKV int
	// PrefillChunk is the number of prompt tokens run per forward pass
	// (0 = DefaultPrefillChunk). It is clamped so one chunk always fits
	// under MaxKV next to the sink.
	PrefillChunk int
	// Temperature divides the logits before sampling; 0 = greedy (argmax).
	Temperature float64
	// TopK keeps the K most likely tokens; 0 = off.
	TopK int
	// TopP keeps the smallest set of tokens whose probability mass reaches
	// TopP (nucleus sampling); 0 or 1 = off.
	TopP float64
	// MinP drops tokens whose probability is below MinP times the top
	// token's probability; 0 = off.
	MinP float64
	// RepetitionPenalty divides positive logits (multiplies negative ones)
	// of tokens seen in the last RepetitionWindow tokens; 0 or 1 = off.
	RepetitionPenalty float64
	// RepetitionWindow is how many recent tokens (prompt and answer) the
	// repetition penalty looks at (0 = DefaultRepetitionWindow).
	RepetitionWindow int
	// Seed seeds the sampler's random generator for each request, so the
	// same prompt, settings and seed give the same answer.
	Seed uint64
	// MaxTokens ends the answer after this many generated tokens
	// (Done reason max_tokens); 0 = no limit.
	MaxTokens int
	// StopStrings end the answer when the generated text contains one of
	// them (Done reason stop_string); the stop string itself is not emitted.
	StopStrings []string
	// System is a system prompt placed before the conversation when the
	// conversation does not start with a system message ("" = none).
	System string
	// SinkTokens is how many tokens at the front of the cache are never
	// trimmed (0 = DefaultSinkTokens).
	SinkTokens int
	// KeepSystem extends the sink to cover the whole rendered system
	// prompt, so trimming never drops it. The sink may use at most half of
	// MaxKV; a longer system prompt makes the request fail with an Error
	// rather than be trimmed silently.
	KeepSystem bool
	// NoLoopDetect turns off the n-gram loop detector (Done reason loop).
	NoLoopDetect bool
	// NoThinking asks the model not to reason before it answers: the chat
	// template gets enable_thinking=false (Qwen 3's then opens the answer
	// with an empty <think></think> block). Only templates that read
	// enable_thinking support it (ModelInfo.ThinkingSwitch); others ignore
	// it.
	NoThinking bool
	// KVBits is the precision of the stored keys and values: 32 (or 0,
	// the default) keeps them as float32, the format attention reads, on
	// every backend; 16 stores IEEE half floats (kvcache's Float16: half
	// the bytes per token); 8 stores int8 values with one float32 scale
	// per token and KV head (kvcache's Quantized8: (HeadDim+4)/(4*HeadDim)
	// of the bytes per token, 0.28 for heads of 128). 16 and 8 decode the
	// view into a float32 scratch of one layer's view at every step (more
	// time per token on the CPU) and change the attention output a little
	// (engine's TestKVBitsLogitError bounds it). A change empties the cache:
	// the next Generate prefills the conversation again in the new format
	// (Stats.CacheRestart RestartKVBits).
	KVBits int
}

// LiveCap is the most keys a global-attention layer keeps under s for a
// model of contextLength positions (ModelInfo.ContextLength): MaxKV, or
// when MaxKV is 0 (off) the context length, so a conversation longer than
// the model's context is trimmed (after the sink, oldest first) exactly as
// one over a cap is, never refused. 0 means no limit (neither is known).
func (s Settings) LiveCap(contextLength int) int {
	if s.MaxKV > 0 {
		return s.MaxKV
	}
	return max(0, contextLength)
}

// DefaultSettings returns the settings used when none are given: greedy
// decoding, no KV cap, 512-token prefill chunks, loop detection on.
func DefaultSettings() Settings {
	return Settings{
		PrefillChunk:     DefaultPrefillChunk,
		RepetitionWindow: DefaultRepetitionWindow,
		SinkTokens:       DefaultSinkTokens,
	}
}

// Normalize returns s with zero-valued fields that have defaults filled in.
func (s Settings) Normalize() Settings {
	if s.PrefillChunk == 0 {
		s.PrefillChunk = DefaultPrefillChunk
	}
	if s.RepetitionWindow == 0 {
		s.RepetitionWindow = DefaultRepetitionWindow
	}
	if s.SinkTokens == 0 {
		s.SinkTokens = DefaultSinkTokens
	}
	return s
}

// Validate reports the first out-of-range setting as a one-line error naming
// the setting and what was expected.
func (s Settings) Validate() error {
	switch {
	case s.MaxKV < 0:
		return fmt.Errorf("max-kv-size %d: want 0 (off) or a positive number of tokens", s.MaxKV)
	case s.PrefillChunk < 0:
		return fmt.Errorf("prefill-chunk-size %d: want a positive number of tokens", s.PrefillChunk)
	case s.Temperature < 0 || s.Temperature != s.Temperature:
		return fmt.Errorf("temp %v: want a number >= 0", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("top-k %d: want 0 (off) or a positive count", s.TopK)
	case s.TopP < 0 || s.TopP > 1 || s.TopP != s.TopP:
		return fmt.Errorf("top-p %v: want a number in [0, 1]", s.TopP)
	case s.MinP < 0 || s.MinP > 1 || s.MinP != s.MinP:
		return fmt.Errorf("min-p %v: want a number in [0, 1]", s.MinP)
	case s.RepetitionPenalty < 0 || s.RepetitionPenalty != s.RepetitionPenalty:
		return fmt.Errorf("repetition-penalty %v: want a number >= 0 (1 = off)", s.RepetitionPenalty)
	case s.RepetitionWindow < 0:
		return fmt.Errorf("repetition-window %d: want a positive number of tokens", s.RepetitionWindow)
	case s.MaxTokens < 0:
		return fmt.Errorf("max-tokens %d: want 0 (no limit) or a positive count", s.MaxTokens)
	case s.SinkTokens < 0:
		return fmt.Errorf("sink-tokens %d: want a positive number of tokens", s.SinkTokens)
	case s.KVBits != 0 && s.KVBits != 32 && s.KVBits != 16 && s.KVBits != 8:
		return fmt.Errorf("kv-bits %d: want 32 (float32), 16 (float16) or 8 (int8)", s.KVBits)
	}
	n := s.Normalize()
	if n.MaxKV > 0 && n.MaxKV < 2*n.SinkTokens {
		return fmt.Errorf("max-kv-size %d: want at least twice the %d sink tokens (the sink may use at most half the cache)", n.MaxKV, n.SinkTokens)
	}
	for _, st := range s.StopStrings {
		if st == "" {
			return fmt.Errorf("stop string: want a non-empty string")
		}
	}
	return nil
}

// Request is something the caller submits: Generate, Summarize, FitCheck,
// Cancel, UpdateSettings or Reset.
type Request interface{ isRequest() }

// Generate asks for the assistant's next answer to Conversation (which ends
// with the user's turn). The engine renders the chat template over the whole
// conversation and prefills only the tokens it has not fed yet. It keeps
// the longest common prefix of the token history fed to the cache (trimmed
// tokens included) and the new prompt: when the history is a prefix of the
// prompt the cache is continued as is, also after trims (the cache then
// holds the sink and the recent window, and the first chunks trim further
// as usual); when they differ near the end (the template trimmed the last
// answer's whitespace, a stop string cut it, an answer re-tokenizes
// differently, an edited late turn) the cache is rewound to the divergence
// and prefilled from there; when the prompt adds nothing (the same
// conversation again, or a shorter one) it is rewound so that its last
// token runs again. The cache is reset and the whole prompt prefilled when
// it cannot be rewound that far (the divergence lies in tokens already
// trimmed, or further back than the sliding layers' rewind slack of
// kvcache.DefaultRewindSlack tokens), after an Error, when the prompt
// shares no token with it, or when the cache trimmed under a lower MaxKV
// than the one now in force (a full prefill then restores the context the
// new cap has room for). The Stats event reports how many tokens were
// reused, rewound and had been trimmed, and why the cache was rewound or
// reset.
type Generate struct {
	Conversation []Message
	// Settings overrides the engine's current settings for this request
	// only; nil uses the current ones (see UpdateSettings).
	Settings *Settings
}

// Cancel stops a request. ID 0 cancels the running request and every queued
// Generate; otherwise only the request with that id (running or queued).
// A running generation stops between prefill chunks or within one decode
// step and ends with Done{Reason: DoneCancelled, Text: the partial answer}.
// Cancel acts immediately; it is not queued behind the running request.
type Cancel struct {
	ID RequestID
}

// UpdateSettings replaces the engine's current settings for later requests
// (queued in order with Generate). Invalid settings give an Error event and
// leave the current ones in place; valid ones give SettingsChanged. A lower
// MaxKV takes effect at the next cache Begin (a Trim event follows).
type UpdateSettings struct {
	Settings Settings
}

// Reset clears the KV cache and the cached token history (the /clear
// command). It is queued in order and answered with a Cleared event.
type Reset struct{}

func (Generate) isRequest()       {}
func (Cancel) isRequest()         {}
func (UpdateSettings) isRequest() {}
func (Reset) isRequest()          {}

// Event is something the engine reports. Use a type switch on the concrete
// types below; Request() tells which request it belongs to.
type Event interface {
	Request() RequestID
}

// Header is embedded in every event: the request it belongs to (0 for
// engine-level events) and when it was produced.
type Header struct {
	ID RequestID
	At time.Time
}

// Request returns the id of the request the event belongs to.
func (h Header) Request() RequestID { return h.ID }

// ModelLoading reports progress while NewLoading's loader resolves,
// downloads or maps the model. Total is 0 when unknown.
type ModelLoading struct {
	Header
	Stage string // e.g. "downloading model.safetensors", "loading weights"
	Done  int64  // bytes (or steps) done
	Total int64  // bytes (or steps) in all; 0 = unknown
}

// ModelInfo describes the loaded model for the status line and /stats.
type ModelInfo struct {
	Name          string // what the user asked for (name or directory)
	Dir           string // the resolved model directory
	ModelType     string // config.json model_type
	Backend       string // "cpu", "vulkan", "metal"
	VocabSize     int
	Layers        int
	ContextLength int   // max_position_embeddings (0 = unknown)
	SlidingWindow int   // sliding-window size of local layers (0 = none)
	WeightBytes   int64 // bytes of weights read per decoded token
	// Reasoning: the model may reason between <think> and </think> (its
	// vocabulary has both tags); Token.Reasoning marks that text.
	Reasoning bool
	// ThinkingSwitch: the chat template reads enable_thinking, so
	// Settings.NoThinking turns the reasoning off.
	ThinkingSwitch bool
	// Notes are the model's load-time remarks for the user (a config
	// setting it deliberately does not follow, ...), one line each.
	Notes []string
}

// Ready says the model is loaded and requests will run. It is the first
// event after Start (after any ModelLoading events).
type Ready struct {
	Header
	Info ModelInfo
}

// PrefillProgress is sent once before the first prefill chunk (Chunk 0)
// and after every chunk.
type PrefillProgress struct {
	Header
	Chunk     int     // chunks done so far (1-based after the first chunk)
	Chunks    int     // chunks in all for this prompt
	Tokens    int     // prompt tokens prefilled so far in this request
	Total     int     // prompt tokens to prefill in this request (excludes reused ones)
	Reused    int     // prompt tokens reused from the cache (not prefilled)
	TokPerSec float64 // prefill speed so far
}

// Token carries newly decoded text. Text is never empty: bytes that do not
// yet form complete UTF-8, and text that may be the start of a stop string,
// are held back until they are decided.
type Token struct {
	Header
	Text   string
	Tokens int // tokens generated so far in this answer
	// Reasoning says Text is reasoning, written between <think> and
	// </think> (the tags themselves are never sent), not the answer.
	Reasoning bool
}

// Trim reports that the cache dropped tokens to stay under MaxKV.
type Trim struct {
	Header
	Dropped    int    // tokens dropped from the live window
	LiveBefore int    // live keys before the trim
	LiveAfter  int    // live keys after the trim
	Kind       string // which cache kind trimmed (e.g. "global")
	Phase      string // "prefill" or "decode"
}

// CacheState is the live-window meter, sent after every prefill chunk and
// decode step (it may be coalesced, see the delivery policy above).
type CacheState struct {
	Header
	Live    int // live keys of the global layers
	Max     int // the live cap: MaxKV, or the context length when MaxKV is 0 (Settings.LiveCap; 0 = unlimited)
	Seen    int // tokens ever appended (the next RoPE position)
	Trimmed int // tokens trimmed so far in this cache's life
	Window  int // sliding window of local layers (0 = none)
	Sink    int // tokens of the attention sink (never trimmed)
	// Pinned is how many live tokens are kept by pinned messages (beside
	// the sink; never trimmed). They count in Live.
	Pinned int
	// Spans are the absolute positions live in the global layers, in
	// ascending order: the sink, pinned runs, then the recent window.
	// With Layout's message spans they tell which messages are attended.
	Spans []Span
	// KVBytes is the memory the KV cache holds now; KVBits its storage
	// precision (32, 16 or 8 bits per value, Settings.KVBits).
	KVBytes int64
	KVBits  int
	// KVLiveBytes is the stored size of the live keys and values
	// (kvcache.Stats.LiveBytes): what a decode step reads of the cache.
	KVLiveBytes int64
}

// Stats summarizes one request; sent just before its Done.
type Stats struct {
	Header
	PromptTokens  int // tokens of the rendered prompt
	ReusedTokens  int // of those, tokens already fed to the cache (not prefilled again)
	ReusedTrimmed int // of the reused tokens, how many had been trimmed before this request (no longer attended)
	// RewoundTokens is how many tokens fed by earlier requests were
	// dropped from the end of the cache because the prompt differs from
	// them (or ends before them); the cache kept ReusedTokens and the
	// prompt was prefilled from there. 0 = no rewind.
	RewoundTokens int
	// CacheRewind says why the cache was rewound (one of the Rewind*
	// values; "" = it was not).
	CacheRewind string
	// CacheRestart says why the cache was emptied and the whole prompt
	// prefilled although it held tokens ("" = it was continued, or empty);
	// one of the Restart* values.
	CacheRestart     string
	PrefillTokens    int           // of PromptTokens, tokens actually prefilled
	PromptTokPerSec  float64       // PrefillTokens per second of PrefillTime
	DecodeTokens     int           // answer tokens generated
	DecodeTokPerSec  float64       // decode steps per second of DecodeTime
	TimeToFirstToken time.Duration // from the start of the request
	PrefillTime      time.Duration // spent prefilling the prompt
	DecodeTime       time.Duration // spent sampling and decoding the answer
	MemoryBytes      int64         // resident set size of the process (Linux), else memory the Go runtime obtained
	KVBytes          int64         // bytes held by the KV cache
	KVBits           int           // storage precision of the KV cache (32, 16 or 8)
	PinnedTokens     int           // live tokens kept by pinned messages at the end of the request
}

// Why a Generate request rewound the cache (Stats.CacheRewind).
const (
	// RewindDiverged: the prompt differs from the tokens fed to the cache
	// after the reused prefix (the template trimmed the last answer's
	// whitespace, a stop string cut it, it re-tokenizes differently, or a
	// late turn was edited).
	RewindDiverged = "history changed"
	// RewindNothingNew: the prompt adds no token to what the cache holds
	// (the same conversation again, or one that ends earlier, as when an
	// answer is regenerated); its last token is prefilled again for the
	// next-token logits.
	RewindNothingNew = "nothing new"
)

// Why a Generate request could not continue the cache (Stats.CacheRestart).
const (
	// RestartEmpty: the cache held nothing to continue (first turn, after
	// Reset or an Error); never reported in Stats.
	RestartEmpty = "empty"
	// RestartHistory: the conversation's tokens share nothing usable with
	// what the cache was fed (another first token) or the engine lost
	// track of what it fed.
	RestartHistory = "history changed"
	// RestartBeyondRewind: the prompt differs from what the cache was fed
	// at a point the cache cannot be rewound to: the tokens there were
	// already trimmed to fit MaxKV, or it lies further back than the
	// sliding layers' rewind slack (kvcache.DefaultRewindSlack tokens).
	RestartBeyondRewind = "history changed beyond rewind reach"
	// RestartNothingNew: the prompt adds no token to what was fed (the
	// same conversation sent again) and the cache cannot be rewound to
	// prefill its last token again.
	RestartNothingNew = "nothing new"
	// RestartCapRaised: the cache trimmed under a lower MaxKV than the
	// current one, so a full prefill restores the context now affordable.
	RestartCapRaised = "cap raised"
	// RestartPinned: a pinned message's tokens had already been trimmed,
	// so the conversation is prefilled again with the pin in place.
	RestartPinned = "pinned message was trimmed"
	// RestartKVBits: Settings.KVBits changed, which empties the cache.
	RestartKVBits = "kv-bits changed"
)

// DoneReason says why an answer ended.
type DoneReason string

// The reasons a Generate request ends.
const (
	DoneStop       DoneReason = "stop"        // a stop token (end of turn) was sampled
	DoneMaxTokens  DoneReason = "max_tokens"  // Settings.MaxTokens reached
	DoneCancelled  DoneReason = "cancelled"   // Cancel (or Close) stopped it
	DoneStopString DoneReason = "stop_string" // a Settings.StopStrings entry appeared
	DoneLoop       DoneReason = "loop"        // the n-gram loop detector fired
)

// Done ends a Generate or Summarize request. Text is the whole answer as
// emitted in Token events (partial when cancelled). A Generate or
// Summarize ends with exactly one Done or one Error.
type Done struct {
	Header
	Reason DoneReason
	// Text is the answer as emitted in Token events, reasoning excluded.
	Text string
	// Reasoning is the text emitted with Token.Reasoning, its leading and
	// trailing newlines dropped ("" when the model did not reason). Pass
	// it back as the turn's Message.Reasoning.
	Reasoning string
	// Tokens is the number of answer tokens generated.
	Tokens int
	// Pieces, for a Summarize whose document was split, holds the piece
	// summaries in document order (those finished, when cancelled); nil
	// for Generate and for a document summarized in one piece.
	Pieces []SummaryPiece
}

// Error ends a request that failed (a panic inside the model included).
// The engine stays usable. CacheReset says the KV cache was cleared because
// it may have been left inconsistent, so the next turn prefills from scratch.
// Text holds any partial answer emitted before the failure.
type Error struct {
	Header
	Err        error
	CacheReset bool
	Text       string
}

// SettingsChanged confirms an UpdateSettings request.
type SettingsChanged struct {
	Header
	Settings Settings
}

// Cleared confirms a Reset request: the cache is empty.
type Cleared struct {
	Header
}
