package engine

import "fmt"

// This file is the part of the engine's contract that deals with documents
// longer than the live window (issue #15): the fit check before sending,
// where each message lies in the cache (the trim boundary), pinned
// messages, and summarizing a document in pieces under the cap.
//
// Typical use by a chat UI:
//
//	id := e.Submit(FitCheck{Conversation: append(conv, draft)})
//	// ... Fit{Visible < MessageTokens}: warn, offer /summarize or /kv Fit.SuggestedMaxKV
//	e.Submit(Summarize{Conversation: conv, Document: paste})
//	// ... SummarizeProgress, PieceSummary per piece, Token (final answer), Done{Pieces}
//	// Layout after every Generate: dim messages with Live == 0, mark CutAt.

// Span is a run of absolute token positions [Start, End) in the cache's
// history (position 0 is the first token fed since the cache was last
// emptied; a rendered prompt's token i sits at position i).
type Span struct {
	Start, End int
}

// Len is the number of positions in the span.
func (s Span) Len() int { return s.End - s.Start }

// FitCheck asks whether the last message of Conversation (a draft not yet
// sent, a paste included) would fit in the live window, with the numbers a
// notice needs. It is answered by one Fit event (or an Error, e.g. before
// the model is loaded) and never waits for a running request: the
// conversation is rendered and tokenized on a goroutine of its own, in time
// linear in its length, while generation goes on. Only the newest FitCheck
// is worked on: one submitted while another is still pending supersedes
// it, and the superseded one is answered with Fit{Superseded: true}.
type FitCheck struct {
	// Conversation is the conversation as it would be sent, ending with
	// the draft message. Pinned flags count as in Generate.
	Conversation []Message
	// Settings are the settings to check against; nil uses the engine's
	// current ones (as of the last UpdateSettings that has run).
	Settings *Settings
}

// Fit answers a FitCheck.
type Fit struct {
	Header
	// Superseded says a newer FitCheck replaced this one before it was
	// worked on; every other field is zero.
	Superseded bool
	// MessageTokens is how many tokens the last message's content takes
	// in the rendered prompt; PromptTokens is the whole prompt's length
	// (the conversation with the draft and the reply header).
	MessageTokens int
	PromptTokens  int
	// MaxKV is the setting (0 = off); LiveCap the cap checked against:
	// MaxKV, or ContextLength when MaxKV is 0 (Settings.LiveCap; 0 = no
	// limit), which is what the engine trims to. ContextLength is the
	// model's (max_position_embeddings or its family's key, 0 = unknown).
	MaxKV         int
	LiveCap       int
	ContextLength int
	// Sink and Pinned are the never-trimmed tokens: the attention sink
	// (the system prompt with KeepSystem) and the pinned messages'.
	Sink   int
	Pinned int
	// Window is the live window for recent tokens: LiveCap minus Sink and
	// Pinned (0 when LiveCap is 0: unlimited).
	Window int
	// Visible is how many of the message's tokens the model would attend
	// once the prompt is prefilled (the sink, the pins and the last Window
	// tokens of the prompt are live); Fits says all of them
	// (Visible == MessageTokens). The answer then trims further as it
	// grows, oldest first.
	Visible int
	Fits    bool
	// KVBytesPerToken is what one more token of MaxKV costs in KV memory
	// with the current storage (Settings.KVBits), from the model's real
	// cache layout (kvcache.GlobalTokenBytes): the global layers that own
	// a cache, each 2 (K and V) x KVHeads x HeadDim x 4 bytes as float32
	// (2 as float16, 1 plus a float32 scale per head as int8), and with
	// 16 or 8 bits the float32 scratch row the views are decoded into.
	KVBytesPerToken int64
	// SuggestedMaxKV is a cap under which the whole prompt and an answer
	// of some length fit (rounded up, at most ContextLength), and
	// SuggestedKVBytes the KV memory a cache full at that cap holds: every
	// owning layer, sliding layers capped at their window plus their
	// rewind slack, and the decoding scratch (kvcache.Footprint, which
	// TestFootprint checks against the bytes a cache holds). Zero when the prompt already fits, or when LiveCap is
	// already the model's context (nothing to raise).
	SuggestedMaxKV   int
	SuggestedKVBytes int64
}

// Layout says where each message of a Generate's conversation lies in the
// cache and which part of it the model still attends. It is sent after the
// prompt is prefilled (before the first Token) and again after the answer,
// just before Stats, when decoding may have trimmed more.
type Layout struct {
	Header
	// Messages has one entry per message with content tokens, in order
	// (the system prompt the engine adds from Settings.System included),
	// and a last entry for the answer (Index == len(Conversation)) in the
	// layout sent after the answer.
	Messages []MessageSpan
	// Spans are the live positions of the global layers, ascending (as in
	// CacheState); Seen is the cache's offset.
	Spans []Span
	Seen  int
}

