//go:build linux

package mtlfake_test

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/kvcache"
	"mlxchat/metal/gpu"
	"mlxchat/metal/mtl"
	"mlxchat/metal/mtlfake"
	"mlxchat/models"
	"mlxchat/models/synth"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// device returns a fake Metal device; without a Vulkan driver the test
// skips, except under CI=true where it fails.
func device(t *testing.T, opts mtlfake.Options) *mtlfake.Device {
	t.Helper()
	d, err := mtlfake.New(opts)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("fake Metal device under CI=true: %v", err)
		}
		t.Skipf("no Vulkan device for the fake Metal device: %v", err)
	}
	return d
}

// host opens the Metal host path on a fake device: the driver of
// metal/mtl under gpu.Backend. Cleanup closes it and fails the test on
// any contract violation the fake saw.
func host(t *testing.T, opts mtlfake.Options) (*gpu.Backend, *mtlfake.Device) {
	b, dev, _ := hostCounting(t, opts)
	return b, dev
}

// weightCounter is the Metal driver, counting the weight heap buffers
// Backend asks for.
type weightCounter struct {
	*mtl.Driver
	buffers int
}

func (w *weightCounter) NewWeightBuffer(size int64) (gpu.Buf, error) {
	w.buffers++
	return w.Driver.NewWeightBuffer(size)
}

// hostCounting is host, with the driver's weight buffers counted.
func hostCounting(t *testing.T, opts mtlfake.Options) (*gpu.Backend, *mtlfake.Device, *weightCounter) {
	t.Helper()
	dev := device(t, opts)
	drv, err := mtl.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	wc := &weightCounter{Driver: drv}
	b := gpu.New(wc)
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		for _, v := range dev.Violations() {
			t.Errorf("Metal contract violation: %s", v)
		}
	})
	return b, dev, wc
}

