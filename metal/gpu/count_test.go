package gpu_test

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"mlxchat/kvcache"
	"mlxchat/metal/gpu"
	"mlxchat/metal/kernels"
	"mlxchat/models"
	"mlxchat/models/synth"
	"mlxchat/tensor"
)

// countDriver is a gpu.Driver and gpu.Planner that runs nothing: buffers
// are Go memory and plans are only counted. It measures what Backend hands
// a driver per step (launches per kernel, plans recorded and run, a step
// being every plan run between two Flushes) and the host time of
// recording, exactly, on any model size.
type countDriver struct {
	perStep                     [kernels.Count]int // launches per kernel of the last step
	plans                       int                // plans run in the last step (its segments)
	kept                        int                // steps whose plans were all kept ones
	recs                        int                // plans recorded
	groups                      int                // workgroups of the last step's launches
	barriers                    int                // launches of the last step that wait at a barrier
	noSchedule                  bool               // decodeCountsOn: run the backend without chain.go's schedule
	cur                         [kernels.Count]int
	curRuns, curRecs, curGroups int
	curBarriers                 int
}

// countPlan is a countDriver plan: its launches per kernel and their
// workgroups.
type countPlan struct {
	perKernel [kernels.Count]int
	groups    int
	barriers  int
}

func (d *countDriver) Name() string       { return "count" }
func (d *countDriver) Limits() gpu.Limits { return gpu.Limits{OffsetAlign: 64, MaxRange: 1 << 32} }
func (d *countDriver) NewBuffer(n int) (gpu.Buf, []byte, error) {
	b := make([]byte, n)
	return &b, b, nil
}
func (d *countDriver) NewWeights(data []byte) (gpu.Buf, error) { return &data, nil }
func (d *countDriver) Release(gpu.Buf)                         {}
func (d *countDriver) NewWeightBuffer(n int64) (gpu.Buf, error) {
	b := make([]byte, n)
	return &b, nil
}
func (d *countDriver) WriteWeights(dst gpu.Buf, off int64, data []byte) error {
	copy((*dst.(*[]byte))[off:], data)
	return nil
}
func (d *countDriver) Dispatch(kernels.ID, []byte, *[8]gpu.Binding, [3]int) error {
	return fmt.Errorf("count driver: Dispatch called on a Planner")
}
func (d *countDriver) Flush() error {
	if d.curRuns > 0 {
		d.perStep, d.plans, d.groups, d.barriers = d.cur, d.curRuns, d.curGroups, d.curBarriers
		if d.curRecs == 0 {
			d.kept++
		}
	}
	d.cur, d.curRuns, d.curRecs, d.curGroups, d.curBarriers = [kernels.Count]int{}, 0, 0, 0, 0
	return nil
}
func (d *countDriver) Close() error    { return nil }
func (d *countDriver) ParamAlign() int { return 64 }
func (d *countDriver) NewPlan(l []gpu.Launch, n int) (gpu.Plan, []byte, error) {
	p := &countPlan{}
	for _, x := range l {
		p.perKernel[x.Kernel]++
		p.groups += x.Groups[0] * x.Groups[1] * x.Groups[2]
		if x.Barrier {
			p.barriers++
		}
	}
	d.recs++
	d.curRecs++
	return p, make([]byte, n), nil
}
func (d *countDriver) RunPlan(pp gpu.Plan) error {
	p := pp.(*countPlan)
	for k, n := range p.perKernel {
		d.cur[k] += n
	}
	d.curRuns++
	d.curGroups += p.groups
	d.curBarriers += p.barriers
	return nil
}
func (d *countDriver) ReleasePlan(gpu.Plan) {}

// decodeCounts loads the checkpoint in dir on a Backend over countDriver,
// prefills 8 tokens, decodes warm steps and then timed steps, and returns
// the launches of one decode step by kernel, the host time per step and
// how many timed steps ran from a kept plan.
func decodeCounts(t *testing.T, dir string, timed int, fusion gpu.Fusion, chains bool) (perKernel [kernels.Count]int, perStep int, host time.Duration, replayed int, layers int) {
	t.Helper()
	return decodeCountsOn(t, &countDriver{}, dir, timed, fusion, chains, true)
}

// decodeCountsOn is decodeCounts on d, with early submits on or off.
func decodeCountsOn(t *testing.T, d *countDriver, dir string, timed int, fusion gpu.Fusion, chains, early bool) (perKernel [kernels.Count]int, perStep int, host time.Duration, replayed int, layers int) {
	t.Helper()
	b := gpu.New(d)
	b.SetFusionMode(fusion)
	b.SetChains(chains)
	b.SetEarlySubmit(early)
	b.SetSchedule(!d.noSchedule)
	m, err := models.Load(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(c, []int32{1, 2, 3, 4, 5, 6, 7, 8}, true); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := m.Forward(c, []int32{3}, true); err != nil {
			t.Fatal(err)
		}
	}
	perKernel = d.perStep
	kept := d.kept
	st0 := b.Stats()
	t0 := time.Now()
	for range timed {
		if _, err := m.Forward(c, []int32{3}, true); err != nil {
			t.Fatal(err)
		}
	}
	host = time.Since(t0) / time.Duration(timed)
	st := b.Stats()
	return perKernel, int(st.Dispatches-st0.Dispatches) / timed, host, d.kept - kept, len(m.Config().Layers)
}

