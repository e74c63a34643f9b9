//go:build linux

package vulkan

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"mlxchat/kvcache"
	"mlxchat/metal/gpu"
	"mlxchat/models"
	"mlxchat/models/synth"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// forward runs a prompt (prefill in two chunks) and decodes greedily,
// returning every step's last-row logits.
func forward(t testing.TB, m models.Model, prompt []int32, decode int) [][]float32 {
	t.Helper()
	c, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var out [][]float32
	half := len(prompt) / 2
	for _, chunk := range [][]int32{prompt[:half], prompt[half:]} {
		lg, err := m.Forward(c, chunk, true)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), lg.F32()...))
	}
	for range decode {
		last := out[len(out)-1]
		best := 0
		for i, v := range last {
			if v > last[best] {
				best = i
			}
		}
		lg, err := m.Forward(c, []int32{int32(best)}, true)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), lg.F32()...))
	}
	return out
}

// TestTinyGemma3n runs a whole tiny Gemma 3n (4-bit, with sliding and
// KV-shared layers) on the Vulkan backend and on tensor/cpu, and compares
// the logits of a chunked prefill and of greedy decode past the window.
func TestTinyGemma3n(t *testing.T) {
	g, _ := open(t)
	mc, mg := tinyModelPair(t, g, 3)
	st0 := g.Stats()
	prompt := make([]int32, 24)
	for i := range prompt {
		prompt[i] = int32((i*37 + 5) % mc.Config().VocabSize)
	}
	want := forward(t, mc, prompt, 12)
	got := forward(t, mg, prompt, 12)
	st := g.Stats()
	t.Logf("vulkan: %d dispatches, %d flushes, %d staged bytes, %d written back, %d weight bytes uploaded for 2 chunks + 12 tokens",
		st.Dispatches-st0.Dispatches, st.Flushes-st0.Flushes, st.StagedBytes-st0.StagedBytes, st.WritebackBytes-st0.WritebackBytes, st.WeightBytes-st0.WeightBytes)
	for s := range want {
		scale := 0.0
		for _, v := range want[s] {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		w := make([]float64, len(want[s]))
		for i, v := range want[s] {
			w[i] = float64(v)
		}
		// Prefill (the first two steps) agrees with tensor/cpu to 1e-4;
		// at decode tensor/cpu rounds activations to int16 per group, so
		// the two agree to ~1e-3 of the logits' range, not to float32
		// (TestTinyGemma3nFused and the golden fixtures check decode
		// tighter).
		near(t, "logits", got[s], w, 1e-2*scale, 0)
		if e := relL2(got[s], w); s < 2 && e > 1e-4 {
			t.Errorf("prefill chunk %d: relative L2 error %.3g against tensor/cpu, want <= 1e-4", s, e)
		}
		md := 0.0
		for i := range w {
			md = math.Max(md, math.Abs(float64(got[s][i])-w[i]))
		}
		t.Logf("step %d: relative L2 error %.3g, max |diff| / max |logit| %.3g", s, relL2(got[s], w), md/scale)
	}
}

// relL2 is ||got - want|| / ||want||.
func relL2(got []float32, want []float64) float64 {
	var d, n float64
	for i, w := range want {
		e := float64(got[i]) - w
		d += e * e
		n += w * w
	}
	return math.Sqrt(d / n)
}

// TestTinyGemma3nFused runs the tiny Gemma 3n on the Vulkan backend with
// launch fusion off and on: fusion merges a decode step into far fewer
// launches but must compute the same logits (summing in other orders only,
// so to ~1e-6 relative), and the fused decode steps must run from kept
// plans.
func TestTinyGemma3nFused(t *testing.T) {
	g, _ := open(t)
	_, mg := tinyModelPair(t, g, 11)
	prompt := make([]int32, 24)
	for i := range prompt {
		prompt[i] = int32((i*29 + 1) % mg.Config().VocabSize)
	}
	var logits [2][][]float32
	var launches [2]int64
	for i, on := range []bool{false, true} {
		g.SetFusion(on)
		st0 := g.Stats()
		logits[i] = forward(t, mg, prompt, 12)
		launches[i] = g.Stats().Dispatches - st0.Dispatches
	}
	g.SetFusionMode(gpu.DefaultFusion)
	for s := range logits[0] {
		w := make([]float64, len(logits[0][s]))
		for i, v := range logits[0][s] {
			w[i] = float64(v)
		}
		if e := relL2(logits[1][s], w); e > 1e-5 || math.IsNaN(e) {
			t.Errorf("step %d: fused logits differ from unfused by %.3g (relative L2), want <= 1e-5", s, e)
		}
	}
	if launches[1]*3 > launches[0] {
		t.Errorf("%d launches fused vs %d unfused: want at least 3x fewer", launches[1], launches[0])
	}
	t.Logf("2 prefill chunks + 12 decode steps: %d launches unfused, %d fused", launches[0], launches[1])
}

// TestTinyGemma3nRemote runs the tiny Gemma 3n with activations in host
// memory, the discrete-GPU layout: kernels bind device twins that are
// filled before first use and copied back at Sync, and steps run from
// kept plans. The logits must match tensor/cpu as in TestTinyGemma3n.
func TestTinyGemma3nRemote(t *testing.T) {
	open(t)
	t.Setenv("MLXCHAT_VULKAN_ACTIVATIONS", "host")
	g, d, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !d.ActivationsRemote() {
		t.Fatalf("activations %q: want remote", d.Info().Activations)
	}
	mc, mg := tinyModelPair(t, g, 7)
	prompt := make([]int32, 20)
	for i := range prompt {
		prompt[i] = int32((i*41 + 3) % mc.Config().VocabSize)
	}
	want := forward(t, mc, prompt, 10)
	got := forward(t, mg, prompt, 10)
	st := g.Stats()
	if st.TwinUploads == 0 || st.TwinReadback == 0 || st.PlanRuns == 0 {
		t.Errorf("stats %+v: want twin uploads, read-backs and plan runs", st)
	}
	for s := range want {
		scale := 0.0
		w := make([]float64, len(want[s]))
		for i, v := range want[s] {
			scale = math.Max(scale, math.Abs(float64(v)))
			w[i] = float64(v)
		}
		near(t, "logits", got[s], w, 1e-2*scale, 0)
	}
	t.Logf("twin uploads %d bytes, read back %d bytes, %d plan runs, %d plans recorded", st.TwinUploads, st.TwinReadback, st.PlanRuns, st.PlanRecords)
}

// TestTinyGemma3nReadback decodes the tiny Gemma 3n with activations in
// host memory and device twins, keeping every step's logits so each step
// allocates them anew: every decode step writes the same bytes, so every
// one must copy back as many (a replayed chain rewrite once also copied
// back the logits of the step it was kept from).
func TestTinyGemma3nReadback(t *testing.T) {
	open(t)
	t.Setenv("MLXCHAT_VULKAN_ACTIVATIONS", "host")
	g, d, err := Open()
	must(t, err)
	defer g.Close()
	if !d.ActivationsRemote() {
		t.Fatalf("activations %q: want remote", d.Info().Activations)
	}
	_, mg := tinyModelPair(t, g, 29)
	c, err := mg.NewCache(kvcache.DefaultOptions())
	must(t, err)
	lg, err := mg.Forward(c, []int32{5, 9, 13, 17, 21, 25, 29, 33}, true)
	must(t, err)
	kept := []*tensor.Tensor{lg}
	var back []int64
	for range 10 {
		st0 := g.Stats()
		lg, err = mg.Forward(c, []int32{int32(tensor.ArgmaxF32(lg.F32()))}, true)
		must(t, err)
		kept = append(kept, lg)
		back = append(back, g.Stats().TwinReadback-st0.TwinReadback)
	}
	for i, n := range back {
		if n != back[0] || n < int64(len(lg.Data)) {
			t.Fatalf("bytes copied back per decode step %v: want the same every step, at least the %d of the logits", back, len(lg.Data))
		}
		if i > 0 && &kept[i].Data[0] == &kept[i-1].Data[0] {
			t.Fatalf("decode steps %d and %d wrote their logits to the same memory", i-1, i)
		}
	}
	t.Logf("%d bytes copied back per decode step", back[0])
}

// TestTinyGemma3nEarlySubmit runs the tiny Gemma 3n (chunked prefill,
// then decode) with early submits off and on, with activations where the
// device puts them and in host memory with device twins: a step then runs
// as several submitted segments and one wait, and the logits must be the
// same bits (the same launches run on the same bytes).
func TestTinyGemma3nEarlySubmit(t *testing.T) {
	open(t)
	eachActivations(t, func(t *testing.T) {
		g, _, err := Open()
		must(t, err)
		defer g.Close()
		_, mg := tinyModelPair(t, g, 17)
		prompt := make([]int32, 22)
		for i := range prompt {
			prompt[i] = int32((i*37 + 9) % mg.Config().VocabSize)
		}
		var logits [2][][]float32
		for i, on := range []bool{false, true} {
			g.SetEarlySubmit(on)
			st0 := g.Stats()
			logits[i] = forward(t, mg, prompt, 10)
			st := g.Stats()
			early, flushes := st.EarlySubmits-st0.EarlySubmits, st.Flushes-st0.Flushes
			if on && early < flushes || !on && early != 0 || flushes != int64(len(logits[i])) {
				t.Errorf("early submits %v: %d early submits in %d steps (%d flushes): want none off, at least one per step on, and one flush per step", on, early, len(logits[i]), flushes)
			}
			t.Logf("early submits %v: %d steps, %d early submits, %d plans recorded, %d run from kept ones", on, flushes, early, st.PlanRecords-st0.PlanRecords, st.PlanRuns-st0.PlanRuns)
		}
		for s := range logits[0] {
			for j := range logits[0][s] {
				if math.Float32bits(logits[0][s][j]) != math.Float32bits(logits[1][s][j]) {
					t.Fatalf("step %d logit %d: %g submitted early, %g as one plan: want the same bits", s, j, logits[1][s][j], logits[0][s][j])
				}
			}
		}
	})
}

// TestTinyGemma3nGreedy decodes a tiny Gemma 3n whose vocabulary (20000
// logits) takes Argmax's split path, with activations where the device
// puts them and in host memory with device twins (the discrete-GPU
// layout). ForwardArgmax must give at every step the index
// tensor.ArgmaxF32 takes from Forward's logits on the same backend, and
// the CPU's until the CPU's top two logits come close; with twins its
// steps must copy back no logits (Stats.DiscardedBytes, TwinReadback).
func TestTinyGemma3nGreedy(t *testing.T) {
	open(t)
	dir := t.TempDir()
	dims := synth.TinyGemma3n()
	dims.Vocab = 20000
	if _, err := synth.WriteGemma3n(dir, dims, synth.Options{Bits: 4, Seed: 23, ExactQuant: true}); err != nil {
		t.Fatal(err)
	}
	load := func(be tensor.Backend) models.Model { return loadModel(t, dir, be) }
	c := cpu.New(2)
	defer c.Close()
	mc := load(c)
	prompt := make([]int32, 12)
	for i := range prompt {
		prompt[i] = int32((i*4099 + 17) % dims.Vocab)
	}
	const steps = 8
	// decode returns the prompt's greedy token and steps more, fed back,
	// and each step's gap between its top two logits (Forward only).
	decode := func(m models.Model, argmax bool) (ids []int32, gaps []float64) {
		cache, err := m.NewCache(kvcache.DefaultOptions())
		must(t, err)
		chunk := prompt
		for range steps + 1 {
			var tok int32
			if argmax {
				tok, err = m.(models.Greedy).ForwardArgmax(cache, chunk)
				must(t, err)
			} else {
				lg, err := m.Forward(cache, chunk, true)
				must(t, err)
				tok = int32(tensor.ArgmaxF32(lg.F32()))
				gaps = append(gaps, topGap(lg.F32()))
			}
			ids = append(ids, tok)
			chunk = []int32{tok}
		}
		return ids, gaps
	}
	cpuIDs, cpuGaps := decode(mc, false)
	eachActivations(t, func(t *testing.T) {
		g, d, err := Open()
		must(t, err)
		defer g.Close()
		mg := load(g)
		st0 := g.Stats()
		want, _ := decode(mg, false)
		st1 := g.Stats()
		got, _ := decode(mg, true)
		st2 := g.Stats()
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("step %d: ForwardArgmax %d, argmax of Forward's logits %d (ids %v and %v)", i, got[i], want[i], got, want)
			}
		}
		for i := range want {
			if want[i] != cpuIDs[i] {
				if cpuGaps[i] > 1e-3 {
					t.Errorf("step %d: GPU token %d, CPU %d with a top gap of %.3g", i, want[i], cpuIDs[i], cpuGaps[i])
				}
				t.Logf("GPU and CPU tokens part at step %d of %d (CPU top gap %.3g)", i, len(want), cpuGaps[i])
				break
			}
		}
		back := [2]int64{st1.TwinReadback - st0.TwinReadback, st2.TwinReadback - st1.TwinReadback}
		discarded := st2.DiscardedBytes - st1.DiscardedBytes
		logits := int64(4 * dims.Vocab * (steps + 1))
		if d.ActivationsRemote() {
			if discarded != logits || back[0]-back[1] != logits {
				t.Errorf("read back %d bytes through Forward, %d through ForwardArgmax, %d discarded: want %d fewer, all discarded", back[0], back[1], discarded, logits)
			}
		} else if discarded != 0 || back != [2]int64{} {
			t.Errorf("activations in GPU memory: %d bytes read back, %d discarded: want none", back, discarded)
		}
		t.Logf("%d steps: read back %d bytes through Forward, %d through ForwardArgmax (%d discarded)", steps+1, back[0], back[1], discarded)
	})
}