// MessageSpan is one message's place in the cache.
type MessageSpan struct {
	// Index is the message's index in the request's Conversation, -1 for
	// the system prompt added from Settings.System, len(Conversation) for
	// the answer.
	Index int
	// Tokens are the absolute positions of the message's content tokens
	// (the template's turn markers around it excluded).
	Tokens Span
	// Live is how many of them the global layers still hold; Trimmed how
	// many were dropped (Live + Trimmed == Tokens.Len()). A message with
	// Live == 0 is wholly outside the live window.
	Live    int
	Trimmed int
	// CutAt is the byte offset into the message's Content where the part
	// the model still attends begins: Content[CutAt:] is live. It is 0
	// when nothing was trimmed and len(Content) when all of it was; in
	// between it is the start of the first live token after the last
	// trimmed one, found from the tokenizer's decoding of the tokens
	// before it (a character boundary).
	CutAt int
	// Pinned repeats the message's Pinned flag (pinned tokens are never
	// trimmed once pinned).
	Pinned bool
}

// DefaultSummarizeInstruction is the instruction of a Summarize that gives
// none.
const DefaultSummarizeInstruction = "Summarize the following document."

// Summarize answers Instruction about a Document that may be far longer
// than the live window, map-reduce style and within MaxKV: the document is
// split on heading and paragraph boundaries (a paragraph too long for one
// piece on sentence, then line, then token boundaries) into pieces that
// fit beside the conversation prefix and the instruction, leaving room for
// the answer. Each piece is answered with the cache rewound to the shared
// prefix (the conversation and the instruction), which is prefilled once,
// never again per piece. The piece summaries are then combined into one
// answer, in several rounds when they do not fit in one prompt.
//
// Events, in order: SummarizeProgress when each piece or combination
// starts, PieceSummary when it ends, the final answer as Token events, then
// Stats and one Done whose Text is the final answer and whose Pieces are the
// map pieces' summaries (a document that fits in one piece is answered
// directly: no Pieces). Cancel stops at the next chunk or token and ends
// with Done{Reason: DoneCancelled} carrying what was done (the finished
// pieces, and the final answer's text so far). The cache never holds more
// than MaxKV keys and is never trimmed during a Summarize.
//
// The cap is MaxKV, or the model's context length when MaxKV is 0; with
// neither the document is answered in one piece. Settings.MaxTokens, when
// set, caps each piece summary and the final answer, else AnswerTokens
// does.
type Summarize struct {
	// Conversation is what comes before the document, usually empty (the
	// Settings.System prompt is added as for Generate); it is part of the
	// shared prefix and must leave room for pieces under the cap.
	Conversation []Message
	// Document is the text to summarize (a paste or a /read file).
	Document string
	// Instruction says what to do with it ("" = DefaultSummarizeInstruction).
	Instruction string
	// AnswerTokens is the room kept for each answer, in tokens
	// (0 = min(1024, cap/4)).
	AnswerTokens int
	// Settings override the engine's current settings for this request
	// only; nil uses the current ones.
	Settings *Settings
}

// SummarizeRoomError is the error of a Summarize whose live cap leaves
// too little room for pieces of the document beside the prompt around it
// and the room kept for each answer. Its fields let a caller say what to
// change in its own terms (`mlxchat run` names its flags); Error gives the
// chat's wording.
type SummarizeRoomError struct {
	// PromptTokens is the prompt around the document: the conversation,
	// the system prompt and the instruction.
	PromptTokens int
	// AnswerTokens is the room kept for each answer.
	AnswerTokens int
	// Cap is the live cap (Settings.LiveCap).
	Cap int
	// Left is what the cap leaves for the pieces (0 or more), Need the
	// least they need.
	Left, Need int
	// ShortestAnswers says AnswerTokens is already the least room an
	// answer gets, so asking for shorter answers would not help.
	ShortestAnswers bool
}

func (e *SummarizeRoomError) Error() string {
	return fmt.Sprintf("summarize: the conversation and the instruction take %d tokens and each answer %d of the %d-token cap, leaving %d for pieces of the document (want at least %d); raise --max-kv-size, clear the conversation or ask for shorter answers",
		e.PromptTokens, e.AnswerTokens, e.Cap, e.Left, e.Need)
}

// SummaryPhase names the two phases of a Summarize.
type SummaryPhase string

// The phases of a Summarize.
const (
	PhaseMap    SummaryPhase = "map"    // summarizing each piece of the document
	PhaseReduce SummaryPhase = "reduce" // combining piece summaries
)

// SummarizeProgress is sent when a Summarize starts a piece (PhaseMap) or a
// combination of summaries (PhaseReduce): the status line's "summarize 3/9".
type SummarizeProgress struct {
	Header
	Phase SummaryPhase
	// Piece is the 1-based index of the piece (or combination) starting
	// now, of Pieces in this phase; Round counts reduce rounds from 1
	// (0 in the map phase).
	Piece, Pieces int
	Round         int
}

// PieceSummary is sent when a piece (or an intermediate combination) has
// been answered.
type PieceSummary struct {
	Header
	Piece SummaryPiece
}

// SummaryPiece is the answer for one piece of the document, or for one
// combination of piece summaries.
type SummaryPiece struct {
	Phase         SummaryPhase
	Round         int // 0 for map pieces
	Piece, Pieces int // 1-based index and count within its phase and round
	// SourceStart and SourceEnd are the byte range of Summarize.Document
	// the piece covers (for a combination: from its first piece's start
	// to its last piece's end).
	SourceStart, SourceEnd int
	// Text is the piece's answer; Tokens its length in tokens and Reason
	// why it ended (DoneMaxTokens: it was cut at the answer room).
	Text   string
	Tokens int
	Reason DoneReason
}

func (FitCheck) isRequest()  {}
func (Summarize) isRequest() {}
