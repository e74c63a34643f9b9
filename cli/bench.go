package cli

import (
	"context"
	"fmt"

	"mlxchat/engine"
	"mlxchat/tensor/cpu"
)

// gpuBandwidth is implemented by GPU backends (metal/gpu.Backend).
type gpuBandwidth interface {
	MeasureBandwidth(bytes int) (float64, error)
}

// benchCmd prints prefill and decode speed for each --prompt-lens entry,
// then peak RSS, weight bytes and the decode roofline fraction. On a GPU
// backend the roofline is taken against the GPU's own memory bandwidth
// (a copy kernel's bytes read plus written per second), a short warm-up
// run uploads the weights before the first measured row, and each row is
// followed by the kernel launches and host syncs per decoded token.
func benchCmd(ctx context.Context, c *config, model string, io_ IO) error {
	b, closeModel, err := openBundle(ctx, c, model, io_.Stderr)
	if err != nil {
		return err
	}
	defer closeModel()
	info := b.Info
	fmt.Fprintf(io_.Stdout, "model %s (%s) · backend %s · %d threads · weights read per token %s\n",
		model, info.ModelType, info.Backend, c.threadCount(), humanBytes(info.WeightBytes))
	s := c.settings()
	var bw float64
	if g, ok := b.Backend.(gpuBandwidth); ok {
		var err error
		if bw, err = g.MeasureBandwidth(c.bandwidthMB << 20); err != nil {
			return fmt.Errorf("%s bandwidth probe: %w", info.Backend, err)
		}
		fmt.Fprintf(io_.Stdout, "GPU memory bandwidth %.1f GB/s (measured: copy kernel, bytes read + written)\n", bw/1e9)
		// The first forward pass uploads the weights and builds the
		// pipelines: keep that out of the first row.
		if _, err := engine.Bench(ctx, b, s, min(16, s.PrefillChunk), 2); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		fmt.Fprintln(io_.Stdout)
	} else {
		bw = cpu.MeasureReadBandwidth(c.bandwidthMB<<20, c.threadCount()) * 1e9
		fmt.Fprintf(io_.Stdout, "memory read bandwidth %.1f GB/s (measured)\n\n", bw/1e9)
	}
	const row = "%8v %14v %10v %7v %13v %9v %11v\n"
	fmt.Fprintf(io_.Stdout, row, "prompt", "prefill tok/s", "prefill s", "decode", "decode tok/s", "roofline", "kv")
	var counts []string
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
		if r.DecodeLaunches > 0 && r.DecodeTokens > 0 {
			counts = append(counts, fmt.Sprintf("prompt %d: dispatches per token %d (%d layers), syncs per token %.2f",
				n, r.DecodeLaunches/int64(r.DecodeTokens), info.Layers, float64(r.DecodeSyncs)/float64(r.DecodeTokens)))
		}
	}
	if len(counts) > 0 {
		fmt.Fprintln(io_.Stdout)
		for _, l := range counts {
			fmt.Fprintln(io_.Stdout, l)
		}
	}
	fmt.Fprintf(io_.Stdout, "\npeak RSS %s\n", humanBytes(peakRSS()))
	return nil
}
