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
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	bytes := len(p.buf) &^ (128*threads - 1)
	if bytes <= 0 {
		return 0
	}
	buf := p.buf[:bytes]
	best := 0.0
	for pass := 0; pass < 6; pass++ {
		secs := readParallel(buf, threads)
		if gbs := float64(bytes) / secs / 1e9; gbs > best {
			best = gbs
		}
	}
	runtime.KeepAlive(buf)
	return best
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
