package tokenizer

import (
	"sync"
	"unicode/utf8"
)

// merge is the result of merging an adjacent pair of tokens.
type merge struct {
	rank int32 // position in the merges list; lower merges first
	id   int32 // id of the merged token
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpeModel is the BPE model of tokenizer.json with its merge table keyed by
// token-id pairs. It is safe for concurrent use.
type bpeModel struct {
	vocab  map[string]int32
	merges *mergeTable

	// byteLevel: words are raw bytes and each byte starts as the token of
	// its byte-level character (byteUnit). Otherwise words are UTF-8 text
	// and each character starts as its own token (asciiUnit / vocab).
	byteLevel bool
	byteUnit  [256]int32
	asciiUnit [128]int32

	byteFallback bool
	fallbackID   [256]int32 // id of "<0xNN>", or -1
	unk          int32      // id of the unknown token, or -1
	fuseUnk      bool
	ignoreMerges bool

	cacheMu sync.Mutex
	cache   map[string][]int32

	scratch sync.Pool // *bpeScratch
}

const (
	maxCachedWord = 256     // bytes; longer words rarely repeat
	maxCacheSize  = 1 << 16 // entries; the cache is cleared when it grows past this
)

// symbol is a token in the doubly linked list a word is merged in. A
// merged-away symbol has id -1.
type symbol struct {
	id         int32
	prev, next int32
}

// candidate is a possible merge of the symbol at pos with its successor,
// ordered by rank then position (leftmost first), as in the reference.
type candidate struct {
	key         uint64 // rank<<32 | pos
	left, right int32  // ids the pair had when queued
}

type bpeScratch struct {
	syms []symbol
	heap []candidate
}

func (m *bpeModel) init() {
	m.cache = make(map[string][]int32)
	m.scratch.New = func() any { return &bpeScratch{} }
	for i := range m.asciiUnit {
		m.asciiUnit[i] = -1
		if id, ok := m.vocab[string(rune(i))]; ok {
			m.asciiUnit[i] = id
		}
	}
	for b := 0; b < 256; b++ {
		m.byteUnit[b] = -1
		if id, ok := m.vocab[byteLevel.toString[b]]; ok {
			m.byteUnit[b] = id
		}
		m.fallbackID[b] = -1
		if id, ok := m.vocab[byteTokenName(byte(b))]; ok {
			m.fallbackID[b] = id
		}
	}
}

const hexDigits = "0123456789ABCDEF"

// byteTokenName is the byte-fallback token of b, e.g. "<0x0A>".
func byteTokenName(b byte) string {
	return string([]byte{'<', '0', 'x', hexDigits[b>>4], hexDigits[b&15], '>'})
}

// encodeWord appends the token ids of one pre-token to out.
func (m *bpeModel) encodeWord(word string, out []int32) []int32 {
	if word == "" {
		return out
	}
	cacheable := len(word) < maxCachedWord
	if cacheable {
		m.cacheMu.Lock()
		ids, ok := m.cache[word]
		m.cacheMu.Unlock()
		if ok {
			return append(out, ids...)
		}
	}
	start := len(out)
	out = m.bpe(word, out)
	if cacheable {
		ids := append([]int32(nil), out[start:]...)
		m.cacheMu.Lock()
		if len(m.cache) >= maxCacheSize {
			clear(m.cache)
		}
		m.cache[word] = ids
		m.cacheMu.Unlock()
	}
	return out
}

func (m *bpeModel) bpe(word string, out []int32) []int32 {
	if m.ignoreMerges {
		key := word
		if m.byteLevel {
			key = byteLevel.encode(word)
		}
		if id, ok := m.vocab[key]; ok {
			return append(out, id)
		}
	}
	sc := m.scratch.Get().(*bpeScratch)
	defer m.scratch.Put(sc)
	syms := m.initialSymbols(word, sc.syms[:0])
	sc.syms = syms
	if len(syms) > 1 {
		sc.heap = m.mergeAll(syms, sc.heap[:0])
	}
	for i := int32(0); i >= 0 && int(i) < len(syms); i = syms[i].next {
		out = append(out, syms[i].id)
	}
	return out
}

// initialSymbols splits a word into its starting tokens: bytes for
// byte-level models, characters otherwise, with byte fallback or the unknown
// token for characters missing from the vocabulary.
func (m *bpeModel) initialSymbols(word string, syms []symbol) []symbol {
	push := func(id int32) {
		n := int32(len(syms))
		syms = append(syms, symbol{id: id, prev: n - 1, next: n + 1})
	}
	if m.byteLevel {
		for i := 0; i < len(word); i++ {
			if id := m.byteUnit[word[i]]; id >= 0 {
				push(id)
			} else if m.unk >= 0 {
				push(m.unk)
			}
		}
	} else {
		lastUnk := false
		for i := 0; i < len(word); {
			var id int32 = -1
			c := word[i]
			size := 1
			if c < utf8.RuneSelf {
				id = m.asciiUnit[c]
			} else {
				_, size = utf8.DecodeRuneInString(word[i:])
				if v, ok := m.vocab[word[i:i+size]]; ok {
					id = v
				}
			}
			char := word[i : i+size]
			i += size
			if id >= 0 {
				push(id)
				lastUnk = false
				continue
			}
			if m.byteFallback && m.hasFallback(char) {
				for k := 0; k < len(char); k++ {
					push(m.fallbackID[char[k]])
				}
				lastUnk = false
				continue
			}
			if m.unk >= 0 && !(m.fuseUnk && lastUnk) {
				push(m.unk)
			}
			lastUnk = m.unk >= 0
		}
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	return syms
}

func (m *bpeModel) hasFallback(char string) bool {
	for k := 0; k < len(char); k++ {
		if m.fallbackID[char[k]] < 0 {
			return false
		}
	}
	return true
}

// mergeAll applies merges lowest rank first (leftmost on ties) until none
// applies. Each queued candidate remembers the pair of ids it was queued
// for; it is stale, and skipped, if either side changed since.
func (m *bpeModel) mergeAll(syms []symbol, h []candidate) []candidate {
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges.get(syms[i].id, syms[i+1].id); ok {
			h = append(h, candidate{uint64(mg.rank)<<32 | uint64(i), syms[i].id, syms[i+1].id})
		}
	}
	heapify(h)
	for len(h) > 0 {
		top := h[0]
		h = heapPop(h)
		pos := int32(top.key & 0xFFFFFFFF)
		s := &syms[pos]
		if s.id != top.left || s.next < 0 {
			continue
		}
		right := s.next
		if syms[right].id != top.right {
			continue
		}
		mg, _ := m.merges.get(top.left, top.right)
		s.id = mg.id
		s.next = syms[right].next
		syms[right].id = -1
		if s.next >= 0 {
			syms[s.next].prev = pos
			if nm, ok := m.merges.get(s.id, syms[s.next].id); ok {
				h = heapPush(h, candidate{uint64(nm.rank)<<32 | uint64(pos), s.id, syms[s.next].id})
			}
		}
		if p := s.prev; p >= 0 {
			if nm, ok := m.merges.get(syms[p].id, s.id); ok {
				h = heapPush(h, candidate{uint64(nm.rank)<<32 | uint64(p), syms[p].id, s.id})
			}
		}
	}
	return h
}

// A binary min-heap on candidate.key, kept by hand to avoid the interface
// calls of container/heap in the hot loop.

func heapify(h []candidate) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
}

func heapPush(h []candidate, c candidate) []candidate {
	h = append(h, c)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].key <= h[i].key {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	return h
}

func heapPop(h []candidate) []candidate {
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	if n > 0 {
		siftDown(h, 0)
	}
	return h
}

func siftDown(h []candidate, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		small := l
		if r := l + 1; r < n && h[r].key < h[l].key {
			small = r
		}
		if h[i].key <= h[small].key {
			return
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
}

// clearCache empties the word cache (benchmarks use it to time cold runs).
func (m *bpeModel) clearCache() {
	m.cacheMu.Lock()
	clear(m.cache)
	m.cacheMu.Unlock()
}
