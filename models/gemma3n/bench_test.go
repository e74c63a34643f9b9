package gemma3n

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"mlxchat/kvcache"
	"mlxchat/models/familytest"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// The E2B benchmarks run on a full-size checkpoint named by MLXCHAT_E2B_DIR,
// e.g. the synthetic one from
//
//	go run ./models/cmd/mkmodel -kind e2b -out /tmp/e2b
//	MLXCHAT_E2B_DIR=/tmp/e2b go test ./models/gemma3n -run '^$' -bench E2B -benchtime 20x
//
// and report tokens per second, peak RSS and, for decode, the roofline
// fraction: the bytes a token reads (WeightBytes and the live keys and
// values) × tokens/s over the read bandwidth of the same stretch of time,
// one pass of a read probe after each decode step (cpu.ReadProbe.Pass,
// outside the timing); roofline-peak is the same against the mean of the
// best of six passes just before and just after the steps (GB/s-peak).
// MLXCHAT_DECODE_PROFILE=FILE writes a CPU profile of the decode steps
// and the probe passes between them (go tool pprof -ignore readParallel
// leaves the passes out; go test's -cpuprofile also holds the prompt's
// prefill); the last run of a benchmark leaves it.

func e2bModel(b *testing.B) (*Model, *cpu.Backend) {
	dir := os.Getenv("MLXCHAT_E2B_DIR")
	if dir == "" {
		b.Skip("MLXCHAT_E2B_DIR is not set")
	}
	be := cpu.New(runtime.NumCPU())
	b.Cleanup(be.Close)
	m, err := Load(dir, be)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m, be
}

// peakRSS reads VmHWM from /proc/self/status in bytes (0 if unavailable).
func peakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}

// BenchmarkE2BDecode decodes after a prompt of ctx tokens (prefilled in
// chunks of 512), so decode attention over a long context shows up beside
// the weight reads: -bench 'E2BDecode/ctx=2048' -cpuprofile FILE.
func BenchmarkE2BDecode(b *testing.B) {
	for _, ctx := range []int{32, 512, 2048} {
		b.Run("ctx="+strconv.Itoa(ctx), func(b *testing.B) { benchE2BDecode(b, ctx) })
	}
}

