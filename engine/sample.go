package engine

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"sort"
)

// Sampler picks the next token from a row of logits with the settings'
// repetition penalty, temperature, top-k, top-p and min-p, using its own
// seeded random generator (same seed, same logits -> same choices).
type Sampler struct {
	temp      float64
	topK      int
	topP      float64
	minP      float64
	penalty   float64
	rng       *rand.Rand
	buf       []float64
	idx       []int
	penalized map[int32]struct{}
}

// NewSampler returns a sampler for s (normalized first) seeded with s.Seed.
func NewSampler(s Settings) *Sampler {
	s = s.Normalize()
	return &Sampler{
		temp:      s.Temperature,
		topK:      s.TopK,
		topP:      s.TopP,
		minP:      s.MinP,
		penalty:   s.RepetitionPenalty,
		rng:       rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15)),
		penalized: map[int32]struct{}{},
	}
}

// Greedy reports whether Sample is the plain argmax of the logits
// (tensor.ArgmaxF32): temperature 0 and no repetition penalty. The decode
// loop then asks the model for that index (models.Greedy), which GPU
// backends take on the GPU instead of copying the logits to the host.
func (s *Sampler) Greedy() bool {
	return s.temp == 0 && !(s.penalty > 0 && s.penalty != 1)
}

// Sample chooses a token id from logits (one per vocabulary entry). recent
// holds the tokens the repetition penalty applies to (already cut to the
// window by the caller). logits is not modified.
func (s *Sampler) Sample(logits []float32, recent []int32) int32 {
	n := len(logits)
	if cap(s.buf) < n {
		s.buf = make([]float64, n)
	}
	x := s.buf[:n]
	for i, v := range logits {
		x[i] = float64(v)
	}
	if s.penalty > 0 && s.penalty != 1 {
		clear(s.penalized)
		for _, t := range recent {
			if t < 0 || int(t) >= n {
				continue
			}
			if _, done := s.penalized[t]; done {
				continue
			}
			s.penalized[t] = struct{}{}
			if x[t] > 0 {
				x[t] /= s.penalty
			} else {
				x[t] *= s.penalty
			}
		}
	}
	if s.temp == 0 {
		return int32(argmax(x))
	}
	// Softmax at temperature, left unnormalized: the filters and the draw
	// compare against the sum instead of dividing every entry by it.
	maxv := x[argmax(x)]
	inv := 1 / s.temp
	sum := 0.0
	for i, v := range x {
		e := expNeg((v - maxv) * inv)
		if math.IsNaN(e) {
			e = 0
		}
		x[i] = e
		sum += e
	}
	if sum <= 0 || math.IsInf(sum, 0) || math.IsNaN(sum) {
		return int32(argmax(logitsF64(logits)))
	}
	cand := s.candidates(x, sum)
	// Draw from the surviving candidates, renormalized.
	total := 0.0
	for _, i := range cand {
		total += x[i]
	}
	r := s.rng.Float64() * total
	for _, i := range cand {
		r -= x[i]
		if r < 0 {
			return int32(i)
		}
	}
	return int32(cand[len(cand)-1])
}

// candidates returns the ids that survive top-k, top-p and min-p, most
// probable first. With no filter every id survives (in id order). p holds
// the softmax weights, which sum to total.
func (s *Sampler) candidates(p []float64, total float64) []int {
	n := len(p)
	k := n
	if s.topK > 0 && s.topK < n {
		k = s.topK
	}
	usesP := s.topP > 0 && s.topP < 1
	if k == n && !usesP && s.minP <= 0 {
		if cap(s.idx) < n {
			s.idx = make([]int, n)
		}
		all := s.idx[:n]
		for i := range all {
			all[i] = i
		}
		return all
	}
	// Top-p and min-p only ever keep a prefix of the sorted order, so sort
	// a growing top slice until it covers what the filters need.
	var sorted []int
	for want := min(k, 256); ; want = min(k, want*8) {
		sorted = topIndices(p, want)
		if want == k || !s.needsMore(p, sorted, total) {
			break
		}
	}
	keep := len(sorted)
	if s.minP > 0 {
		floor := s.minP * p[sorted[0]]
		for i, id := range sorted {
			if p[id] < floor {
				keep = i
				break
			}
		}
	}
	if usesP {
		cum, mass := 0.0, s.topP*total
		for i, id := range sorted[:keep] {
			cum += p[id]
			if cum >= mass {
				keep = i + 1
				break
			}
		}
	}
	if keep < 1 {
		keep = 1
	}
	return sorted[:keep]
}

// needsMore reports whether a sorted top slice may cut off tokens top-p or
// min-p would keep: the slice does not reach the top-p mass, or its last
// token is still above the min-p floor.
func (s *Sampler) needsMore(p []float64, sorted []int, total float64) bool {
	if len(sorted) == len(p) {
		return false
	}
	last := p[sorted[len(sorted)-1]]
	if s.minP > 0 && last >= s.minP*p[sorted[0]] {
		return true
	}
	if s.topP > 0 && s.topP < 1 {
		cum := 0.0
		for _, id := range sorted {
			cum += p[id]
		}
		return cum < s.topP*total
	}
	// Only min-p (already satisfied) or top-k (want == k) remain.
	return s.minP <= 0
}

func logitsF64(l []float32) []float64 {
	out := make([]float64, len(l))
	for i, v := range l {
		out[i] = float64(v)
	}
	return out
}

// argmax returns the index of the largest value (the first on ties); NaN
// values never win.
func argmax(x []float64) int {
	best := 0
	bv := math.Inf(-1)
	for i, v := range x {
		if v > bv {
			best, bv = i, v
		}
	}
	return best
}

// topIndices returns the indices of the k largest values of p, largest
// first (ties by lower index).
func topIndices(p []float64, k int) []int {
	if k >= len(p) {
		idx := make([]int, len(p))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] > p[idx[b]] })
		return idx
	}
	h := &minHeap{p: p, ids: make([]int, 0, k)}
	for i := range p {
		if len(h.ids) < k {
			heap.Push(h, i)
		} else if h.less(h.ids[0], i) {
			h.ids[0] = i
			heap.Fix(h, 0)
		}
	}
	out := h.ids
	sort.Slice(out, func(a, b int) bool {
		if p[out[a]] != p[out[b]] {
			return p[out[a]] > p[out[b]]
		}
		return out[a] < out[b]
	})
	return out
}

// minHeap keeps the k best indices with the worst at the root.
type minHeap struct {
	p   []float64
	ids []int
}

// less orders a before b when a is worse (lower value, or equal value and
// higher index).
func (h *minHeap) less(a, b int) bool {
	if h.p[a] != h.p[b] {
		return h.p[a] < h.p[b]
	}
	return a > b
}
func (h *minHeap) Len() int           { return len(h.ids) }
func (h *minHeap) Less(i, j int) bool { return h.less(h.ids[i], h.ids[j]) }
func (h *minHeap) Swap(i, j int)      { h.ids[i], h.ids[j] = h.ids[j], h.ids[i] }
func (h *minHeap) Push(x any)         { h.ids = append(h.ids, x.(int)) }
func (h *minHeap) Pop() any {
	v := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return v
}
