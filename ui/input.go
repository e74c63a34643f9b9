package ui

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Bracketed-paste markers the terminal puts around a paste.
const (
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
)

// maxPasteBytes bounds one paste kept in memory; the rest of a longer
// paste is dropped and the paste is marked cut.
const maxPasteBytes = 128 << 20

// pasteInput sits between the terminal and bubbletea. bubbletea (v1)
// reads input 256 bytes at a time and, inside a bracketed paste, copies
// and rescans everything read so far on every read, so a paste costs time
// quadratic in its size (1 MB 0.8 s, 2 MB 3.6 s, 10 MB ~80 s). pasteInput
// reads the terminal in large blocks, cuts each bracketed paste out whole
// in one linear pass, keeps its text aside, and passes bubbletea a short
// stand-in paste ("mlxchat-paste:NONCE:N") in the same place of the
// stream, so that keys before and after keep their order. take swaps a
// stand-in for the text.
//
// It also makes input valid UTF-8: a byte that is not part of a UTF-8
// sequence becomes the text "\xNN" (bubbletea would drop it silently), in
// pastes and in typed input alike.
type pasteInput struct {
	nonce string
	mu    sync.Mutex
	seq   int
	texts map[string]pastedText
}

// pastedText is one paste cut out of the input.
type pastedText struct {
	text string
	cut  int64 // bytes dropped beyond maxPasteBytes (0 = whole)
}

func newPasteInput() *pasteInput {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &pasteInput{nonce: hex.EncodeToString(b[:]), texts: map[string]pastedText{}}
}

