package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json "added_tokens".
type addedToken struct {
	id         int32
	content    string
	singleWord bool
	lstrip     bool
	rstrip     bool
	normalized bool
	special    bool
}

// addedMatcher finds added tokens in text: leftmost match first, longest
// token at that position, as the Aho-Corasick LeftmostLongest search of
// Hugging Face tokenizers. It is a byte trie with edges in one map.
type addedMatcher struct {
	edges  map[uint64]int32 // node<<8 | byte -> child node
	term   []int32          // node -> index in tokens, or -1
	first  [256]bool        // bytes that start some token
	tokens []addedToken
}

func newAddedMatcher(tokens []addedToken) *addedMatcher {
	m := &addedMatcher{edges: make(map[uint64]int32), term: []int32{-1}, tokens: tokens}
	for i, t := range tokens {
		if t.content == "" {
			continue
		}
		m.first[t.content[0]] = true
		node := int32(0)
		for j := 0; j < len(t.content); j++ {
			key := uint64(node)<<8 | uint64(t.content[j])
			child, ok := m.edges[key]
			if !ok {
				child = int32(len(m.term))
				m.term = append(m.term, -1)
				m.edges[key] = child
			}
			node = child
		}
		m.term[node] = int32(i)
	}
	return m
}

// segment is a part of the input: either an added token or plain text.
type segment struct {
	text  string
	token int32 // token id, or -1 for plain text
	start bool  // the segment begins at offset 0 of the whole input
}

// candidates returns the tokens matching at s[i:], longest first.
func (m *addedMatcher) candidates(s string, i int, buf []int32) []int32 {
	buf = buf[:0]
	node := int32(0)
	for j := i; j < len(s); j++ {
		child, ok := m.edges[uint64(node)<<8|uint64(s[j])]
		if !ok {
			break
		}
		node = child
		if t := m.term[node]; t >= 0 {
			buf = append(buf, t)
		}
	}
	for l, r := 0, len(buf)-1; l < r; l, r = l+1, r-1 {
		buf[l], buf[r] = buf[r], buf[l]
	}
	return buf
}

// split cuts s into plain-text and added-token segments, applying the
// single_word, lstrip and rstrip options of the matched tokens.
func (m *addedMatcher) split(s string, out []segment) []segment {
	if m == nil || len(m.tokens) == 0 {
		return append(out, segment{text: s, token: -1})
	}
	var buf []int32
	plainStart := 0
	for i := 0; i < len(s); {
		if !m.first[s[i]] {
			i++
			continue
		}
		matched := -1
		for _, ti := range m.candidates(s, i, buf) {
			t := &m.tokens[ti]
			end := i + len(t.content)
			if t.singleWord {
				before, _ := utf8.DecodeLastRuneInString(s[:i])
				after, _ := utf8.DecodeRuneInString(s[end:])
				if (i > 0 && isRegexWord(before)) || (end < len(s) && isRegexWord(after)) {
					continue
				}
			}
			matched = int(ti)
			break
		}
		if matched < 0 {
			i++
			continue
		}
		t := &m.tokens[matched]
		lo, hi := i, i+len(t.content)
		if t.lstrip {
			lo = plainStart + len(strings.TrimRightFunc(s[plainStart:lo], isSpace))
		}
		if t.rstrip {
			rest := strings.TrimLeftFunc(s[hi:], isSpace)
			hi = len(s) - len(rest)
		}
		if lo > plainStart {
			out = append(out, segment{text: s[plainStart:lo], token: -1, start: plainStart == 0})
		}
		out = append(out, segment{text: t.content, token: t.id})
		plainStart, i = hi, hi
	}
	if plainStart < len(s) {
		out = append(out, segment{text: s[plainStart:], token: -1, start: plainStart == 0})
	}
	return out
}
