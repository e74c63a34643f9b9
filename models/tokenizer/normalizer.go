package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
)

// normalizer rewrites one section of input text (the text between added
// tokens) before pre-tokenization.
type normalizer interface {
	normalize(s string) string
}

func buildNormalizer(c *componentJSON) (normalizer, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Type {
	case "Sequence":
		var seq sequenceNorm
		for i, sub := range c.Normalizers {
			n, err := buildNormalizer(sub)
			if err != nil {
				return nil, fmt.Errorf("normalizer Sequence[%d]: %w", i, err)
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	case "NFC":
		return unicodeNorm{formNFC}, nil
	case "NFD":
		return unicodeNorm{formNFD}, nil
	case "NFKC":
		return unicodeNorm{formNFKC}, nil
	case "NFKD":
		return unicodeNorm{formNFKD}, nil
	case "Replace":
		r, err := buildReplace(c)
		if err != nil {
			return nil, fmt.Errorf("Replace normalizer: %w", err)
		}
		return r, nil
	case "Prepend":
		if c.Prepend == nil {
			return nil, fmt.Errorf("Prepend normalizer without \"prepend\"")
		}
		return prependNorm(*c.Prepend), nil
	case "Lowercase":
		return lowercaseNorm{}, nil
	case "Strip":
		return stripNorm{left: c.StripLeft, right: c.StripRight}, nil
	default:
		return nil, fmt.Errorf("unsupported normalizer type %q", c.Type)
	}
}

type sequenceNorm []normalizer

func (s sequenceNorm) normalize(x string) string {
	for _, n := range s {
		x = n.normalize(x)
	}
	return x
}

type unicodeNorm struct{ form unicodeForm }

func (u unicodeNorm) normalize(s string) string {
	if isASCII(s) { // ASCII is invariant under every normalization form
		return s
	}
	return u.form.String(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// replaceOp replaces a literal string or regex matches with content; it
// serves the Replace normalizer and the Replace decoder.
type replaceOp struct {
	lit     string
	re      *regexp.Regexp
	content string
}

func buildReplace(c *componentJSON) (replaceOp, error) {
	if c.Pattern == nil || c.Content == nil {
		return replaceOp{}, fmt.Errorf("needs \"pattern\" and \"content\"")
	}
	r := replaceOp{content: *c.Content}
	switch {
	case c.Pattern.String != nil:
		r.lit = *c.Pattern.String
	case c.Pattern.Regex != nil:
		t, err := translateRegex(*c.Pattern.Regex)
		if err != nil {
			return replaceOp{}, err
		}
		if r.re, err = regexp.Compile(t); err != nil {
			return replaceOp{}, fmt.Errorf("regex %q is not supported (Go regexp: %v)", *c.Pattern.Regex, err)
		}
	default:
		return replaceOp{}, fmt.Errorf("pattern has neither String nor Regex")
	}
	return r, nil
}

func (r replaceOp) normalize(s string) string { return r.apply(s) }

func (r replaceOp) apply(s string) string {
	if r.re != nil {
		return r.re.ReplaceAllLiteralString(s, r.content)
	}
	if r.lit == "" {
		return s
	}
	return strings.ReplaceAll(s, r.lit, r.content)
}

// prependNorm prepends its string to non-empty sections.
type prependNorm string

func (p prependNorm) normalize(s string) string {
	if s == "" {
		return s
	}
	return string(p) + s
}

type lowercaseNorm struct{}

func (lowercaseNorm) normalize(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	return rustLowercase(s)
}

type stripNorm struct{ left, right bool }

func (st stripNorm) normalize(s string) string {
	if st.left {
		s = strings.TrimLeftFunc(s, isSpace)
	}
	if st.right {
		s = strings.TrimRightFunc(s, isSpace)
	}
	return s
}