func report(t *testing.T, name string, perKernel [kernels.Count]int, perStep int, host time.Duration, layers int) {
	var parts []string
	ids := make([]int, 0, kernels.Count)
	for k := range perKernel {
		if perKernel[k] > 0 {
			ids = append(ids, k)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return perKernel[ids[i]] > perKernel[ids[j]] })
	for _, k := range ids {
		parts = append(parts, fmt.Sprintf("%s %d", kernels.ID(k), perKernel[k]))
	}
	t.Logf("%s: %d launches per decode token (%d layers, %.1f per layer), host time %v per step; %s",
		name, perStep, layers, float64(perStep)/float64(layers), host, strings.Join(parts, ", "))
}

// TestDecodeSteps runs the tiny Gemma 3n's decode on the counting driver:
// after the first decode step every step must run from the kept plan (the
// same kernels, grids and bindings; only parameter blocks change).
func TestDecodeSteps(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	perKernel, perStep, host, replayed, layers := decodeCounts(t, dir, 16, gpu.FuseAll, false)
	report(t, "tiny Gemma 3n", perKernel, perStep, host, layers)
	if replayed < 14 {
		t.Errorf("%d of 16 decode steps ran from a kept plan, want at least 14", replayed)
	}
	// Fusion (fuse.go) brings a layer to a handful of launches; the
	// target is at most 10 per layer and token, the head and embeddings
	// included.
	if perStep > 10*layers {
		t.Errorf("%d launches per decode token for %d layers, want at most %d", perStep, layers, 10*layers)
	}
}

// TestEarlySubmit decodes the tiny Gemma 3n (chained, unfused) with
// early submits on and off: on, a step must run as several plans (its
// segments), every decode step from kept ones, with the launches of every
// kernel the same as in one plan (a cut never keeps chain from folding an
// op); off, as one plan.
func TestEarlySubmit(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	var per [2][kernels.Count]int
	var steps [2]int
	var plans [2]int
	for i, early := range []bool{false, true} {
		d := &countDriver{}
		var kept int
		per[i], steps[i], _, kept, _ = decodeCountsOn(t, d, dir, 8, gpu.FuseOff, true, early)
		plans[i] = d.plans
		if kept != 8 {
			t.Errorf("early submit %v: %d of 8 decode steps ran from kept plans only, want all", early, kept)
		}
	}
	if plans[0] != 1 || plans[1] < 2 {
		t.Errorf("a decode step ran as %d plans without early submits and %d with them, want 1 and several", plans[0], plans[1])
	}
	if per[0] != per[1] || steps[0] != steps[1] {
		t.Errorf("launches per decode step: %d as one plan, %d in segments; per kernel %v and %v: want the same", steps[0], steps[1], per[0], per[1])
	}
	t.Logf("decode step: %d launches, %d segments", steps[1], plans[1])
}

// TestE2BLaunches reports launches (and barriers) per decode token and
// host recording time, in each fusion mode and unfused with chains
// (chain.go) without and with its schedule, on the full-size checkpoint
// named by MLXCHAT_E2B_DIR (go run ./models/cmd/mkmodel -kind e2b
// -towers=false -out DIR); no GPU needed.
func TestE2BLaunches(t *testing.T) {
	dir := os.Getenv("MLXCHAT_E2B_DIR")
	if dir == "" {
		t.Skip("MLXCHAT_E2B_DIR is not set")
	}
	for _, mode := range []struct {
		name     string
		fusion   gpu.Fusion
		chains   bool
		schedule bool
	}{{"fused", gpu.FuseAll, false, true}, {"segments", gpu.FuseSegments, false, true}, {"unfused", gpu.FuseOff, false, true},
		{"chained, unscheduled", gpu.FuseOff, true, false}, {"chained", gpu.FuseOff, true, true}} {
		d := &countDriver{noSchedule: !mode.schedule}
		perKernel, perStep, host, replayed, layers := decodeCountsOn(t, d, dir, 64, mode.fusion, mode.chains, true)
		report(t, "E2B "+mode.name, perKernel, perStep, host, layers)
		t.Logf("%d of 64 timed steps ran from kept plans, %d plans (segments) per step, %d barriers", replayed, d.plans, d.barriers)
		if mode.fusion == gpu.FuseAll && (perStep > 300 || perStep > 10*layers) {
			t.Errorf("%d launches per decode token for %d layers, want at most 300 and 10 per layer", perStep, layers)
		}
	}
}

