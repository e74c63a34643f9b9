package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON scanner for the two huge members of tokenizer.json (the
// vocabulary and the merges, hundreds of thousands of entries for Gemma),
// which encoding/json parses several times slower. Everything else is
// handed to encoding/json.

type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("JSON offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) expect(c byte) error {
	s.ws()
	if s.pos >= len(s.data) || s.data[s.pos] != c {
		return s.errorf("expected %q", c)
	}
	s.pos++
	return nil
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// str parses a JSON string. Invalid surrogates become U+FFFD, as in
// encoding/json.
func (s *scanner) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start := s.pos
	// Fast path: no escapes.
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		if c == '"' {
			out := string(s.data[start:s.pos])
			s.pos++
			return out, nil
		}
		if c == '\\' {
			break
		}
		s.pos++
	}
	buf := append([]byte(nil), s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return string(buf), nil
		case c != '\\':
			buf = append(buf, c)
			s.pos++
			continue
		}
		if s.pos+1 >= len(s.data) {
			break
		}
		e := s.data[s.pos+1]
		s.pos += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", s.errorf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				save := s.pos
				r2 := rune(-1)
				if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
					s.pos += 2
					r2, ok = s.hex4()
					if !ok {
						return "", s.errorf("bad \\u escape")
					}
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
				} else {
					s.pos = save
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", s.errorf("bad escape \\%c", e)
		}
	}
	return "", s.errorf("unterminated string")
}

func (s *scanner) hex4() (rune, bool) {
	if s.pos+4 > len(s.data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.data[s.pos:s.pos+4]), 16, 16)
	if err != nil {
		return 0, false
	}
	s.pos += 4
	return rune(v), true
}

// integer reads a JSON number that must be a whole number. A number
// with a fraction or an exponent ("1e+300") is read whole and named in
// the error, instead of the scanner stopping at its "e" and saying it
// expected ',' or '}'.
func (s *scanner) integer() (int64, error) {
	s.ws()
	start := s.pos
	for s.pos < len(s.data) && isNumberByte(s.data[s.pos]) {
		s.pos++
	}
	text := string(s.data[start:s.pos])
	v, err := strconv.ParseInt(text, 10, 64)
	switch {
	case err == nil:
		return v, nil
	case text == "":
		return 0, s.errorf("expected an integer")
	case errors.Is(err, strconv.ErrRange):
		return 0, s.errorf("integer %s out of range", text)
	}
	return 0, s.errorf("expected an integer, got %.40s", text)
}

// isNumberByte reports whether c can be part of a JSON number.
func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// skip moves past one JSON value of any kind and returns its bytes.
func (s *scanner) skip() ([]byte, error) {
	s.ws()
	start := s.pos
	depth := 0
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch c {
		case '"':
			s.pos++
			for s.pos < len(s.data) && s.data[s.pos] != '"' {
				if s.data[s.pos] == '\\' {
					s.pos++
				}
				s.pos++
			}
			if s.pos >= len(s.data) {
				return nil, s.errorf("unterminated string")
			}
			s.pos++
		case '{', '[':
			depth++
			s.pos++
		case '}', ']':
			if depth == 0 {
				return s.data[start:s.pos], nil
			}
			depth--
			s.pos++
		case ',':
			if depth == 0 {
				return s.data[start:s.pos], nil
			}
			s.pos++
		default:
			s.pos++
		}
		if depth == 0 && (c == '"' || c == '}' || c == ']') {
			return s.data[start:s.pos], nil
		}
	}
	if depth != 0 || s.pos == start {
		return nil, s.errorf("truncated value")
	}
	return s.data[start:s.pos], nil
}

// object calls member for each key of the object at the current position;
// member must consume the value.
func (s *scanner) object(member func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.errorf("expected ',' or '}'")
		}
	}
}

// array calls elem for each element of the array at the current position.
func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.errorf("expected ',' or ']'")
		}
	}
}

