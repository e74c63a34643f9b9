package tokenizer

import "strings"

// StreamDecoder turns token ids into text one id at a time, for showing a
// generation as it happens. Add returns only complete UTF-8 text: bytes of a
// character split across byte-fallback or byte-level tokens are held back
// until the character is complete. The concatenation of everything Add and
// Flush return equals Decode of all ids added.
//
// It decodes each new id together with a few ids already emitted, so
// decoders that treat the start of the text specially (the leading space a
// SentencePiece tokenizer strips) see the same context as a full Decode.
// A StreamDecoder is not safe for concurrent use.
type StreamDecoder struct {
	tok *Tokenizer
	// ids[:ctx] were emitted already and serve as context; ids[ctx:] are
	// pending (their text ends in an incomplete UTF-8 sequence).
	ids    []int32
	ctx    int
	ctxRaw string // decodeRaw(ids[:ctx])
}

// streamContext is how many emitted ids are kept as decoding context;
// maxStreamContext bounds it when those ids decode to nothing.
const (
	streamContext    = 4
	maxStreamContext = 64
)

// NewStreamDecoder returns a StreamDecoder for tok.
func NewStreamDecoder(tok *Tokenizer) *StreamDecoder {
	return &StreamDecoder{tok: tok}
}

// Add appends one id and returns the text that became complete, possibly "".
func (d *StreamDecoder) Add(id int32) string {
	d.ids = append(d.ids, id)
	raw, tail := d.pending()
	if incompleteSuffix(tail) > 0 {
		return ""
	}
	d.advance(raw)
	return toValidUTF8(tail)
}

// Flush returns held-back bytes (as U+FFFD) and starts a new segment whose
// text continues the previous one.
func (d *StreamDecoder) Flush() string {
	if d.ctx == len(d.ids) {
		return ""
	}
	raw, tail := d.pending()
	d.advance(raw)
	return toValidUTF8(tail)
}

// pending decodes every id (raw) and returns the text after the emitted
// context (tail).
func (d *StreamDecoder) pending() (raw, tail string) {
	raw = d.tok.decodeRaw(d.ids)
	tail, ok := strings.CutPrefix(raw, d.ctxRaw)
	if !ok {
		// The decoder rewrote text already shown (no supported decoder
		// does); emit what follows the common prefix rather than stall.
		tail = raw[commonPrefix(raw, d.ctxRaw):]
	}
	return raw, tail
}

// Reset forgets all ids, for a new, unrelated text.
func (d *StreamDecoder) Reset() {
	d.ids, d.ctx, d.ctxRaw = d.ids[:0], 0, ""
}

// advance marks every id as emitted (raw is their decoding) and trims the
// context to the last few ids, unless they decode to nothing, in which case
// the context is kept whole so leading-space handling stays correct.
func (d *StreamDecoder) advance(raw string) {
	d.ctx, d.ctxRaw = len(d.ids), raw
	if len(d.ids) <= streamContext {
		return
	}
	keep := d.ids[len(d.ids)-streamContext:]
	keepRaw := d.tok.decodeRaw(keep)
	if keepRaw == "" && len(d.ids) < maxStreamContext {
		return
	}
	d.ids = append(d.ids[:0], keep...)
	d.ctx, d.ctxRaw = len(d.ids), keepRaw
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
