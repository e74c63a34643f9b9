package tensor

import (
	"fmt"
	"slices"
)

// Span is a run of keys stored consecutively whose absolute positions are
// Start, Start+1, ..., Start+Len-1.
type Span struct {
	Start, Len int
}

// Mask describes which keys each query row of an attention call may see,
// by absolute positions rather than by a materialized matrix:
//
//   - query row q sits at absolute position QueryStart+q, for q < Rows;
//   - key column k sits at the absolute position given by walking Keys,
//     in storage order (the order of the K and V rows handed to Attention);
//   - row q may attend column k iff keyPos <= queryPos and, when Window > 0,
//     queryPos-keyPos < Window.
//
// Masks are built by kvcache together with the keys they describe (see
// kvcache.Layer.Append), so the key axis always equals the number of keys
// returned. Model code never builds one. Attention kernels check
// KeyLen against the K tensor and return an error on disagreement.
type Mask struct {
	QueryStart int
	Rows       int
	Keys       []Span
	Window     int
}

// NewMask validates and returns a mask. It is meant for caches; models get
// masks from kvcache.
func NewMask(queryStart, rows int, keys []Span, window int) (Mask, error) {
	m := Mask{QueryStart: queryStart, Rows: rows, Keys: keys, Window: window}
	return m, m.Validate()
}

// Validate checks that the mask is well formed and that every query row can
// see at least one key (an all-masked row would give NaN).
func (m Mask) Validate() error {
	if m.Rows <= 0 || m.QueryStart < 0 || m.Window < 0 {
		return fmt.Errorf("mask: bad query range start=%d rows=%d window=%d", m.QueryStart, m.Rows, m.Window)
	}
	for _, s := range m.Keys {
		if s.Len < 0 || s.Start < 0 {
			return fmt.Errorf("mask: bad key span %+v", s)
		}
	}
	for _, q := range []int{0, m.Rows - 1} {
		pos := m.QueryStart + q
		seen := false
		for _, s := range m.Keys {
			lo, hi := s.Start, s.Start+s.Len-1
			if s.Len == 0 || lo > pos {
				continue
			}
			if hi > pos {
				hi = pos
			}
			if m.Window == 0 || pos-hi < m.Window {
				seen = true
				break
			}
		}
		if !seen {
			return fmt.Errorf("mask: query row %d (position %d) sees no key", q, pos)
		}
	}
	return nil
}

// KeyLen is the number of key columns: the sum of the span lengths.
func (m Mask) KeyLen() int {
	n := 0
	for _, s := range m.Keys {
		n += s.Len
	}
	return n
}

// KeyPositions expands the spans into one absolute position per key column.
func (m Mask) KeyPositions() []int {
	return m.AppendKeyPositions(make([]int, 0, m.KeyLen()))
}

// AppendKeyPositions appends one absolute position per key column to dst
// and returns the extended slice, so a backend that scores every step can
// reuse one buffer instead of allocating KeyPositions' slice.
func (m Mask) AppendKeyPositions(dst []int) []int {
	dst = slices.Grow(dst, m.KeyLen())
	for _, s := range m.Keys {
		for i := 0; i < s.Len; i++ {
			dst = append(dst, s.Start+i)
		}
	}
	return dst
}

// Allowed reports whether query position qpos may attend key position kpos.
func (m Mask) Allowed(qpos, kpos int) bool {
	return kpos <= qpos && (m.Window == 0 || qpos-kpos < m.Window)
}

// Dense materializes the mask as Rows x KeyLen booleans (row-major). Kernels
// need not call it; tests and simple backends do.
func (m Mask) Dense() []bool {
	keys := m.KeyPositions()
	out := make([]bool, m.Rows*len(keys))
	for q := 0; q < m.Rows; q++ {
		for k, kp := range keys {
			out[q*len(keys)+k] = m.Allowed(m.QueryStart+q, kp)
		}
	}
	return out
}
