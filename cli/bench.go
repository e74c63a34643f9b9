package cli

import (
	"context"
	"fmt"

	"mlxchat/engine"
	"mlxchat/tensor/cpu"
)

// benchCmd prints prefill and decode speed for each --prompt-lens entry,
// then peak RSS, weight bytes and the decode roofline fraction.
func benchCmd(ctx context.Context, c *config, model string, io_ IO) error {
	b, closeModel, err := openBundle(ctx, c, model, io_.Stderr)
	if err != nil {
		return err
	}
	defer closeModel()
	info := b.Info
	fmt.Fprintf(io_.Stdout, "model %s (%s) · backend %s · %d threads · weights read per token %s\n",
		model, info.ModelType, info.Backend, c.threadCount(), humanBytes(info.WeightBytes))
	bw := cpu.MeasureReadBandwidth(c.bandwidthMB<<20, c.threadCount()) * 1e9
	fmt.Fprintf(io_.Stdout, "memory read bandwidth %.1f GB/s (measured)\n\n", bw/1e9)
	const row = "%8v %14v %10v %7v %13v %9v %11v\n"
	fmt.Fprintf(io_.Stdout, row, "prompt", "prefill tok/s", "prefill s", "decode", "decode tok/s", "roofline", "kv")
	s := c.settings()
	for _, n := range c.promptLens {
		r, err := engine.Bench(ctx, b, s, n, c.decode)
		if err != nil {
			return fmt.Errorf("prompt length %d: %w", n, err)
		}
		roof := 0.0
		if bw > 0 {
			roof = r.DecodeTokPerSec * float64(info.WeightBytes) / bw
		}
		fmt.Fprintf(io_.Stdout, row, r.PromptTokens, fmt.Sprintf("%.1f", r.PrefillTokPerSec),
			fmt.Sprintf("%.2f", r.PrefillTime.Seconds()), r.DecodeTokens, fmt.Sprintf("%.2f", r.DecodeTokPerSec),
			fmt.Sprintf("%.3f", roof), humanBytes(r.KVBytes))
	}
	fmt.Fprintf(io_.Stdout, "\npeak RSS %s\n", humanBytes(peakRSS()))
	return nil
}