// TestOpenChecksDevice: Open compiles every pipeline and refuses, with
// an error naming the reason, a device without the Apple7 family, a
// kernel that does not compile, a pipeline whose threadgroup maximum is
// below a kernel's size and threadgroup memory below a kernel's arrays.
func TestOpenChecksDevice(t *testing.T) {
	cases := []struct {
		name string
		opts mtlfake.Options
		want string
	}{
		{"no Apple7", mtlfake.Options{Families: []mtl.GPUFamily{mtl.FamilyMac2}}, "not an Apple7-family GPU"},
		{"compile error", mtlfake.Options{FailCompile: "attn"}, "compiling kernel attn: program_source"},
		{"small threadgroups", mtlfake.Options{MaxThreads: 128}, "needs 256 threads per threadgroup, its pipeline allows 128"},
		{"little threadgroup memory", mtlfake.Options{ThreadgroupMemory: 4096}, "threadgroup memory"},
		{"small buffers", mtlfake.Options{MaxBufferLength: 1 << 20}, "maxBufferLength"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dev := device(t, c.opts)
			d, err := mtl.Open(dev)
			if err == nil {
				d.Close()
				t.Fatalf("Open succeeded, want an error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "metal: Fake Apple M1: ") {
				t.Errorf("Open: %v, want an error containing %q", err, c.want)
			}
			if v := dev.Violations(); len(v) > 0 {
				t.Errorf("violations: %v", v)
			}
		})
	}
	dev := device(t, mtlfake.Options{})
	d, err := mtl.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if v := dev.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

// turn feeds ids in chunks of chunk tokens, then decodes n tokens greedily
// from the CPU model's logits, into both models in lockstep, and compares
// every step's logits.
func turn(t *testing.T, onCPU, onGPU models.Model, cc, gc *kvcache.Cache, ids []int32, chunk, n int) {
	t.Helper()
	step := func(ids []int32) []float32 {
		lc, err := onCPU.Forward(cc, ids, true)
		if err != nil {
			t.Fatal(err)
		}
		lg, err := onGPU.Forward(gc, ids, true)
		if err != nil {
			t.Fatal(err)
		}
		want := lc.F32()
		got := lg.F32()
		scale := 0.0
		for _, v := range want {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		worst := 0.0
		for i := range want {
			d := math.Abs(float64(got[i]) - float64(want[i]))
			if math.IsNaN(float64(got[i])) || d > 1e-2*scale {
				t.Fatalf("offset %d: logit %d = %v, cpu %v", cc.Offset(), i, got[i], want[i])
			}
			worst = math.Max(worst, d)
		}
		return append([]float32(nil), want...)
	}
	var last []float32
	for i := 0; i < len(ids); i += chunk {
		last = step(ids[i:min(i+chunk, len(ids))])
	}
	for range n {
		best := 0
		for i, v := range last {
			if v > last[best] {
				best = i
			}
		}
		last = step([]int32{int32(best)})
	}
	if cc.Offset() != gc.Offset() || cc.Live() != gc.Live() {
		t.Fatalf("caches differ: offset %d/%d, live %d/%d", cc.Offset(), gc.Offset(), cc.Live(), gc.Live())
	}
}

// TestTinyGemma3nMetalHost runs the whole Metal host path on the fake
// device (every call checked against Apple's contracts, every dispatch
// run as its SPIR-V twin on lavapipe) with the tiny Gemma 3n: load,
// chunked prefill past the sliding window and past max-kv-size (trims),
// decode, rewind, a second turn; every step's logits match tensor/cpu.
// Every step runs from a recorded plan as one command buffer with one
// concurrent encoder and one wait; the fake runs each command buffer a
// second time with the dispatches between barriers reversed and finds
// the same bytes, so the barriers Backend placed suffice. Weight and
// parameter buffers are untracked, activations tracked.
// The weights stay in the mapped checkpoint: one no-copy buffer per file,
// nothing copied but the small tensors the model computes, so resident
// memory stays near the file size; closing the model releases those
// buffers before the file is unmapped.
func TestTinyGemma3nMetalHost(t *testing.T) {
	g, dev, weights := hostCounting(t, mtlfake.Options{})
	dir := t.TempDir()
	if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4, Seed: 21}); err != nil {
		t.Fatal(err)
	}
	c := cpu.New(2)
	defer c.Close()
	load := func(be tensor.Backend) models.Model {
		m, err := models.Load(dir, be)
		if err != nil {
			t.Fatalf("%s: %v", be.Name(), err)
		}
		return m
	}
	mc, mg := load(c), load(g)
	defer mc.(io.Closer).Close()
	st0, gs0 := dev.Stats(), g.Stats()

	opts := kvcache.DefaultOptions()
	opts.MaxKV, opts.Sink, opts.Step = 32, 4, 8
	cc, err := mc.NewCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := mg.NewCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	vocab := mc.Config().VocabSize
	prompt := make([]int32, 26)
	for i := range prompt {
		prompt[i] = int32((i*41 + 3) % vocab)
	}
	turn(t, mc, mg, cc, gc, prompt, 10, 6)
	back := min(3, cc.MaxRewind())
	if back == 0 || back != gc.MaxRewind() && gc.MaxRewind() < back {
		t.Fatalf("rewind reach cpu %d, metal %d", cc.MaxRewind(), gc.MaxRewind())
	}
	if err := cc.Rewind(back); err != nil {
		t.Fatal(err)
	}
	if err := gc.Rewind(back); err != nil {
		t.Fatal(err)
	}
	second := make([]int32, 12)
	for i := range second {
		second[i] = int32((i*67 + 11) % vocab)
	}
	turn(t, mc, mg, cc, gc, second, 5, 5)
	if cc.Stats().Trimmed == 0 || cc.Stats().Trimmed != gc.Stats().Trimmed {
		t.Errorf("trimmed %d (cpu) / %d (metal): want equal and a trim", cc.Stats().Trimmed, gc.Stats().Trimmed)
	}

	st := dev.Stats()
	var fileBytes int64
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		fileBytes += fi.Size()
	}
	page := int64(os.Getpagesize())
	t.Logf("fake Metal: %d dispatches in %d command buffers; %d no-copy buffers over %d bytes (files %d bytes); %d bytes copied, %d allocated, %d live",
		st.Dispatches, st.CommandBuffers, st.NoCopyBuffers, st.NoCopyBytes, fileBytes, st.CopiedBytes, st.AllocatedBytes, st.LiveBytes)
	if st.NoCopyBuffers != len(files) || st.NoCopyBytes < fileBytes || st.NoCopyBytes > fileBytes+int64(len(files))*page {
		t.Errorf("%d no-copy buffers over %d bytes, want one per file (%d) over the %d file bytes", st.NoCopyBuffers, st.NoCopyBytes, len(files), fileBytes)
	}
	// Weights copied: only what the model computes at load (AltUp scales,
	// RoPE tables), never a checkpoint tensor.
	if st.CopiedBytes > fileBytes/20 {
		t.Errorf("%d weight bytes copied into Metal buffers (file %d bytes): weights should bind in place", st.CopiedBytes, fileBytes)
	}
	if st.CommandBuffers <= st0.CommandBuffers {
		t.Error("no command buffer ran")
	}
	gs := g.Stats()
	t.Logf("backend: %+v", gs)
	t.Logf("fake Metal: %d barriers, %d groups of concurrent dispatches, %d command buffers compared in both orders", st.Barriers, st.Groups, st.Compared)
	// A step runs as segments (gpu's early submits), each a plan in a
	// command buffer of its own, all waited for at the step's one Flush.
	steps := int(gs.Flushes - gs0.Flushes)
	segs := int(gs.Flushes - gs0.Flushes + gs.EarlySubmits - gs0.EarlySubmits)
	cbs, waits := st.CommandBuffers-st0.CommandBuffers, st.Waits-st0.Waits
	if cbs != segs || waits != segs || st.ConcurrentEncoders-st0.ConcurrentEncoders != segs || segs <= steps {
		t.Errorf("%d steps of %d segments ran as %d command buffers, %d concurrent encoders, %d waits: want one command buffer, encoder and wait per segment, and steps of several segments", steps, segs, cbs, st.ConcurrentEncoders-st0.ConcurrentEncoders, waits)
	}
	if gs.PlanRuns == 0 || gs.PlanRecords == 0 || gs.PlanRuns+gs.PlanRecords != gs.Flushes+gs.EarlySubmits {
		t.Errorf("%d plan records and %d replays for %d steps of %d segments: want every segment from a plan, most replayed", gs.PlanRecords, gs.PlanRuns, gs.Flushes, gs.Flushes+gs.EarlySubmits)
	}
	if st.Barriers == 0 || st.Groups == 0 || int64(st.Barriers+st.ConcurrentEncoders) >= gs.Dispatches {
		t.Errorf("%d barriers and %d groups of concurrent dispatches in %d dispatches: want barriers only between dependent launches", st.Barriers, st.Groups, gs.Dispatches)
	}
	if st.Compared != st.CommandBuffers {
		t.Errorf("%d of %d command buffers compared in both orders", st.Compared, st.CommandBuffers)
	}
	if st.UntrackedNoCopy != st.NoCopyBuffers || st.UntrackedCopied != st.CopiedBuffers || weights.buffers == 0 {
		t.Errorf("untracked: %d of %d no-copy weight buffers, %d of %d copied weight buffers (%d weight heap buffers): want all", st.UntrackedNoCopy, st.NoCopyBuffers, st.UntrackedCopied, st.CopiedBuffers, weights.buffers)
	}
	if int64(st.UntrackedShared) != gs.PlanRecords+int64(weights.buffers) || st.SharedBuffers <= st.UntrackedShared {
		t.Errorf("%d of %d shared buffers untracked, %d plans recorded, %d weight heap buffers: want exactly the plans' parameter buffers and the weight heap untracked, activations tracked", st.UntrackedShared, st.SharedBuffers, gs.PlanRecords, weights.buffers)
	}
	if err := mg.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	if n := dev.Stats().NoCopyBuffers; n != st.NoCopyBuffers {
		t.Errorf("closing the model made %d more no-copy buffers", n-st.NoCopyBuffers)
	}
	if v := dev.Violations(); len(v) > 0 {
		t.Fatalf("violations: %v", v)
	}
}