// topGap is the difference between the two largest values of x.
func topGap(x []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, v := range x {
		if f := float64(v); f > a {
			a, b = f, a
		} else if f > b {
			b = f
		}
	}
	return a - b
}

// TestE2BDecode is the device benchmark: greedy decode on the full-size
// checkpoint named by MLXCHAT_E2B_DIR (go run ./models/cmd/mkmodel -kind
// e2b -towers=false -out DIR) after a prompt of MLXCHAT_E2B_PROMPT tokens
// (64 unless set), reporting tokens/s and weight bytes/s, then the GPU
// profile of the decode step (its segments and the GPU's wait between
// them).
func TestE2BDecode(t *testing.T) {
	dir := os.Getenv("MLXCHAT_E2B_DIR")
	if dir == "" {
		t.Skip("MLXCHAT_E2B_DIR is not set")
	}
	g, d := open(t)
	t0 := time.Now()
	m, err := models.Load(dir, g)
	if err != nil {
		t.Fatal(err)
	}
	if cl, ok := m.(io.Closer); ok {
		defer cl.Close()
	}
	c, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	np := 64
	if s, err := strconv.Atoi(os.Getenv("MLXCHAT_E2B_PROMPT")); err == nil && s >= 8 {
		np = s
	}
	prompt := make([]int32, np)
	for i := range prompt {
		prompt[i] = int32((i*7919 + 11) % m.Config().VocabSize)
	}
	// The first chunk uploads the weights and builds the pipelines.
	if _, err := m.Forward(c, prompt[:8], true); err != nil {
		t.Fatal(err)
	}
	c, err = m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	tp := time.Now()
	for at := 0; at < np; at += 512 {
		if _, err := m.Forward(c, prompt[at:min(np, at+512)], true); err != nil {
			t.Fatal(err)
		}
	}
	prefill := time.Since(tp)
	next := []int32{1000}
	for range 3 {
		if _, err := m.Forward(c, next, true); err != nil {
			t.Fatal(err)
		}
	}
	steps := 32
	if s, err := strconv.Atoi(os.Getenv("MLXCHAT_E2B_STEPS")); err == nil && s > 0 {
		steps = s
	}
	var inForward time.Duration
	st0 := g.Stats()
	ts := time.Now()
	for range steps {
		tf := time.Now()
		lg, err := m.Forward(c, next, true)
		if err != nil {
			t.Fatal(err)
		}
		inForward += time.Since(tf)
		v := lg.F32()
		best := 0
		for i := range v {
			if v[i] > v[best] {
				best = i
			}
		}
		next[0] = int32(best)
	}
	el := time.Since(ts)
	st := g.Stats()
	fmt.Printf("BENCH E2B per token: %d dispatches (%d behind a barrier), %d syncs, %d flushes, %d staged bytes, %d written back\n",
		(st.Dispatches-st0.Dispatches)/int64(steps), (st.Barriers-st0.Barriers)/int64(steps), (st.Syncs-st0.Syncs)/int64(steps), (st.Flushes-st0.Flushes)/int64(steps),
		(st.StagedBytes-st0.StagedBytes)/int64(steps), (st.WritebackBytes-st0.WritebackBytes)/int64(steps))
	tps := float64(steps) / el.Seconds()
	wb := float64(m.WeightBytes())
	fmt.Printf("BENCH E2B on %s (activations %s): load and first chunk %v, prefill %d tokens %v, decode %.2f tok/s (%.1f ms/token in Forward, %.1f ms reading logits), %.2f GB weights/token, %.1f GB/s\n",
		d.Info().Name, d.Info().Activations, tp.Sub(t0).Round(time.Millisecond), np, prefill.Round(time.Millisecond), tps,
		float64(inForward.Microseconds())/1e3/float64(steps), float64((el-inForward).Microseconds())/1e3/float64(steps), wb/1e9, tps*wb/1e9)
	t.Logf("E2B on %s: load and first chunk %v, prefill %d tokens %v (%.1f tok/s), decode %.2f tok/s, %.2f GB weights/token, %.1f GB/s",
		d.Info().Name, tp.Sub(t0).Round(time.Millisecond), np, prefill.Round(time.Millisecond), float64(np)/prefill.Seconds(), tps, wb/1e9, tps*wb/1e9)
	// Where the GPU waits within a step: between its segments.
	if err := g.StartProfile(gpu.TimingSpan); err != nil {
		t.Logf("no GPU profile: %v", err)
		return
	}
	ts = time.Now()
	for range steps {
		if _, err := m.Forward(c, next, true); err != nil {
			t.Fatal(err)
		}
	}
	el = time.Since(ts)
	p, err := g.StopProfile()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("BENCH E2B decode step, timed: %.2f ms per token, GPU %.2f ms in %d plans (segments), %.2f ms between them, %.2f ms in Sync, %d launches\n",
		float64(el.Microseconds())/1e3/float64(steps), float64(p.GPU.Microseconds())/1e3, p.Plans, float64(p.Gaps.Microseconds())/1e3,
		float64(p.Step.Microseconds())/1e3, p.Launches)
}

