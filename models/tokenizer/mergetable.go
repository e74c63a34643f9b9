package tokenizer

import "math/bits"

// mergeTable maps a pair of token ids to its merge, with open addressing
// and linear probing: one cache line per lookup in the common case, which
// is what the BPE inner loop spends its time on.
type mergeTable struct {
	slots []mergeSlot
	shift uint // 64 - log2(len(slots))
	n     int
}

type mergeSlot struct {
	key uint64 // pairKey + 1; 0 marks an empty slot
	merge
}

func newMergeTable(n int) *mergeTable {
	size := 1 << bits.Len(uint(2*n+1))
	return &mergeTable{slots: make([]mergeSlot, size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
}

func (t *mergeTable) index(k uint64) int { return int((k * 0x9E3779B97F4A7C15) >> t.shift) }

// put inserts or replaces (the last duplicate of a merge wins, as in the
// reference implementations).
func (t *mergeTable) put(a, b int32, m merge) {
	k := pairKey(a, b) + 1
	mask := len(t.slots) - 1
	for i := t.index(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == 0 {
			*s = mergeSlot{k, m}
			t.n++
			return
		}
		if s.key == k {
			s.merge = m
			return
		}
	}
}

func (t *mergeTable) get(a, b int32) (merge, bool) {
	k := pairKey(a, b) + 1
	mask := len(t.slots) - 1
	for i := t.index(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return s.merge, true
		}
		if s.key == 0 {
			return merge{}, false
		}
	}
}