// barrierDropper is the Metal driver with one of the barriers Backend asks
// for removed from the first plan it records (a step's first segment):
// the bug the fake must catch.
type barrierDropper struct {
	*mtl.Driver
	which   float64 // the barrier dropped, as a fraction of the plan's barriers
	dropped []int   // the launch that lost its barrier
}

func (d *barrierDropper) NewPlan(launches []gpu.Launch, paramBytes int) (gpu.Plan, []byte, error) {
	l := append([]gpu.Launch(nil), launches...)
	var at []int
	for i := 1; i < len(l); i++ {
		if l[i].Barrier {
			at = append(at, i)
		}
	}
	if len(at) > 0 && len(d.dropped) == 0 {
		i := at[int(d.which*float64(len(at)-1))]
		l[i].Barrier = false
		d.dropped = append(d.dropped, i)
	}
	return d.Driver.NewPlan(l, paramBytes)
}

// TestFakeCatchesMissingBarrier: with one barrier of a plan removed (the
// middle one, the last one, of the step's first segment), the fake reports the missing barrier and
// names the launch that needed it (CompareOrders), or, running each
// barrier group reversed, the logits stop matching tensor/cpu (Reverse).
func TestFakeCatchesMissingBarrier(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	c := cpu.New(1)
	defer c.Close()
	mc, err := models.Load(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	defer mc.(io.Closer).Close()
	ids := []int32{2, 17, 33, 5, 81, 9}
	cc, err := mc.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	lc, err := mc.Forward(cc, ids, true)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), lc.F32()...)
	scale := 0.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for _, tc := range []struct {
		order mtlfake.Order
		which float64
	}{{mtlfake.CompareOrders, 0.5}, {mtlfake.CompareOrders, 1}, {mtlfake.Reverse, 0.5}} {
		order := tc.order
		t.Run(fmt.Sprintf("%s/%g", order, tc.which), func(t *testing.T) {
			// Small buffers (8 MiB heap chunks) keep the replay's copies cheap.
			dev := device(t, mtlfake.Options{Order: order, MaxBufferLength: 16 << 20})
			drv, err := mtl.Open(dev)
			if err != nil {
				t.Fatal(err)
			}
			bd := &barrierDropper{Driver: drv, which: tc.which}
			g := gpu.New(bd)
			mg, err := models.Load(dir, g)
			if err != nil {
				t.Fatal(err)
			}
			gc, err := mg.NewCache(kvcache.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			lg, err := mg.Forward(gc, ids, true)
			if err != nil {
				t.Fatal(err)
			}
			d := maxDiff(lg.F32(), want)
			mg.(io.Closer).Close()
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			if len(bd.dropped) == 0 {
				t.Fatal("no plan had a barrier to drop")
			}
			v := dev.Violations()
			t.Logf("barrier of launch %d dropped: logits max |Δ| %.3g from tensor/cpu; violations %q", bd.dropped[0], d, v)
			switch order {
			case mtlfake.CompareOrders:
				if d > 1e-2*scale {
					t.Errorf("logits max |Δ| %.3g: the fake should keep the recording order's results", d)
				}
				need := fmt.Sprintf("and dispatch %d (", bd.dropped[0])
				if len(v) != 1 || !strings.Contains(v[0], "missing memory barrier") || !strings.Contains(v[0], need) {
					t.Errorf("violations %q, want one missing memory barrier before dispatch %d", v, bd.dropped[0])
				}
			case mtlfake.Reverse:
				if d < 1e-2*scale || len(v) > 0 {
					t.Errorf("logits max |Δ| %.3g, violations %q: want the reversed group to give other logits, and no violation", d, v)
				}
			}
		})
	}
}

func maxDiff(a, b []float32) float64 {
	m := 0.0
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		m = math.Max(m, d)
	}
	return m
}