// take returns the paste a stand-in stands for and forgets it; ok is false
// for any other text (a paste that did not come through this filter).
func (p *pasteInput) take(standIn string) (pastedText, bool) {
	if p == nil || !strings.HasPrefix(standIn, "mlxchat-paste:") {
		return pastedText{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.texts[standIn]
	delete(p.texts, standIn)
	return t, ok
}

// register keeps a paste and returns the stand-in bubbletea gets.
func (p *pasteInput) register(t pastedText) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	id := fmt.Sprintf("mlxchat-paste:%s:%d", p.nonce, p.seq)
	p.texts[id] = t
	return id
}

// escWait is how long a lone Esc (or another start of the paste marker)
// at the end of a read waits for the rest of the marker before it is
// passed on as a key.
const escWait = 25 * time.Millisecond

// copy filters src into dst until src ends or fails, then closes dst.
func (p *pasteInput) copy(dst io.WriteCloser, src io.Reader) error {
	defer dst.Close()
	f := &pasteFilter{p: p}
	var mu sync.Mutex // f and dst, shared with the Esc timer
	var werr error
	write := func(out []byte) {
		if len(out) > 0 && werr == nil {
			_, werr = dst.Write(out)
		}
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		mu.Lock()
		if n > 0 {
			write(f.feed(buf[:n]))
			if len(f.held) > 0 {
				gen := f.gen
				time.AfterFunc(escWait, func() {
					mu.Lock()
					defer mu.Unlock()
					if f.gen == gen && !f.inPaste {
						write(f.release())
					}
				})
			}
		}
		if err != nil {
			write(f.flush())
			mu.Unlock()
			if err == io.EOF {
				return werr
			}
			return err
		}
		if werr != nil {
			mu.Unlock()
			return werr
		}
		mu.Unlock()
	}
}

// pasteFilter is the state of one input stream.
type pasteFilter struct {
	p       *pasteInput
	held    []byte // normal input held back: a partial marker or UTF-8 sequence
	inPaste bool
	paste   bytes.Buffer
	cut     int64
	tail    []byte // the last bytes of the paste, to find an end marker split across reads
	gen     int    // counts feeds, so a timer releases only what it was set for
}

// feed takes the next bytes read and returns what bubbletea gets now.
func (f *pasteFilter) feed(b []byte) []byte {
	f.gen++
	var out []byte
	data := b
	if len(f.held) > 0 {
		data = append(f.held, b...)
		f.held = nil
	}
	for len(data) > 0 {
		if f.inPaste {
			data = f.pasteBytes(data, &out)
			continue
		}
		i := bytes.Index(data, []byte(pasteStart))
		if i < 0 {
			keep := heldBack(data)
			out = appendValidUTF8(out, data[:len(data)-keep], true)
			if keep > 0 {
				f.held = append([]byte(nil), data[len(data)-keep:]...)
			}
			return out
		}
		out = appendValidUTF8(out, data[:i], true)
		data = data[i+len(pasteStart):]
		f.inPaste = true
		f.paste.Reset()
		f.cut = 0
		f.tail = f.tail[:0]
	}
	return out
}

// pasteBytes adds paste bytes up to the end marker; at the marker it emits
// the stand-in and returns the input after the marker.
func (f *pasteFilter) pasteBytes(data []byte, out *[]byte) []byte {
	// The end marker may start in the tail of what was read before.
	joined := append(append([]byte(nil), f.tail...), data...)
	j := bytes.Index(joined, []byte(pasteEnd))
	if j < 0 {
		f.add(data)
		keep := min(len(joined), len(pasteEnd)-1)
		f.tail = append(f.tail[:0], joined[len(joined)-keep:]...)
		return nil
	}
	// joined[:j] ends the paste; the part of it in f.tail is already added.
	if j >= len(f.tail) {
		f.add(data[:j-len(f.tail)])
	} else {
		f.unadd(len(f.tail) - j) // part of the marker was added as text
	}
	rest := joined[j+len(pasteEnd):]
	f.emit(out)
	return rest
}

func (f *pasteFilter) add(b []byte) {
	if room := maxPasteBytes - f.paste.Len(); len(b) > room {
		f.cut += int64(len(b) - room)
		b = b[:room]
	}
	f.paste.Write(b)
}

func (f *pasteFilter) unadd(n int) {
	f.paste.Truncate(max(0, f.paste.Len()-n))
}

// emit closes the paste: bubbletea gets the stand-in as a bracketed paste.
func (f *pasteFilter) emit(out *[]byte) {
	text := string(appendValidUTF8(nil, f.paste.Bytes(), false))
	id := f.p.register(pastedText{text: text, cut: f.cut})
	*out = append(*out, pasteStart...)
	*out = append(*out, id...)
	*out = append(*out, pasteEnd...)
	f.inPaste = false
	f.paste.Reset()
	f.tail = f.tail[:0]
}

// release passes held bytes on (no more input came to complete them).
func (f *pasteFilter) release() []byte {
	out := appendValidUTF8(nil, f.held, true)
	f.held = nil
	return out
}

// flush ends the stream: a paste whose end marker never came is passed on
// as it is, and held bytes are released.
func (f *pasteFilter) flush() []byte {
	var out []byte
	if f.inPaste {
		f.emit(&out)
	}
	out = appendValidUTF8(out, f.held, true)
	f.held = nil
	return out
}

// heldBack is how many bytes at the end of b wait for the next read: a
// proper prefix of the paste start marker (a lone Esc included: copy
// releases it after escWait), or an incomplete UTF-8 sequence.
func heldBack(b []byte) int {
	for k := min(len(pasteStart)-1, len(b)); k >= 1; k-- {
		if bytes.HasSuffix(b, []byte(pasteStart[:k])) {
			return k
		}
	}
	// An incomplete UTF-8 sequence: a lead byte in the last 3 bytes whose
	// sequence runs past the end.
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return 0
		}
		if c >= 0xC0 {
			need := 2
			switch {
			case c >= 0xF0:
				need = 4
			case c >= 0xE0:
				need = 3
			}
			if need > k {
				return k
			}
			return 0
		}
	}
	return 0
}

// appendValidUTF8 appends b with every byte that is not part of a valid
// UTF-8 sequence written as "\xNN" (its hex value, like Python's
// backslashreplace: U+FFFD would be dropped by bubbletea and by the
// editor, and would lose the byte). Escape sequences are ASCII and pass
// unchanged; with keys set (terminal input, not paste text), so do the
// three raw bytes after an X10 mouse report ("\x1b[M"), which are
// coordinates, not text.
func appendValidUTF8(out, b []byte, keys bool) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if keys && c == 0x1b && i+3 < len(b) && b[i+1] == '[' && b[i+2] == 'M' {
				end := min(len(b), i+6)
				out = append(out, b[i:end]...)
				i = end
				continue
			}
			out = append(out, c)
			i++
			continue
		}
		r, w := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && w <= 1 {
			out = append(out, fmt.Sprintf(`\x%02x`, c)...)
			i++
			continue
		}
		out = append(out, b[i:i+w]...)
		i += w
	}
	return out
}