func benchE2BDecode(b *testing.B, ctx int) {
	m, be := e2bModel(b)
	probe := cpu.NewReadProbe(256 << 20)
	before := probe.Measure(be.Threads()) * 1e9
	c, err := m.NewCache(kvcache.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	ids := randomIDs(1, ctx, m.Config().VocabSize)
	for at := 0; at < ctx; at += 512 {
		if _, err := m.Forward(c, ids[at:min(ctx, at+512)], true); err != nil {
			b.Fatal(err)
		}
	}
	next := int32(1000)
	for i := 0; i < 2; i++ { // warm up: fault in the weights
		if _, err := m.Forward(c, []int32{next}, true); err != nil {
			b.Fatal(err)
		}
	}
	kv0 := c.Stats().LiveBytes
	if path := os.Getenv("MLXCHAT_DECODE_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatalf("MLXCHAT_DECODE_PROFILE: %v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatalf("MLXCHAT_DECODE_PROFILE: %v", err)
		}
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	var secs, probeSecs float64
	probeBytes := 0
	for i := 0; i < b.N; i++ {
		start := time.Now()
		lg, err := m.Forward(c, []int32{next}, true)
		if err != nil {
			b.Fatal(err)
		}
		next = familytest.Argmax(lg.F32())
		secs += time.Since(start).Seconds()
		b.StopTimer()
		n, s := probe.Pass(be.Threads())
		probeBytes += n
		probeSecs += s
		b.StartTimer()
	}
	b.StopTimer()
	tps := float64(b.N) / secs
	bw := float64(probeBytes) / probeSecs
	peak := (before + probe.Measure(be.Threads())*1e9) / 2
	// A step reads the weights it uses and the live keys and values.
	read := float64(m.WeightBytes()) + float64(kv0+c.Stats().LiveBytes)/2
	b.ReportMetric(tps, "tok/s")
	b.ReportMetric(read/1e6, "MB/token")
	b.ReportMetric(bw/1e9, "GB/s-read")
	b.ReportMetric(peak/1e9, "GB/s-peak")
	b.ReportMetric(read*tps/bw, "roofline")
	b.ReportMetric(read*tps/peak, "roofline-peak")
	b.ReportMetric(peakRSS()/1e6, "peakRSS-MB")
}

func BenchmarkE2BPrefill(b *testing.B) {
	m, _ := e2bModel(b)
	const chunk = 128
	ids := randomIDs(2, chunk, m.Config().VocabSize)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		c, err := m.NewCache(kvcache.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Forward(c, ids, true); err != nil {
			b.Fatal(err)
		}
	}
	secs := time.Since(start).Seconds()
	b.StopTimer()
	b.ReportMetric(float64(b.N*chunk)/secs, "tok/s")
	b.ReportMetric(peakRSS()/1e6, "peakRSS-MB")
}

// BenchmarkE2BPrefillLong prefills a 1024-token document in chunks of 512,
// as the engine does for a long paste, so attention over cached keys and
// the per-chunk costs show up in a profile.
func BenchmarkE2BPrefillLong(b *testing.B) {
	m, _ := e2bModel(b)
	const total, chunk = 1024, 512
	ids := randomIDs(3, total, m.Config().VocabSize)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		c, err := m.NewCache(kvcache.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		for at := 0; at < total; at += chunk {
			if _, err := m.Forward(c, ids[at:at+chunk], true); err != nil {
				b.Fatal(err)
			}
		}
	}
	secs := time.Since(start).Seconds()
	b.StopTimer()
	b.ReportMetric(float64(b.N*total)/secs, "tok/s")
	b.ReportMetric(peakRSS()/1e6, "peakRSS-MB")
}

// BenchmarkE2BResident multiplies the checkpoint's attention and dense MLP
// matrices (q, k, v, o; gate, up, down of the twenty dense layers: 697 MB
// for E2B) by one row back to back, as a decode step does, alternating a
// pass on a backend that reads them from the checkpoint's file mapping
// with a pass on the model's backend, which reads its resident copies
// (tensor/cpu resident.go). It reports both rates in GB/s of weight bytes
// and their ratio (resident/mapped).
func BenchmarkE2BResident(b *testing.B) {
	m, be := e2bModel(b)
	mapped := cpu.New(be.Threads())
	defer mapped.Close()
	var ms []*tensor.Matrix
	for i := range m.layers {
		l := &m.layers[i]
		ms = append(ms, l.attn.Q)
		if !l.attn.Shared {
			ms = append(ms, l.attn.K, l.attn.V)
		}
		ms = append(ms, l.attn.O)
		if !l.mlp.Sparse {
			ms = append(ms, l.mlp.Gate, l.mlp.Up, l.mlp.Down)
		}
	}
	xs, ds := map[int]*tensor.Tensor{}, map[int]*tensor.Tensor{}
	bytes := 0
	for _, w := range ms {
		if xs[w.In] == nil {
			xs[w.In] = tensor.New(tensor.F32, 1, w.In)
			for i, v := 0, xs[w.In].F32(); i < len(v); i++ {
				v[i] = float32(i%7) - 3
			}
		}
		if ds[w.Out] == nil {
			ds[w.Out] = tensor.New(tensor.F32, 1, w.Out)
		}
		bytes += w.Bytes()
	}
	pass := func(on *cpu.Backend) time.Duration {
		start := time.Now()
		for _, w := range ms {
			if err := on.MatMul(ds[w.Out], xs[w.In], w); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	pass(be)     // make the copies
	pass(mapped) // fault the mapping back in
	var tm, tr time.Duration
	for b.Loop() {
		tm += pass(mapped)
		tr += pass(be)
	}
	gb := float64(b.N) * float64(bytes) / 1e9
	b.ReportMetric(gb/tm.Seconds(), "mapped-GB/s")
	b.ReportMetric(gb/tr.Seconds(), "resident-GB/s")
	b.ReportMetric(tm.Seconds()/tr.Seconds(), "ratio")
}
