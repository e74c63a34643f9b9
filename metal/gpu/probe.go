package gpu

import (
	"fmt"
	"time"

	"mlxchat/metal/kernels"
	"mlxchat/tensor"
)

// LaunchCounts returns the kernel launches handed to the driver and the
// Syncs since the backend was opened (mlxchat bench divides their growth
// over the decode phase by the tokens decoded).
func (b *Backend) LaunchCounts() (launches, syncs int64) {
	st := b.Stats()
	return st.Dispatches, st.Syncs
}

// MeasureBandwidth times a copy kernel between two GPU buffers of bytes
// bytes each (device-only memory on drivers with remote activations) and
// returns bytes read plus bytes written per second, the best of several
// runs of 8 copies after a warm-up: the memory bandwidth the GPU itself
// reaches, the denominator of the decode roofline. The buffers are
// released afterwards.
func (b *Backend) MeasureBandwidth(bytes int) (float64, error) {
	n := bytes / 4 &^ 255
	if n < 256 {
		return 0, fmt.Errorf("bandwidth probe: %d bytes is too small", bytes)
	}
	b.mu.Lock()
	var bufs [2]*arenaChunk
	release := func() {
		for _, c := range bufs {
			if c != nil {
				b.drv.Release(c.buf)
			}
		}
	}
	for i := range bufs {
		c := &arenaChunk{size: int64(4 * n)}
		var err error
		if b.remote != nil {
			c.buf, err = b.remote.NewDeviceBuffer(4 * n)
		} else {
			c.buf, c.mem, err = b.drv.NewBuffer(4 * n)
		}
		if err != nil {
			release()
			b.mu.Unlock()
			return 0, fmt.Errorf("bandwidth probe: %d-byte buffer: %w", 4*n, err)
		}
		bufs[i] = c
	}
	if m := bufs[0].mem; m != nil {
		// Host-visible buffers (integrated GPUs, lavapipe): check that the
		// copies really moved the bytes.
		for i := 0; i < n; i++ {
			m[4*i], m[4*i+1], m[4*i+2], m[4*i+3] = byte(i), byte(i>>8), byte(i>>16), 0x3f
		}
	}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		release()
	}()
	stand := &tensor.Tensor{DType: tensor.F32, Shape: []int{n}, Data: make([]byte, 4)}
	slot := func(i int, write bool) arg {
		return arg{t: stand, write: write, scratch: &stageSlot{chunk: bufs[i]}, n: int64(4 * n)}
	}
	const reps = 8
	run := func() (time.Duration, error) {
		t0 := time.Now()
		b.mu.Lock()
		for r := range reps {
			src, dst := r%2, 1-r%2
			args := [8]arg{1: slot(src, false), 2: slot(src, false), 3: slot(dst, true)}
			if err := b.launch(kernels.Eltwise, &args, []uint32{uint32(n), uint32(n), opCopy, 0}, grid1D(n, 256)); err != nil {
				b.mu.Unlock()
				return 0, err
			}
		}
		b.mu.Unlock()
		if err := b.Sync(); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}
	if _, err := run(); err != nil {
		return 0, fmt.Errorf("bandwidth probe: %w", err)
	}
	best := time.Duration(0)
	for range 5 {
		el, err := run()
		if err != nil {
			return 0, fmt.Errorf("bandwidth probe: %w", err)
		}
		if best == 0 || el < best {
			best = el
		}
	}
	if m := bufs[0].mem; m != nil {
		// An even number of copies ping-pongs the pattern back into
		// buffer 0 through buffer 1.
		for i := 0; i < n; i++ {
			if m[4*i] != byte(i) || m[4*i+1] != byte(i>>8) || m[4*i+2] != byte(i>>16) || m[4*i+3] != 0x3f {
				return 0, fmt.Errorf("bandwidth probe: the copies did not reproduce the data (value %d)", i)
			}
		}
	}
	return float64(2*4*n*reps) / best.Seconds(), nil
}
