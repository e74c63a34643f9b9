package cpu

import (
	"math"
	"sync"

	"mlxchat/tensor"
)

// ropeTables keeps the cosines and sines of the last few (rotary table,
// positions) pairs RoPE has used. A forward pass rotates the queries and
// keys of every layer at the same positions with one or two tables (Gemma:
// local and global), so all but the first call of a step find theirs here
// instead of taking dims/2 sines and cosines per position again, which
// was most of RoPE's time in a decode step.
type ropeTables struct {
	mu      sync.Mutex
	entries [ropeEntries]ropeEntry
	next    int // the entry the next miss replaces
}

// ropeEntries is how many tables ropeTables keeps: two rotary tables, with
// room for a step's table beside the previous step's.
const ropeEntries = 4

// ropeEntry is the table of r at positions pos0..pos0+n-1: per position,
// dims/2 cosines then dims/2 sines. Holding r keeps its address from
// being reused by another table while the entry lives.
type ropeEntry struct {
	r       *tensor.Rotary
	pos0, n int
	cs      []float32
}

// get returns the table of r for positions pos0..pos0+n-1. A returned
// table is never written again (a miss builds a new slice), so callers may
// read it while other goroutines call get.
func (t *ropeTables) get(r *tensor.Rotary, pos0, n int) []float32 {
	half := r.Dims / 2
	t.mu.Lock()
	for _, e := range t.entries {
		if e.r == r && pos0 >= e.pos0 && pos0+n <= e.pos0+e.n {
			t.mu.Unlock()
			return e.cs[(pos0-e.pos0)*2*half : (pos0-e.pos0+n)*2*half]
		}
	}
	t.mu.Unlock()
	cs := ropeTable(r, pos0, n)
	t.mu.Lock()
	t.entries[t.next] = ropeEntry{r: r, pos0: pos0, n: n, cs: cs}
	t.next = (t.next + 1) % ropeEntries
	t.mu.Unlock()
	return cs
}

// ropeTable computes the cosines and sines of r at positions
// pos0..pos0+n-1: the angle of pair i at position p is float32(p)·f_i,
// rounded to float32, with its sine and cosine taken in float64.
func ropeTable(r *tensor.Rotary, pos0, n int) []float32 {
	half := r.Dims / 2
	invFreq := r.InvFreq.F32()
	cs := make([]float32, n*2*half)
	for t := range n {
		row := cs[t*2*half : (t+1)*2*half]
		p := float32(pos0 + t)
		for i, f := range invFreq {
			s, c := math.Sincos(float64(p * f))
			row[i], row[half+i] = float32(c), float32(s)
		}
	}
	return cs
}
