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
)

// countDriver is a gpu.Driver and gpu.Planner that runs nothing: buffers
// are Go memory and plans are only counted. It measures what Backend hands
// a driver per step (launches per kernel, plans recorded and run) and the
// host time of recording, exactly, on any model size.
type countDriver struct {
	perPlan    [kernels.Count]int // launches per kernel of the last recorded plan
	last       int                // launches of the last step
	recs, runs int
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
func (d *countDriver) Flush() error    { return nil }
func (d *countDriver) Close() error    { return nil }
func (d *countDriver) ParamAlign() int { return 64 }
func (d *countDriver) NewPlan(l []gpu.Launch, n int) (gpu.Plan, []byte, error) {
	d.perPlan = [kernels.Count]int{}
	for _, x := range l {
		d.perPlan[x.Kernel]++
	}
	d.recs++
	p := &l
	return p, make([]byte, n), nil
}
func (d *countDriver) RunPlan(p gpu.Plan) error {
	d.runs++
	d.last = len(*p.(*[]gpu.Launch))
	return nil
}
func (d *countDriver) ReleasePlan(gpu.Plan) {}

// decodeCounts loads the checkpoint in dir on a Backend over countDriver,
// prefills 8 tokens, decodes warm steps and then timed steps, and returns
// the launches of one decode step by kernel, the host time per step and
// how many timed steps ran from a kept plan.
func decodeCounts(t *testing.T, dir string, timed int, fusion gpu.Fusion, chains bool) (perKernel [kernels.Count]int, perStep int, host time.Duration, replayed int, layers int) {
	t.Helper()
	d := &countDriver{}
	b := gpu.New(d)
	b.SetFusionMode(fusion)
	b.SetChains(chains)
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
	perKernel = d.perPlan
	runs := d.runs
	st0 := b.Stats()
	t0 := time.Now()
	for range timed {
		if _, err := m.Forward(c, []int32{3}, true); err != nil {
			t.Fatal(err)
		}
	}
	host = time.Since(t0) / time.Duration(timed)
	st := b.Stats()
	return perKernel, int(st.Dispatches-st0.Dispatches) / timed, host, d.runs - runs - int(st.PlanRecords-st0.PlanRecords), len(m.Config().Layers)
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

// TestE2BLaunches reports launches per decode token and host recording
// time, in each fusion mode and unfused with chains (chain.go), on the full-size checkpoint named by MLXCHAT_E2B_DIR (go run
// ./models/cmd/mkmodel -kind e2b -towers=false -out DIR); no GPU needed.
func TestE2BLaunches(t *testing.T) {
	dir := os.Getenv("MLXCHAT_E2B_DIR")
	if dir == "" {
		t.Skip("MLXCHAT_E2B_DIR is not set")
	}
	for _, mode := range []struct {
		name   string
		fusion gpu.Fusion
		chains bool
	}{{"fused", gpu.FuseAll, false}, {"segments", gpu.FuseSegments, false}, {"unfused", gpu.FuseOff, false}, {"chained", gpu.FuseOff, true}} {
		perKernel, perStep, host, replayed, layers := decodeCounts(t, dir, 64, mode.fusion, mode.chains)
		report(t, "E2B "+mode.name, perKernel, perStep, host, layers)
		t.Logf("%d of 64 timed steps ran from a kept plan", replayed)
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
