package cpu

import (
	"encoding/binary"
	"runtime"
	"sync"
	"time"
)

// MeasureReadBandwidth returns the host's memory read bandwidth in GB/s
// (1e9 bytes per second) as threads goroutines read disjoint parts of one
// buffer of the given size; threads <= 0 means runtime.NumCPU(). The
// buffer should be much larger than the last-level cache (256 MiB or more).
// It reports the best of a few passes, the figure a memory-bound kernel
// can hope to reach and the denominator of a roofline fraction.
func MeasureReadBandwidth(bytes int, threads int) float64 {
	return NewReadProbe(bytes).Measure(threads)
}

// ReadProbe is MeasureReadBandwidth's buffer, kept so that the bandwidth
// can be measured again without allocating and faulting in a new one.
type ReadProbe struct {
	buf []byte
}

// NewReadProbe allocates a probe of the given size with every page
// faulted in (none when bytes <= 0).
func NewReadProbe(bytes int) *ReadProbe {
	if bytes <= 0 {
		return &ReadProbe{}
	}
	buf := make([]byte, bytes)
	for i := 0; i < len(buf); i += 4096 { // fault every page in
		buf[i] = byte(i >> 12)
	}
	return &ReadProbe{buf: buf}
}

// Measure is MeasureReadBandwidth over the probe's buffer; 0 when the
// buffer is shorter than a slice per thread.
func (p *ReadProbe) Measure(threads int) float64 {
	best := 0.0
	for pass := 0; pass < 6; pass++ {
		if bytes, secs := p.Pass(threads); bytes > 0 {
			best = max(best, float64(bytes)/secs/1e9)
		}
	}
	return best
}

// Pass reads the probe's buffer once with threads goroutines (<= 0: one
// per CPU) and returns the bytes read and the seconds taken; (0, 0) when
// the buffer is shorter than a slice per thread. A benchmark that runs
// one pass after each step of what it times gets the bandwidth of the
// same stretch of time (a shared host's bandwidth moves by a fifth within
// seconds), where Measure's best pass is the host at its least busy.
func (p *ReadProbe) Pass(threads int) (bytes int, secs float64) {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	bytes = len(p.buf) / (128 * threads) * (128 * threads)
	if bytes <= 0 {
		return 0, 0
	}
	secs = readParallel(p.buf[:bytes], threads)
	runtime.KeepAlive(p.buf)
	return bytes, secs
}

// readParallel reads buf once with threads goroutines and returns the
// seconds taken.
func readParallel(buf []byte, threads int) float64 {
	chunk := len(buf) / threads
	var wg sync.WaitGroup
	sums := make([]uint64, threads)
	start := time.Now()
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			sums[t] = readBytes(buf[t*chunk : (t+1)*chunk])
		}(t)
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	var x uint64
	for _, s := range sums {
		x ^= s
	}
	sink(x)
	return secs
}

//go:noinline
func sink(uint64) {}

// readPortable XOR-folds b (a multiple of 32 bytes long).
func readPortable(b []byte) uint64 {
	var a0, a1, a2, a3 uint64
	for i := 0; i+32 <= len(b); i += 32 {
		a0 ^= binary.LittleEndian.Uint64(b[i:])
		a1 ^= binary.LittleEndian.Uint64(b[i+8:])
		a2 ^= binary.LittleEndian.Uint64(b[i+16:])
		a3 ^= binary.LittleEndian.Uint64(b[i+24:])
	}
	return a0 ^ a1 ^ a2 ^ a3
}