// TestTinyGemma3nProfile profiles the tiny Gemma 3n's decode steps with
// every launch timed: the profile covers every segment of the step (its
// plans, launches and kernel rows add up to one step's), and the times
// are positive.
func TestTinyGemma3nProfile(t *testing.T) {
	g, _ := open(t)
	_, mg := tinyModelPair(t, g, 19)
	c, err := mg.NewCache(kvcache.DefaultOptions())
	must(t, err)
	prompt := []int32{5, 9, 13, 17, 21, 25}
	_, err = mg.Forward(c, prompt, true)
	must(t, err)
	if err := g.StartProfile(gpu.TimingLaunches); err != nil {
		t.Skipf("no GPU timing here: %v", err)
	}
	var perStep int64
	for range 6 {
		st0 := g.Stats()
		_, err := mg.Forward(c, prompt[:1], true)
		must(t, err)
		perStep = g.Stats().Dispatches - st0.Dispatches
	}
	p, err := g.StopProfile()
	must(t, err)
	n := 0
	for _, k := range p.Kernels {
		n += k.Launches
		if k.Time <= 0 {
			t.Errorf("kernel row %q: %v, want a positive time", k.Name, k.Time)
		}
	}
	t.Logf("profile: %d runs, %d plans, %d launches, %d barriers, GPU %v, gaps %v, Sync %v", p.Runs, p.Plans, p.Launches, p.Barriers, p.GPU, p.Gaps, p.Step)
	if p.Runs < 4 || p.Plans < 2 || int64(p.Launches) != perStep || n != p.Launches || p.GPU <= 0 || p.Gaps < 0 || p.Barriers == 0 {
		t.Errorf("profile of %d runs: %d plans, %d launches in %d kernel rows' %d, %d barriers, GPU %v, gaps %v; want at least 4 runs of several plans, the %d launches of a step, positive times", p.Runs, p.Plans, p.Launches, len(p.Kernels), n, p.Barriers, p.GPU, p.Gaps, perStep)
	}
}