// parseTokenizerJSON reads tokenizer.json: model.vocab and model.merges with
// the scanner, every other member with encoding/json.
func parseTokenizerJSON(data []byte, f *fileJSON) error {
	s := &scanner{data: data}
	other := map[string]json.RawMessage{}
	modelOther := map[string]json.RawMessage{}
	err := s.object(func(key string) error {
		if key != "model" {
			raw, err := s.skip()
			other[key] = raw
			return err
		}
		return s.object(func(mkey string) error {
			var err error
			switch mkey {
			case "vocab":
				if s.peek() != '{' {
					return s.errorf("model.vocab: expected an object of token -> id (Unigram models are not supported)")
				}
				f.Model.vocab = make(map[string]int32, min(len(s.data)/100, 1<<20))
				err = s.object(func(tok string) error {
					id, err := s.integer()
					if err != nil {
						return err
					}
					if id < 0 || id > 1<<31-1 {
						return s.errorf("vocab id %d out of range", id)
					}
					f.Model.vocab[tok] = int32(id)
					return nil
				})
				f.Model.haveVocab = true
			case "merges":
				err = s.array(func() error {
					if s.peek() == '[' {
						var pair [2]string
						n := 0
						if err := s.array(func() error {
							t, err := s.str()
							if n < 2 {
								pair[n] = t
							}
							n++
							return err
						}); err != nil {
							return err
						}
						if n != 2 {
							return s.errorf("merges[%d]: expected a pair", len(f.Model.merges))
						}
						f.Model.merges = append(f.Model.merges, pair)
						return nil
					}
					line, err := s.str()
					if err != nil {
						return err
					}
					a, b, ok := cutMerge(line)
					if !ok {
						return fmt.Errorf("merges[%d] = %q: expected two tokens separated by one space", len(f.Model.merges), line)
					}
					f.Model.merges = append(f.Model.merges, [2]string{a, b})
					return nil
				})
			default:
				var raw []byte
				raw, err = s.skip()
				modelOther[mkey] = raw
			}
			return err
		})
	})
	if err != nil {
		return err
	}
	if s.peek() != 0 {
		return s.errorf("unexpected data after the top-level object")
	}
	if !f.Model.haveVocab {
		return errors.New("model.vocab missing")
	}
	for key, dst := range map[string]any{
		"added_tokens": &f.AddedTokens, "normalizer": &f.Normalizer, "pre_tokenizer": &f.PreTokenizer,
		"post_processor": &f.PostProcessor, "decoder": &f.Decoder,
	} {
		if raw, ok := other[key]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return fmt.Errorf("%s: %w", key, describeJSON(err))
			}
		}
	}
	if len(modelOther) > 0 {
		raw, _ := json.Marshal(modelOther)
		if err := json.Unmarshal(raw, &f.Model); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	return nil
}

// describeJSON words a decoding error without Go's type and field names:
// "id: number 1000000000000000000, want a whole number from 0 to
// 2147483647" instead of "json: cannot unmarshal number ... into Go
// struct field addedTokenJSON.id of type int32".
func describeJSON(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	want := "a " + te.Type.Kind().String()
	switch k := te.Type.Kind(); {
	case k == reflect.Int32:
		want = "a whole number from 0 to 2147483647"
	case k >= reflect.Int && k <= reflect.Uint64:
		want = "a whole number"
	case k == reflect.Float32 || k == reflect.Float64:
		want = "a number"
	case k == reflect.Bool:
		want = "true or false"
	case k == reflect.String:
		want = "a string"
	case k == reflect.Slice || k == reflect.Array:
		want = "a list"
	case k == reflect.Struct || k == reflect.Map || k == reflect.Pointer:
		want = "an object"
	}
	if te.Field == "" {
		return fmt.Errorf("%s, want %s", te.Value, want)
	}
	return fmt.Errorf("%s: %s, want %s", te.Field, te.Value, want)
}

// cutMerge splits an "a b" merge line, which must have exactly one space.
func cutMerge(line string) (a, b string, ok bool) {
	for i := 0; i < len(line); i++ {
		if line[i] == ' ' {
			a, b = line[:i], line[i+1:]
			for j := 0; j < len(b); j++ {
				if b[j] == ' ' {
					return "", "", false
				}
			}
			return a, b, true
		}
	}
	return "", "", false
}