// BenchmarkDecodeHost measures the host time of one decode step on the
// counting driver (the model recording its ops, then Sync: chains,
// barriers, parameter blocks, the kept plan's lookup; the GPU's part is
// nothing), unchained and chained, on the tiny Gemma 3n or on the
// checkpoint named by MLXCHAT_E2B_DIR. Profile it with -cpuprofile.
func BenchmarkDecodeHost(b *testing.B) {
	dir := os.Getenv("MLXCHAT_E2B_DIR")
	if dir == "" {
		dir = b.TempDir()
		if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	for _, chains := range []bool{false, true} {
		name := "unchained"
		if chains {
			name = "chained"
		}
		b.Run(name, func(b *testing.B) {
			g := gpu.New(&countDriver{})
			g.SetChains(chains)
			m, err := models.Load(dir, g)
			if err != nil {
				b.Fatal(err)
			}
			c, err := m.NewCache(kvcache.DefaultOptions())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := m.Forward(c, []int32{1, 2, 3, 4, 5, 6, 7, 8}, true); err != nil {
				b.Fatal(err)
			}
			for range 2 {
				if _, err := m.Forward(c, []int32{3}, true); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if c.Offset() > 200 {
					b.StopTimer()
					if err := c.Rewind(c.Offset() - 10); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if _, err := m.Forward(c, []int32{3}, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestWideMatVec: one-row products of 2^23 weights or more record the wide
// matrix-vector kernels (4 output rows a workgroup, grid to match),
// smaller ones and every product while fusion is on the narrow ones.
func TestWideMatVec(t *testing.T) {
	for _, c := range []struct {
		out, in, bits int
		fusion        gpu.Fusion
		want          kernels.ID
		groups        int
	}{
		{4099, 2048, 4, gpu.FuseOff, kernels.QMVW4, 1025},
		{4097, 2048, 8, gpu.FuseOff, kernels.QMVW8, 1025},
		{4095, 2048, 4, gpu.FuseOff, kernels.QMV4, 2048},
		{4099, 2048, 4, gpu.FuseAll, kernels.QMV4, 2050},
	} {
		d := &countDriver{}
		b := gpu.New(d)
		b.SetFusionMode(c.fusion)
		w, err := tensor.QuantizeAffine(make([]float32, c.out*c.in), c.out, c.in, c.bits, 64, tensor.BF16)
		if err != nil {
			t.Fatal(err)
		}
		x, dst := b.Alloc(1, c.in), b.Alloc(1, c.out)
		if err := b.MatMul(dst, x, w); err != nil {
			t.Fatal(err)
		}
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		if d.perStep[c.want] != 1 || d.plans != 1 || d.groups != c.groups {
			t.Errorf("%dx%d %d-bit, fusion %v: launches per kernel %v, %d workgroups; want one %s of %d workgroups", c.out, c.in, c.bits, c.fusion, d.perStep, d.groups, c.want, c.groups)
		}
	}
}

// TestSchedule: launches that depend on nothing since the last barrier
// join it even when recorded after launches that wait (chain.go's
// schedule): two independent products, each followed by a norm and the
// first norm by a softmax, take 2 barriers instead of the 3 of the
// recorded order (chains off keep it), with the same launches.
func TestSchedule(t *testing.T) {
	w1, err := tensor.QuantizeAffine(make([]float32, 256*256), 256, 256, 4, 64, tensor.BF16)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := tensor.QuantizeAffine(make([]float32, 128*256), 128, 256, 4, 64, tensor.BF16)
	if err != nil {
		t.Fatal(err)
	}
	for _, chains := range []bool{false, true} {
		d := &countDriver{}
		b := gpu.New(d)
		b.SetChains(chains)
		x := b.Alloc(1, 256)
		a1, n1, s1 := b.Alloc(1, 256), b.Alloc(1, 256), b.Alloc(1, 256)
		a2, n2 := b.Alloc(1, 128), b.Alloc(1, 128)
		for _, err := range []error{
			b.MatMul(a1, x, w1),
			b.RMSNorm(n1, a1, nil, 1e-6),
			b.Softmax(s1, n1),
			b.MatMul(a2, x, w2),
			b.RMSNorm(n2, a2, nil, 1e-6),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		want := 3
		if chains {
			want = 2
		}
		if d.barriers != want || d.perStep[kernels.QMV4] != 2 || d.perStep[kernels.RMSNorm] != 2 || d.perStep[kernels.Softmax] != 1 {
			t.Errorf("chains %v: %d barriers, launches per kernel %v; want %d barriers and the 5 launches", chains, d.barriers, d.perStep, want)
		}
	}
}
