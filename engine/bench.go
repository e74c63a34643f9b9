package engine

import (
	"context"
	"fmt"
	"time"

	"mlxchat/tensor"
)

// BenchResult is one prompt length's measurement.
type BenchResult struct {
	PromptTokens     int           // prompt length prefilled
	PrefillTime      time.Duration // time to prefill it
	PrefillTokPerSec float64       // PromptTokens per second of PrefillTime
	DecodeTokens     int           // tokens decoded after the prompt
	DecodeTime       time.Duration // time to decode them
	DecodeTokPerSec  float64       // DecodeTokens per second of DecodeTime
	KVBytes          int64         // cache bytes at the end
	// DecodeKVBytes is what a decode step reads of the cache: the live
	// keys and values (CacheState.KVLiveBytes), the mean of the decode
	// phase's start and end. With the model's WeightBytes it is the
	// numerator of a decode roofline.
	DecodeKVBytes int64
	// DecodeLaunches and DecodeSyncs are the GPU kernel launches and the
	// host waits for the GPU over the decode phase (0 on backends that do
	// not count them, such as the CPU backend).
	DecodeLaunches, DecodeSyncs int64
}

// launchCounter is implemented by GPU backends (metal/gpu.Backend).
type launchCounter interface {
	LaunchCounts() (launches, syncs int64)
}

// Bench measures prefill of promptLen synthetic tokens in chunks of
// s.PrefillChunk (under s.MaxKV), then decodes decode tokens greedily with
// stop tokens ignored, on a fresh cache of the bundle's model: each step's
// token is the model's argmax (models.Greedy, taken on the GPU on GPU
// backends), as in a chat at temperature 0. The prompt
// ids are deterministic and spread over the vocabulary. It must not run
// while an Engine uses the same bundle.
func Bench(ctx context.Context, b *Bundle, s Settings, promptLen, decode int) (BenchResult, error) {
	return BenchWith(ctx, b, s, promptLen, decode, BenchHooks{})
}

// BenchHooks are calls BenchWith makes outside its timings, where a
// benchmark measures the memory bandwidth beside the decode it is compared
// with. Nil fields are skipped.
type BenchHooks struct {
	// BeforeDecode runs between the prefill and the decode phase.
	BeforeDecode func()
	// AfterStep runs after each decode step; DecodeTime leaves it out.
	AfterStep func()
}

// BenchWith is Bench with hooks h.
func BenchWith(ctx context.Context, b *Bundle, s Settings, promptLen, decode int, h BenchHooks) (BenchResult, error) {
	var r BenchResult
	if promptLen <= 0 || decode < 0 {
		return r, fmt.Errorf("bench: prompt length %d and decode count %d: want positive numbers", promptLen, decode)
	}
	if err := s.Validate(); err != nil {
		return r, err
	}
	s = s.Normalize()
	m, err := b.newLM()
	if err != nil {
		return r, err
	}
	if _, err := m.configure(s.cacheConfig(s.SinkTokens, b.Info.ContextLength)); err != nil {
		return r, err
	}
	err = safely(func() error {
		vocab := m.vocabSize()
		ids := make([]int32, promptLen)
		for i := range ids {
			ids[i] = int32((i*7919 + 11) % vocab)
		}
		chunk := s.PrefillChunk
		if mc := m.maxChunk(); chunk > mc {
			chunk = mc
		}
		var logits []float32
		t0 := time.Now()
		for at := 0; at < len(ids); at += chunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			part := ids[at:min(len(ids), at+chunk)]
			if logits, _, err = m.forward(part); err != nil {
				return fmt.Errorf("bench prefill at token %d: %w", at, err)
			}
		}
		r.PromptTokens = promptLen
		r.PrefillTime = time.Since(t0)
		r.PrefillTokPerSec = rate(promptLen, r.PrefillTime)
		if h.BeforeDecode != nil {
			h.BeforeDecode()
		}
		st0, _ := m.state()
		lc, counted := b.Backend.(launchCounter)
		var l0, s0 int64
		if counted {
			l0, s0 = lc.LaunchCounts()
		}
		tok := int32(tensor.ArgmaxF32(logits))
		for i := 0; i < decode; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			t0 = time.Now()
			if tok, _, err = m.forwardArgmax([]int32{tok}); err != nil {
				return fmt.Errorf("bench decode step %d: %w", i+1, err)
			}
			r.DecodeTime += time.Since(t0)
			r.DecodeTokens++
			if h.AfterStep != nil {
				h.AfterStep()
			}
		}
		r.DecodeTokPerSec = rate(r.DecodeTokens, r.DecodeTime)
		if counted {
			l1, s1 := lc.LaunchCounts()
			r.DecodeLaunches, r.DecodeSyncs = l1-l0, s1-s0
		}
		st1, kv := m.state()
		r.KVBytes, r.DecodeKVBytes = kv, (st0.KVLiveBytes+st1.KVLiveBytes)/2
		return nil
	})
	return r, err
}