// TestTinyGemma3nOneSyncPerForward checks the asynchronous forward pass on
// the tiny Gemma 3n: keys and values are appended on the GPU (the cache's
// storage is backend memory), so every Forward, prefill chunk or decode
// step, makes exactly one Sync and one flush and stages no K/V bytes, over
// a prompt longer than the sliding window, trims under MaxKV and decode;
// and the logits still match tensor/cpu.
func TestTinyGemma3nOneSyncPerForward(t *testing.T) {
	g, _ := open(t)
	mc, mg := tinyModelPair(t, g, 5)
	opts := kvcache.DefaultOptions()
	opts.MaxKV, opts.Sink, opts.Step = 32, 4, 8
	prompt := make([]int32, 40) // 5x the tiny model's sliding window of 8
	for i := range prompt {
		prompt[i] = int32((i*53 + 7) % mc.Config().VocabSize)
	}
	const chunk, decode = 10, 12
	type step struct {
		logits            []float32
		syncs, flushes    int64
		staged, dispatchs int64
		kept              bool // every plan of the step was a kept one
	}
	run := func(m models.Model, count bool) ([]step, *kvcache.Cache) {
		cache, err := m.NewCache(opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []step
		fwd := func(ids []int32) {
			st0 := g.Stats()
			lg, err := m.Forward(cache, ids, true)
			if err != nil {
				t.Fatal(err)
			}
			s := step{logits: append([]float32(nil), lg.F32()...)}
			if count {
				st := g.Stats()
				s.syncs, s.flushes = st.Syncs-st0.Syncs, st.Flushes-st0.Flushes
				s.staged, s.dispatchs = st.StagedBytes-st0.StagedBytes, st.Dispatches-st0.Dispatches
				s.kept = st.PlanRuns > st0.PlanRuns && st.PlanRecords == st0.PlanRecords
			}
			out = append(out, s)
		}
		for i := 0; i < len(prompt); i += chunk {
			fwd(prompt[i:min(i+chunk, len(prompt))])
		}
		for range decode {
			last := out[len(out)-1].logits
			best := 0
			for i, v := range last {
				if v > last[best] {
					best = i
				}
			}
			fwd([]int32{int32(best)})
		}
		return out, cache
	}
	want, cc := run(mc, false)
	got, gc := run(mg, true)
	if !gc.AppendsOnBackend() {
		t.Fatal("the Vulkan model's cache does not append on the backend")
	}
	if cs, gs := cc.Stats(), gc.Stats(); cs.Trimmed == 0 || cs.Trimmed != gs.Trimmed || cs.Live != gs.Live {
		t.Fatalf("trimmed %d/%d, live %d/%d (cpu/vulkan): want equal and a trim under max-kv-size %d", cs.Trimmed, gs.Trimmed, cs.Live, gs.Live, opts.MaxKV)
	}
	for s := range want {
		if got[s].syncs != 1 || got[s].flushes != 1 {
			t.Errorf("forward %d: %d syncs and %d flushes, want exactly 1 each", s, got[s].syncs, got[s].flushes)
		}
		// What is still staged is small host data (mask spans, token
		// ids, constants), never the keys and values: less than the K
		// and V of one global layer's live keys.
		if kv := int64(opts.MaxKV * 2 * 2 * 32 * 4); s >= len(prompt)/chunk && got[s].staged >= kv {
			t.Errorf("decode forward %d staged %d host bytes, want < %d (K/V read in place)", s, got[s].staged, kv)
		}
		scale := 0.0
		w := make([]float64, len(want[s].logits))
		for i, v := range want[s].logits {
			scale = math.Max(scale, math.Abs(float64(v)))
			w[i] = float64(v)
		}
		near(t, "logits", got[s].logits, w, 1e-2*scale, 0)
	}
	last := got[len(got)-1]
	t.Logf("decode step: %d dispatches, %d syncs, %d flushes, %d staged bytes", last.dispatchs, last.syncs, last.flushes, last.staged)
	// Decode steps of one shape run the plan recorded for the first of
	// them: only a capacity step of the cache or a new attention split
	// makes the driver record again.
	replayed := 0
	for _, s := range got[len(prompt)/chunk+1:] {
		if s.kept {
			replayed++
		}
	}
	if _, ok := any(sharedDrv).(gpu.Planner); ok && replayed < decode/2 {
		t.Errorf("%d of %d decode steps ran from a kept plan, want most", replayed, decode-1)
	}
	t.Logf("%d of %d later decode steps ran from a kept plan", replayed, decode-1)
}

// tinyModelPair writes a tiny 4-bit Gemma 3n (sliding and KV-shared
// layers) with the given seed and loads it on tensor/cpu and on g. The
// backend first forgets uploaded weights: another test's checkpoint may
// have been mapped at the addresses this one gets.
func tinyModelPair(t *testing.T, g *gpu.Backend, seed uint64) (onCPU, onGPU models.Model) {
	t.Helper()
	if err := g.DropWeights(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	c := cpu.New(2)
	t.Cleanup(func() { c.Close() })
	load := func(be tensor.Backend) models.Model { return loadModel(t, dir, be) }
	return load(c), load(g)
}

// loadModel loads the model in dir on be and closes it when the test ends.
func loadModel(t *testing.T, dir string, be tensor.Backend) models.Model {
	t.Helper()
	m, err := models.Load(dir, be)
	if err != nil {
		t.Fatalf("%s: %v", be.Name(), err)
	}
	if cl, ok := m.(io.Closer); ok {
		t.Cleanup(func() { cl.Close() })
	}
	return m
}

// eachActivations runs fn as a subtest twice: with activations where the
// driver puts them by default, and in host memory
// (MLXCHAT_VULKAN_ACTIVATIONS=host).
func eachActivations(t *testing.T, fn func(t *testing.T)) {
	for _, where := range []string{"", "host"} {
		t.Run("activations="+where, func(t *testing.T) {
			if where != "" {
				t.Setenv("MLXCHAT_VULKAN_ACTIVATIONS", where)
			}
			fn(t)
		})
	}
}
