package cli

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"mlxchat/bytesize"
	"mlxchat/engine"
	"mlxchat/metal/gpu"
	"mlxchat/tensor/cpu"
)

// gpuBandwidth is implemented by GPU backends (metal/gpu.Backend).
type gpuBandwidth interface {
	MeasureBandwidth(bytes int) (float64, error)
}

// gpuProfiler is implemented by GPU backends that time their kernels
// with GPU timestamps (metal/gpu.Backend on Vulkan).
type gpuProfiler interface {
	StartProfile(t gpu.Timing) error
	StopProfile() (gpu.Profile, error)
}

// benchCmd prints prefill and decode speed for each --prompt-lens entry,
// then peak RSS, weight bytes and the decode roofline fraction: the bytes
// a decode step must read (the weights it uses and the live keys and
// values, engine.BenchResult.DecodeKVBytes) per second of decode, as a
// fraction of the memory bandwidth. On the CPU that is the host's read
// bandwidth over the same stretch of time: one pass of a read probe after
// each decode step (outside the decode's timing), their bytes over their
// seconds. Beside it the row prints the peak: the mean of the best of six
// passes just before and just after the decode, the host at its least
// busy, and the roofline against that. On a GPU backend it is the GPU's
// own memory bandwidth (a copy kernel's bytes read plus written per
// second), a short warm-up run uploads the weights before the first
// measured row, and each row is followed by the kernel launches and host
// syncs per decoded token.
func benchCmd(ctx context.Context, c *config, model string, io_ IO) error {
	b, closeModel, err := openBundle(ctx, c, model, io_.Stderr)
	if err != nil {
		return err
	}
	defer closeModel()
	info := b.Info
	prof, profOK := b.Backend.(gpuProfiler)
	if c.profile && !profOK {
		return fmt.Errorf("--profile: backend %s does not time kernels on the GPU (use --backend vulkan)", info.Backend)
	}
	fmt.Fprintf(io_.Stdout, "model %s (%s) · backend %s · %d threads · weights read per token %s\n",
		model, info.ModelType, info.Backend, c.threadCount(), bytesize.Format(info.WeightBytes))
	s := c.settings()
	var bw float64
	g, onGPU := b.Backend.(gpuBandwidth)
	if onGPU {
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
		fmt.Fprintf(io_.Stdout, "memory read bandwidth measured during each row's decode (read GB/s: a probe pass after each step; peak GB/s: the best of six passes just before and just after the decode, their mean)\n\n")
	}
	// On the CPU the host's read bandwidth is probed during each row's
	// decode rather than once at the start: a long prompt's decode begins
	// minutes later, and a shared machine's bandwidth moves by a fifth
	// within seconds, so a best pass taken apart from the decode is not
	// the bandwidth the decode had. The probes of a row share one buffer,
	// handed back to the OS after the row; the peak RSS reported leaves it
	// out where Linux lets the high-water mark restart.
	var peak int64
	const row = "%8v %14v %10v %7v %13v %9v %11v %9v %9v %9v\n"
	fmt.Fprintf(io_.Stdout, row, "prompt", "prefill tok/s", "prefill s", "decode", "decode tok/s", "roofline", "kv", "read GB/s", "peak GB/s", "peak roof")
	var counts []string
	for _, n := range c.promptLens {
		var probe *cpu.ReadProbe
		var best, passSecs float64
		var passBytes int
		var hooks engine.BenchHooks
		if !onGPU {
			hooks.BeforeDecode = func() {
				peak = max(peak, vmHWM())
				probe = cpu.NewReadProbe(c.bandwidthMB << 20)
				best = probe.Measure(c.threadCount()) * 1e9
			}
			hooks.AfterStep = func() {
				n, secs := probe.Pass(c.threadCount())
				passBytes += n
				passSecs += secs
			}
		}
		r, err := engine.BenchWith(ctx, b, s, n, c.decode, hooks)
		if err != nil {
			return fmt.Errorf("prompt length %d: %w", n, err)
		}
		peakBW := 0.0
		if !onGPU {
			peakBW = (best + probe.Measure(c.threadCount())*1e9) / 2
			bw = peakBW
			if passSecs > 0 {
				bw = float64(passBytes) / passSecs
			}
			probe = nil
			debug.FreeOSMemory()
			resetHWM()
		}
		read := r.DecodeTokPerSec * float64(info.WeightBytes+r.DecodeKVBytes)
		roof, peakGBs, peakRoof := 0.0, "-", "-"
		if bw > 0 {
			roof = read / bw
		}
		if peakBW > 0 {
			peakGBs, peakRoof = fmt.Sprintf("%.1f", peakBW/1e9), fmt.Sprintf("%.3f", read/peakBW)
		}
		fmt.Fprintf(io_.Stdout, row, r.PromptTokens, fmt.Sprintf("%.1f", r.PrefillTokPerSec),
			fmt.Sprintf("%.2f", r.PrefillTime.Seconds()), r.DecodeTokens, fmt.Sprintf("%.2f", r.DecodeTokPerSec),
			fmt.Sprintf("%.3f", roof), bytesize.Format(r.KVBytes), fmt.Sprintf("%.1f", bw/1e9), peakGBs, peakRoof)
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
	if c.profile {
		if err := benchProfile(ctx, b, s, prof, c.promptLens[0], c.decode, io_.Stdout); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
	}
	peak = max(peak, vmHWM()) // on a GPU the whole run's mark: nothing restarted it
	fmt.Fprintf(io_.Stdout, "\npeak RSS %s\n", bytesize.Format(peak))
	return nil
}

// benchProfile decodes twice more after a prompt of n tokens: once with
// only each step's start and end timed on the GPU (launches overlap as
// usual), then with every launch timed, and prints the decode step's GPU
// time beside its host time and the per-kernel breakdown.
func benchProfile(ctx context.Context, b *engine.Bundle, s engine.Settings, prof gpuProfiler, n, decode int, w io.Writer) error {
	run := func(t gpu.Timing) (engine.BenchResult, gpu.Profile, error) {
		if err := prof.StartProfile(t); err != nil {
			return engine.BenchResult{}, gpu.Profile{}, err
		}
		r, err := engine.Bench(ctx, b, s, n, decode)
		p, perr := prof.StopProfile()
		if err == nil {
			err = perr
		}
		return r, p, err
	}
	rs, ps, err := run(gpu.TimingSpan)
	if err != nil {
		return err
	}
	_, pl, err := run(gpu.TimingLaunches)
	if err != nil {
		return err
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Nanoseconds())/1e6) }
	perTok := time.Duration(0)
	if rs.DecodeTokens > 0 {
		perTok = rs.DecodeTime / time.Duration(rs.DecodeTokens)
	}
	fmt.Fprintf(w, "\nGPU profile of the decode step after a %d-token prompt (%d steps timed, %d launches, %d barriers):\n", n, ps.Runs, ps.Launches, ps.Barriers)
	fmt.Fprintf(w, "  per token: %s in all, %s in Sync (submit, GPU, read-back), GPU %s start to end\n", ms(perTok), ms(ps.Step), ms(ps.GPU))
	fmt.Fprintf(w, "  every launch timed (timestamps serialize launches): GPU %s per token\n", ms(pl.GPU))
	const row = "  %-24s %9s %11s %10s %7s\n"
	fmt.Fprintf(w, row, "kernel", "launches", "us/token", "us/launch", "share")
	for _, k := range pl.Kernels {
		us := float64(k.Time.Nanoseconds()) / 1e3
		share := 0.0
		if pl.GPU > 0 {
			share = 100 * float64(k.Time) / float64(pl.GPU)
		}
		fmt.Fprintf(w, row, k.Name, fmt.Sprint(k.Launches), fmt.Sprintf("%.1f", us), fmt.Sprintf("%.2f", us/float64(k.Launches)), fmt.Sprintf("%.1f%%", share))
	}
	return nil
}
