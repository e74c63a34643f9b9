package engine

import (
	"sync/atomic"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/models"
	"mlxchat/tensor"
)

// greedyWatch wraps a model that takes greedy decoding's argmax itself
// (models.Greedy) and counts the calls of each forward kind.
type greedyWatch struct {
	models.Model
	forwards, argmaxes atomic.Int64
}

func (w *greedyWatch) Forward(c *kvcache.Cache, ids []int32, lastOnly bool) (*tensor.Tensor, error) {
	w.forwards.Add(1)
	return w.Model.Forward(c, ids, lastOnly)
}

func (w *greedyWatch) ForwardArgmax(c *kvcache.Cache, ids []int32) (int32, error) {
	w.argmaxes.Add(1)
	return w.Model.(models.Greedy).ForwardArgmax(c, ids)
}

// newGreedyTiny is newTiny with the model wrapped in greedyWatch.
func newGreedyTiny(t *testing.T, s Settings) (*Engine, *greedyWatch) {
	t.Helper()
	var w *greedyWatch
	e := startTiny(t, tinyModelDir(t), s, func(m models.Model) models.Model {
		w = &greedyWatch{Model: m}
		return w
	})
	return e, w
}

// TestGreedyDecode: at temperature 0 without a repetition penalty every
// decode step asks the model for its argmax (models.Greedy) instead of the
// logits, and the answer is the one sampling the logits gives where it is
// greedy too (temperature 1 with top-k 1, which reads the logits); a
// repetition penalty needs the logits, so it reads them.
func TestGreedyDecode(t *testing.T) {
	conv := []Message{user("count to twenty")}
	base := Settings{MaxTokens: 24, NoLoopDetect: true}
	var answers []string
	for _, c := range []struct {
		name    string
		temp    float64
		topK    int
		penalty float64
		argmax  bool
	}{
		{"temperature 0", 0, 0, 0, true},
		{"temperature 0, penalty 1", 0, 0, 1, true},
		{"temperature 1, top-k 1", 1, 1, 0, false},
		{"temperature 0, penalty 1.3", 0, 0, 1.3, false},
	} {
		s := base
		s.Temperature, s.TopK, s.RepetitionPenalty = c.temp, c.topK, c.penalty
		if got := NewSampler(s).Greedy(); got != c.argmax {
			t.Errorf("%s: Sampler.Greedy() = %v, want %v", c.name, got, c.argmax)
		}
		e, w := newGreedyTiny(t, s)
		d := mustDone(t, await(t, e, e.Submit(Generate{Conversation: conv}), nil))
		if d.Tokens < 2 {
			t.Fatalf("%s: %d tokens", c.name, d.Tokens)
		}
		fw, am := w.forwards.Load(), w.argmaxes.Load()
		// The prompt is one chunk; each token is fed back with one forward
		// of either kind but the last one when max-tokens ends the answer
		// (a stop token is sampled after the last one).
		steps := int64(d.Tokens)
		if d.Reason == DoneMaxTokens {
			steps--
		}
		if c.argmax && (fw != 1 || am != steps) || !c.argmax && (am != 0 || fw != 1+steps) {
			t.Errorf("%s: %d tokens (%s) from %d Forward and %d ForwardArgmax calls", c.name, d.Tokens, d.Reason, fw, am)
		}
		if c.penalty <= 1 {
			answers = append(answers, d.Text)
		}
		t.Logf("%s: %d tokens (%s), %d Forward and %d ForwardArgmax calls", c.name, d.Tokens, d.Reason, fw, am)
	}
	for i, a := range answers[1:] {
		if a != answers[0] {
			t.Errorf("greedy answer %d: %q, want %q", i+1, a, answers[0])
		}
	}
}
