package engine

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// logitsFor returns logits whose softmax is exactly probs.
func logitsFor(probs ...float64) []float32 {
	out := make([]float32, len(probs))
	for i, p := range probs {
		out[i] = float32(math.Log(p))
	}
	return out
}

// drawSet samples n times and returns the distinct ids drawn, sorted.
func drawSet(t *testing.T, s Settings, logits []float32, n int) []int32 {
	t.Helper()
	sm := NewSampler(s)
	seen := map[int32]bool{}
	for range n {
		seen[sm.Sample(logits, nil)] = true
	}
	var out []int32
	for id := range seen {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func TestSamplerFilters(t *testing.T) {
	probs := logitsFor(0.5, 0.3, 0.15, 0.05)
	tests := []struct {
		name string
		s    Settings
		want []int32
	}{
		{"greedy", Settings{}, []int32{0}},
		{"temperature only keeps all", Settings{Temperature: 1}, []int32{0, 1, 2, 3}},
		{"top-k 2", Settings{Temperature: 1, TopK: 2}, []int32{0, 1}},
		{"top-k 1 is greedy", Settings{Temperature: 5, TopK: 1}, []int32{0}},
		{"top-p 0.7", Settings{Temperature: 1, TopP: 0.7}, []int32{0, 1}},
		{"top-p 0.85", Settings{Temperature: 1, TopP: 0.85}, []int32{0, 1, 2}},
		{"top-p 0.4 keeps the top token", Settings{Temperature: 1, TopP: 0.4}, []int32{0}},
		{"min-p 0.5", Settings{Temperature: 1, MinP: 0.5}, []int32{0, 1}},
		{"min-p 0.2", Settings{Temperature: 1, MinP: 0.2}, []int32{0, 1, 2}},
		{"min-p and top-k intersect", Settings{Temperature: 1, MinP: 0.2, TopK: 2}, []int32{0, 1}},
		{"top-p and min-p intersect", Settings{Temperature: 1, MinP: 0.05, TopP: 0.7}, []int32{0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := drawSet(t, tc.s, probs, 2000)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("drawn ids %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSamplerSeedReproducible(t *testing.T) {
	logits := logitsFor(0.2, 0.2, 0.2, 0.2, 0.1, 0.1)
	run := func(seed uint64) []int32 {
		sm := NewSampler(Settings{Temperature: 1, Seed: seed})
		var out []int32
		for range 200 {
			out = append(out, sm.Sample(logits, nil))
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	if !slices.Equal(a, b) {
		t.Fatal("same seed gave different draws")
	}
	if slices.Equal(a, c) {
		t.Fatal("seeds 7 and 8 gave identical 200-draw sequences")
	}
}

func TestSamplerFrequencies(t *testing.T) {
	probs := []float64{0.6, 0.3, 0.1}
	sm := NewSampler(Settings{Temperature: 1, Seed: 1})
	const n = 20000
	counts := make([]int, len(probs))
	for range n {
		counts[sm.Sample(logitsFor(probs...), nil)]++
	}
	for i, p := range probs {
		got := float64(counts[i]) / n
		if math.Abs(got-p) > 0.02 {
			t.Errorf("token %d drawn %.3f of the time, want %.2f", i, got, p)
		}
	}
	// Temperature 0.5 sharpens: p_i^2 normalized.
	sm = NewSampler(Settings{Temperature: 0.5, Seed: 1})
	clear(counts)
	for range n {
		counts[sm.Sample(logitsFor(probs...), nil)]++
	}
	want0 := 0.36 / (0.36 + 0.09 + 0.01)
	if got := float64(counts[0]) / n; math.Abs(got-want0) > 0.02 {
		t.Errorf("temp 0.5: token 0 drawn %.3f, want %.3f", got, want0)
	}
}

func TestSamplerRepetitionPenalty(t *testing.T) {
	tests := []struct {
		name    string
		logits  []float32
		recent  []int32
		penalty float64
		want    int32
	}{
		{"positive logit divided", []float32{2.0, 1.9, -1}, []int32{0}, 1.5, 1},
		{"negative logit multiplied", []float32{-1, -1.2, -5}, []int32{0}, 1.5, 1},
		{"penalty 1 is off", []float32{2.0, 1.9, -1}, []int32{0}, 1, 0},
		{"repeats counted once", []float32{2.0, 1.2, -1}, []int32{0, 0, 0}, 1.5, 0},
		{"out-of-range ids ignored", []float32{2.0, 1.9}, []int32{-1, 9}, 1.5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sm := NewSampler(Settings{RepetitionPenalty: tc.penalty})
			orig := slices.Clone(tc.logits)
			if got := sm.Sample(tc.logits, tc.recent); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
			if !slices.Equal(orig, tc.logits) {
				t.Fatal("Sample modified the logits")
			}
		})
	}
}

// TestSamplerLargeVocab checks that top-p and min-p grow their sorted slice
// past the first 256 candidates when the distribution is flat.
func TestSamplerLargeVocab(t *testing.T) {
	const v = 5000
	probs := make([]float64, v)
	for i := range probs {
		probs[i] = 1.0 / v
	}
	probs[0] += 0.1
	sum := 0.0
	for _, p := range probs {
		sum += p
	}
	for i := range probs {
		probs[i] /= sum
	}
	tests := []struct {
		name     string
		s        Settings
		min, max int
	}{
		{"top-p 0.5", Settings{Temperature: 1, TopP: 0.5}, 2000, 2500},
		{"min-p 0.5 keeps only the boosted token", Settings{Temperature: 1, MinP: 0.5}, 1, 1},
		{"min-p 0.001 keeps all", Settings{Temperature: 1, MinP: 0.001}, v, v},
		{"top-k 1000", Settings{Temperature: 1, TopK: 1000}, 1000, 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sm := NewSampler(tc.s)
			got := len(sm.candidates(probs, 1))
			if got < tc.min || got > tc.max {
				t.Fatalf("%d candidates, want %d..%d", got, tc.min, tc.max)
			}
			// Unnormalized weights (what Sample hands over) with their
			// sum keep the same candidates.
			scaled := make([]float64, v)
			for i, p := range probs {
				scaled[i] = 7 * p
			}
			if n := len(sm.candidates(scaled, 7)); n != got {
				t.Fatalf("weights scaled by 7: %d candidates, normalized %d", n, got)
			}
		})
	}
}

func TestSamplerNaNLogits(t *testing.T) {
	nan := float32(math.NaN())
	for _, temp := range []float64{0, 1} {
		sm := NewSampler(Settings{Temperature: temp})
		got := sm.Sample([]float32{nan, 3, nan, 1}, nil)
		if got != 1 && temp == 0 {
			t.Fatalf("temp %v: got %d, want 1 (NaN never wins)", temp, got)
		}
		if got < 0 || got > 3 {
			t.Fatalf("temp %v: id %d out of range", temp, got)
		}
	}
}

func TestStopMatcherAcrossTokens(t *testing.T) {
	tests := []struct {
		name    string
		stops   []string
		pieces  []string
		emitted string // text released before the stop (or everything, flushed)
		stopped bool
	}{
		{"no stops passes through", nil, []string{"a", "b"}, "ab", false},
		{"stop split over three tokens", []string{"STOP"}, []string{"Hel", "lo S", "T", "OP tail"}, "Hello ", true},
		{"false start released", []string{"STOP"}, []string{"ST", "ART", " ok"}, "START ok", false},
		{"stop inside one token", []string{"</s>"}, []string{"ab</s>cd"}, "ab", true},
		{"earliest of two stops", []string{"yy", "x"}, []string{"ayy", "x"}, "a", true},
		{"held prefix flushed at end", []string{"\n\n"}, []string{"line\n"}, "line\n", false},
		{"unicode stop", []string{"ßend"}, []string{"weiß", "e", "nd"}, "wei", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &stopMatcher{stops: tc.stops}
			var got string
			stopped := false
			for _, p := range tc.pieces {
				out, st := m.add(p)
				got += out
				if st {
					stopped = true
					break
				}
			}
			if !stopped {
				got += m.flush()
			}
			if got != tc.emitted || stopped != tc.stopped {
				t.Fatalf("emitted %q stopped=%v, want %q stopped=%v", got, stopped, tc.emitted, tc.stopped)
			}
		})
	}
}

func TestStopMatcherHoldsBackPrefix(t *testing.T) {
	m := &stopMatcher{stops: []string{"<end>"}}
	if out, _ := m.add("abc<en"); out != "abc" {
		t.Fatalf("released %q, want %q (the possible stop start held back)", out, "abc")
	}
	if out, _ := m.add("joy"); out != "<enjoy" {
		t.Fatalf("released %q, want %q", out, "<enjoy")
	}
}

func TestLoopDetector(t *testing.T) {
	repeat := func(pattern []int32, times int) []int32 {
		var out []int32
		for range times {
			out = append(out, pattern...)
		}
		return out
	}
	varied := make([]int32, 2000)
	for i := range varied {
		varied[i] = int32((i*7919 + i*i*31) % 1013)
	}
	tests := []struct {
		name   string
		toks   []int32
		fireAt int // 1-based token at which it first fires; 0 = never
	}{
		{"single token 32 times", repeat([]int32{5}, 40), 32},
		{"two-token pattern", repeat([]int32{1, 2}, 30), 32},
		{"ten-token phrase four times", repeat([]int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5), 40},
		{"phrase three times is fine", append(repeat([]int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 3), 99), 0},
		{"varied text never fires", varied, 0},
		{"loop after prose", append(append([]int32(nil), varied[:100]...), repeat([]int32{3, 4, 5}, 20)...), 100 + 32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newLoopDetector()
			got := 0
			for i, tok := range tc.toks {
				if d.add(tok) {
					got = i + 1
					break
				}
			}
			if got != tc.fireAt {
				t.Fatalf("fired at token %d, want %d", got, tc.fireAt)
			}
		})
	}
}

func TestSettingsValidate(t *testing.T) {
	tests := []struct {
		name string
		s    Settings
		ok   bool
	}{
		{"defaults", DefaultSettings(), true},
		{"zero", Settings{}, true},
		{"negative max kv", Settings{MaxKV: -1}, false},
		{"max kv under twice the sink", Settings{MaxKV: 7}, false},
		{"max kv twice the sink", Settings{MaxKV: 8}, true},
		{"small sink", Settings{MaxKV: 4, SinkTokens: 2}, true},
		{"top-p over 1", Settings{TopP: 1.5}, false},
		{"min-p negative", Settings{MinP: -0.1}, false},
		{"temp NaN", Settings{Temperature: math.NaN()}, false},
		{"empty stop string", Settings{StopStrings: []string{""}}, false},
		{"negative chunk", Settings{PrefillChunk: -3}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// BenchmarkSample times one Sample over a Gemma-sized vocabulary (262144
// logits, normal with standard deviation 3) at temperature 0.7, alone and
// with each filter: the per-token cost sampling adds to decode.
func BenchmarkSample(b *testing.B) {
	logits := make([]float32, 262144)
	rng := rand.New(rand.NewSource(1))
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 3)
	}
	for _, tc := range []struct {
		name string
		s    Settings
	}{
		{"temp", Settings{Temperature: 0.7}},
		{"top-k 40", Settings{Temperature: 0.7, TopK: 40}},
		{"top-p 0.9", Settings{Temperature: 0.7, TopP: 0.9}},
		{"min-p 0.05", Settings{Temperature: 0.7, MinP: 0.05}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sm := NewSampler(tc.s)
			for b.Loop() {
				sm.Sample(logits, nil)
			}
		})
	}
}
