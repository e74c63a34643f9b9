package engine

import "strings"

// stopMatcher holds back streamed text that may be the start of a stop
// string, so a stop string split across tokens is never shown. Text it
// releases never ends with a proper prefix of a stop string, so a match can
// only start inside the held-back part.
type stopMatcher struct {
	stops   []string
	pending string
}

// add appends text and returns what can be shown now. When a stop string
// appears, it returns the text before it and stopped = true; the stop string
// and anything after it are discarded.
func (m *stopMatcher) add(text string) (out string, stopped bool) {
	m.pending += text
	if len(m.stops) == 0 {
		out, m.pending = m.pending, ""
		return out, false
	}
	first := -1
	for _, s := range m.stops {
		if i := strings.Index(m.pending, s); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first >= 0 {
		out = m.pending[:first]
		m.pending = ""
		return out, true
	}
	hold := 0
	for _, s := range m.stops {
		// Longest suffix of pending that is a proper prefix of s.
		for l := min(len(s)-1, len(m.pending)); l > hold; l-- {
			if strings.HasSuffix(m.pending, s[:l]) {
				hold = l
				break
			}
		}
	}
	cut := len(m.pending) - hold
	out = m.pending[:cut]
	m.pending = m.pending[cut:]
	return out, false
}

// flush releases the held-back text (the answer ended for another reason,
// so it was not a stop string after all).
func (m *stopMatcher) flush() string {
	out := m.pending
	m.pending = ""
	return out
}

// loopDetector ends degenerate generation: it fires when the generated
// tokens end with a block of period p (1 <= p <= maxPeriod) repeated so that
// the periodic tail covers at least max(minRepeats*p, minSpan) tokens.
// Updating costs O(maxPeriod) per token.
type loopDetector struct {
	maxPeriod  int
	minRepeats int
	minSpan    int
	toks       []int32
	run        []int // run[p]: trailing count of i with toks[i] == toks[i-p]
}

// Loop detector defaults: a phrase of up to 64 tokens repeated 4 times, or a
// 1- or 2-token pattern over 32 tokens.
const (
	loopMaxPeriod  = 64
	loopMinRepeats = 4
	loopMinSpan    = 32
)

func newLoopDetector() *loopDetector {
	return &loopDetector{
		maxPeriod:  loopMaxPeriod,
		minRepeats: loopMinRepeats,
		minSpan:    loopMinSpan,
		run:        make([]int, loopMaxPeriod+1),
	}
}

// add records a generated token and reports whether the tail is now a loop.
func (d *loopDetector) add(tok int32) bool {
	d.toks = append(d.toks, tok)
	n := len(d.toks)
	fired := false
	for p := 1; p <= d.maxPeriod; p++ {
		if n-1-p < 0 {
			break
		}
		if d.toks[n-1] == d.toks[n-1-p] {
			d.run[p]++
		} else {
			d.run[p] = 0
		}
		span := d.run[p] + p
		if d.run[p] > 0 && span >= max(d.minRepeats*p, d.minSpan) {
			fired = true
		}
	}
	return fired
}
