package tokenizer

import (
	"fmt"
	"strings"
)

// dtoken is a token on its way through the decoder chain; added tokens pass
// the byte-level step verbatim.
type dtoken struct {
	s     string
	added bool
}

// decoder is one step of the tokenizer.json decoder chain. Steps work on Go
// strings that may hold raw, not yet valid, bytes (from byte fallback or
// byte-level tokens); Decode makes the final text valid UTF-8.
type decoder interface {
	decode(toks []dtoken) []dtoken
}

func buildDecoder(c *componentJSON) (decoder, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Type {
	case "Sequence":
		var seq sequenceDec
		for i, sub := range c.Decoders {
			d, err := buildDecoder(sub)
			if err != nil {
				return nil, fmt.Errorf("decoder Sequence[%d]: %w", i, err)
			}
			if d != nil {
				seq = append(seq, d)
			}
		}
		return seq, nil
	case "Replace":
		r, err := buildReplace(c)
		if err != nil {
			return nil, fmt.Errorf("Replace decoder: %w", err)
		}
		return replaceDec{r}, nil
	case "ByteFallback":
		return byteFallbackDec{}, nil
	case "Fuse":
		return fuseDec{}, nil
	case "Strip":
		if c.Content == nil {
			return nil, fmt.Errorf("Strip decoder without \"content\"")
		}
		return stripDec{content: *c.Content, start: c.Start, stop: c.Stop}, nil
	case "ByteLevel":
		return byteLevelDec{}, nil
	case "Metaspace":
		m := metaspaceDec{replacement: "▁", strip: true}
		if c.Replacement != nil {
			m.replacement = *c.Replacement
		}
		if c.PrependScheme != nil {
			m.strip = *c.PrependScheme != "never"
		} else if c.AddPrefixSpace != nil {
			m.strip = *c.AddPrefixSpace
		}
		return m, nil
	default:
		return nil, fmt.Errorf("unsupported decoder type %q", c.Type)
	}
}

type sequenceDec []decoder

func (s sequenceDec) decode(toks []dtoken) []dtoken {
	for _, d := range s {
		toks = d.decode(toks)
	}
	return toks
}

type replaceDec struct{ r replaceOp }

func (r replaceDec) decode(toks []dtoken) []dtoken {
	for i := range toks {
		toks[i].s = r.r.apply(toks[i].s)
	}
	return toks
}

// byteFallbackDec turns "<0xNN>" tokens into the raw byte NN.
type byteFallbackDec struct{}

func (byteFallbackDec) decode(toks []dtoken) []dtoken {
	for i, t := range toks {
		if b, ok := parseByteToken(t.s); ok {
			toks[i].s = string([]byte{b})
		}
	}
	return toks
}

// parseByteToken recognises "<0xNN>" with two hex digits.
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexValue(s[3])
	lo, ok2 := hexValue(s[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

type fuseDec struct{}

func (fuseDec) decode(toks []dtoken) []dtoken {
	if len(toks) <= 1 {
		return toks
	}
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.s)
	}
	return []dtoken{{s: b.String()}}
}

// stripDec removes up to start leading and stop trailing copies of content
// from every token.
type stripDec struct {
	content     string
	start, stop int
}

func (st stripDec) decode(toks []dtoken) []dtoken {
	if st.content == "" {
		return toks
	}
	for i := range toks {
		s := toks[i].s
		for k := 0; k < st.start && strings.HasPrefix(s, st.content); k++ {
			s = s[len(st.content):]
		}
		for k := 0; k < st.stop && strings.HasSuffix(s, st.content); k++ {
			s = s[:len(s)-len(st.content)]
		}
		toks[i].s = s
	}
	return toks
}

// byteLevelDec maps byte-level characters back to raw bytes; a token with a
// character outside the mapping (and every added token) is kept as is.
type byteLevelDec struct{}

func (byteLevelDec) decode(toks []dtoken) []dtoken {
	for i, t := range toks {
		if t.added {
			continue
		}
		if raw, ok := byteLevel.decode(t.s); ok {
			toks[i].s = raw
		}
	}
	return toks
}

// metaspaceDec turns the replacement character back into spaces and drops
// the space the pre-tokenizer prepended to the first token.
type metaspaceDec struct {
	replacement string
	strip       bool
}

func (m metaspaceDec) decode(toks []dtoken) []dtoken {
	for i := range toks {
		s := strings.ReplaceAll(toks[i].s, m.replacement, " ")
		if i == 0 && m.strip {
			s = strings.TrimPrefix(s, " ")
		}
		toks[i].s = s
	}
	return toks
}
