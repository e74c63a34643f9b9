//go:build linux

package mtlfake_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"mlxchat/metal/kernels"
	"mlxchat/metal/mtl"
	"mlxchat/metal/mtlfake"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// kit is a fake device with the eltwise pipeline, for calling the Metal
// interface directly the way a driver would (or should not).
type kit struct {
	dev   *mtlfake.Device
	pipe  mtl.Pipeline
	queue mtl.CommandQueue
	page  int
}

func newKit(t *testing.T) *kit {
	t.Helper()
	dev := device(t, mtlfake.Options{})
	src, err := kernels.MSL(kernels.Eltwise)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := dev.NewLibrary(src)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := lib.NewFunction("eltwise")
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := dev.NewComputePipeline(fn)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := dev.NewCommandQueue()
	return &kit{dev: dev, pipe: pipe, queue: q, page: os.Getpagesize()}
}

// params is eltwise's parameter block: offsets, n, nb, op (add), scale.
func params(n int) []byte {
	p := make([]byte, 4*(kernels.ParamHeader+4))
	binary.LittleEndian.PutUint32(p[4*8:], uint32(n))
	binary.LittleEndian.PutUint32(p[4*9:], uint32(n))
	return p
}

// add encodes dst = a + b over n floats into cb.
func (k *kit) add(cb mtl.CommandBuffer, a, b, dst mtl.Buffer, n int) {
	enc, _ := cb.NewComputeEncoder(mtl.DispatchSerial)
	k.encodeAdd(enc, a, b, dst, n)
	enc.EndEncoding()
}

// encodeAdd encodes dst = a + b over n floats into enc.
func (k *kit) encodeAdd(enc mtl.ComputeEncoder, a, b, dst mtl.Buffer, n int) {
	enc.SetPipeline(k.pipe)
	enc.SetBytes(params(n), 0)
	enc.SetBuffer(a, 0, 1)
	enc.SetBuffer(b, 0, 2)
	enc.SetBuffer(dst, 0, 3)
	enc.DispatchThreadgroups(mtl.Size{Width: uint64((n + 255) / 256), Height: 1, Depth: 1}, mtl.Size{Width: 256, Height: 1, Depth: 1})
}

// chain encodes d1 = a + b, then d2 = d1 + a, into one concurrent
// encoder, with a memory barrier between them when barrier is set.
func (k *kit) chain(cb mtl.CommandBuffer, a, b, d1, d2 mtl.Buffer, n int, barrier bool) {
	enc, _ := cb.NewComputeEncoder(mtl.DispatchConcurrent)
	k.encodeAdd(enc, a, b, d1, n)
	if barrier {
		enc.MemoryBarrier(mtl.BarrierBuffers)
	}
	k.encodeAdd(enc, d1, a, d2, n)
	enc.EndEncoding()
}

// paramsAt encodes d = a + a with the parameter block read from pbuf at
// offset off.
func (k *kit) paramsAt(cb mtl.CommandBuffer, pbuf mtl.Buffer, off int, a, d mtl.Buffer) {
	enc, _ := cb.NewComputeEncoder(mtl.DispatchConcurrent)
	enc.SetPipeline(k.pipe)
	enc.SetBuffer(pbuf, off, 0)
	enc.SetBuffer(a, 0, 1)
	enc.SetBuffer(a, 0, 2)
	enc.SetBuffer(d, 0, 3)
	enc.DispatchThreadgroups(mtl.Size{Width: 1, Height: 1, Depth: 1}, mtl.Size{Width: 256, Height: 1, Depth: 1})
	enc.EndEncoding()
}

func (k *kit) buf(t *testing.T, vals ...float32) mtl.Buffer {
	t.Helper()
	b, err := k.dev.NewBuffer(4*len(vals), mtl.StorageShared)
	if err != nil {
		t.Fatal(err)
	}
	copy(unsafe.Slice((*float32)(b.Contents()), len(vals)), vals)
	return b
}

// anon maps n pages of anonymous memory.
func anon(t *testing.T, pages int) []byte {
	t.Helper()
	m, err := unix.Mmap(-1, 0, pages*os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFakeRunsKernels: a correct sequence of calls runs the kernel on
// Vulkan, sees no violation, and shared buffers show the results.
func TestFakeRunsKernels(t *testing.T) {
	k := newKit(t)
	a, b, dst := k.buf(t, 1, 2, 3), k.buf(t, 10, 20, 30), k.buf(t, 0, 0, 0)
	k.dev.Pool(func() {
		cb, _ := k.queue.NewCommandBuffer()
		k.add(cb, a, b, dst, 3)
		cb.Commit()
		cb.WaitUntilCompleted()
		if err := cb.Err(); err != nil {
			t.Fatal(err)
		}
	})
	if got := unsafe.Slice((*float32)(dst.Contents()), 3); got[0] != 11 || got[1] != 22 || got[2] != 33 {
		t.Errorf("a + b = %v, want [11 22 33]", got)
	}
	// A no-copy buffer over mapped memory is mirrored in, and the results
	// written back to the caller's memory.
	m := anon(t, 1)
	defer unix.Munmap(m)
	nc, err := k.dev.NewBufferNoCopy(unsafe.Pointer(&m[0]), len(m), mtl.StorageShared)
	if err != nil {
		t.Fatal(err)
	}
	k.dev.Pool(func() {
		cb, _ := k.queue.NewCommandBuffer()
		k.add(cb, a, b, nc, 3)
		cb.Commit()
		cb.WaitUntilCompleted()
	})
	if got := math.Float32frombits(binary.LittleEndian.Uint32(m[8:])); got != 33 {
		t.Errorf("no-copy result %v, want 33", got)
	}
	nc.Release()
	// The plan path: one concurrent encoder with a barrier between
	// dependent dispatches, parameter blocks read from a buffer at
	// 256-byte offsets, the command buffer retained past its pool and
	// waited for outside it.
	d2 := k.buf(t, 0, 0, 0)
	pbuf, err := k.dev.NewBuffer(512, mtl.StorageShared|mtl.HazardUntracked)
	if err != nil {
		t.Fatal(err)
	}
	copy(unsafe.Slice((*byte)(pbuf.Contents()), 512)[256:], params(3))
	var cb mtl.CommandBuffer
	k.dev.Pool(func() {
		cb, _ = k.queue.NewCommandBuffer()
		cb.Retain()
		k.chain(cb, a, b, dst, d2, 3, true)
		k.paramsAt(cb, pbuf, 256, d2, dst)
		cb.Commit()
	})
	cb.WaitUntilCompleted()
	if err := cb.Err(); err != nil {
		t.Fatal(err)
	}
	cb.Release()
	if got := unsafe.Slice((*float32)(dst.Contents()), 3); got[0] != 24 || got[1] != 48 || got[2] != 72 {
		t.Errorf("2((a + b) + a) = %v, want [24 48 72]", got)
	}
	if st := k.dev.Stats(); st.ConcurrentEncoders != 2 || st.Barriers != 1 || st.Groups != 0 || st.Compared != 3 {
		t.Errorf("stats %+v: want 2 concurrent encoders, 1 barrier, no group of two, every command buffer compared", st)
	}
	for _, x := range []mtl.Buffer{a, b, dst, d2, pbuf} {
		x.Release()
	}
	if v := k.dev.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

// TestFakeCatchesViolations: each of Apple's contracts that the fake
// checks is reported when broken, with the calls a faulty driver makes.
func TestFakeCatchesViolations(t *testing.T) {
	cases := []struct {
		name string
		do   func(t *testing.T, k *kit)
		want string
	}{
		{"no-copy pointer off the page", func(t *testing.T, k *kit) {
			m := anon(t, 2)
			defer unix.Munmap(m)
			k.dev.NewBufferNoCopy(unsafe.Pointer(&m[16]), k.page, mtl.StorageShared)
		}, "multiples of the"},
		{"no-copy length off the page", func(t *testing.T, k *kit) {
			m := anon(t, 2)
			defer unix.Munmap(m)
			k.dev.NewBufferNoCopy(unsafe.Pointer(&m[0]), k.page+100, mtl.StorageShared)
		}, "multiples of the"},
		{"no-copy over unmapped pages (a page size rounded past the mapping)", func(t *testing.T, k *kit) {
			m := anon(t, 4)
			defer unix.Munmap(m)
			// Unmap the second page: the range below starts on it.
			if _, _, e := unix.Syscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(&m[k.page])), uintptr(k.page), 0); e != 0 {
				t.Fatal(e)
			}
			k.dev.NewBufferNoCopy(unsafe.Pointer(&m[k.page]), 2*k.page, mtl.StorageShared)
		}, "is not mapped memory"},
		{"memory unmapped before the no-copy buffer is released", func(t *testing.T, k *kit) {
			m := anon(t, 1)
			b, err := k.dev.NewBufferNoCopy(unsafe.Pointer(&m[0]), len(m), mtl.StorageShared)
			if err != nil {
				t.Fatal(err)
			}
			unix.Munmap(m)
			b.Release()
		}, "released after its memory was unmapped"},
		{"memory unmapped while a command buffer uses it", func(t *testing.T, k *kit) {
			m := anon(t, 1)
			b, _ := k.dev.NewBufferNoCopy(unsafe.Pointer(&m[0]), len(m), mtl.StorageShared)
			x := k.buf(t, 1, 2)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				k.add(cb, b, x, x, 2)
				cb.Commit()
				unix.Munmap(m)
				cb.WaitUntilCompleted()
			})
		}, "after the memory of a no-copy buffer it uses was unmapped"},
		{"buffer released before its command buffer completed", func(t *testing.T, k *kit) {
			a, d := k.buf(t, 1, 2), k.buf(t, 0, 0)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				k.add(cb, a, a, d, 2)
				cb.Commit()
				a.Release()
				cb.WaitUntilCompleted()
			})
		}, "released while 1 command buffers using it have not completed"},
		{"declared buffer index not bound", func(t *testing.T, k *kit) {
			a := k.buf(t, 1)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				enc, _ := cb.NewComputeEncoder(mtl.DispatchSerial)
				enc.SetPipeline(k.pipe)
				enc.SetBytes(params(1), 0)
				enc.SetBuffer(a, 0, 1)
				enc.SetBuffer(a, 0, 3)
				enc.DispatchThreadgroups(mtl.Size{Width: 1, Height: 1, Depth: 1}, mtl.Size{Width: 256, Height: 1, Depth: 1})
				enc.EndEncoding()
			})
		}, "[[buffer(2)]] is declared but not bound"},
		{"parameter block missing", func(t *testing.T, k *kit) {
			a := k.buf(t, 1)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				enc, _ := cb.NewComputeEncoder(mtl.DispatchSerial)
				enc.SetPipeline(k.pipe)
				for i := 1; i <= 3; i++ {
					enc.SetBuffer(a, 0, i)
				}
				enc.DispatchThreadgroups(mtl.Size{Width: 1, Height: 1, Depth: 1}, mtl.Size{Width: 256, Height: 1, Depth: 1})
				enc.EndEncoding()
			})
		}, "[[buffer(0)]] not set"},
		{"misaligned offset", func(t *testing.T, k *kit) {
			a := k.buf(t, make([]float32, 64)...)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				enc, _ := cb.NewComputeEncoder(mtl.DispatchSerial)
				enc.SetPipeline(k.pipe)
				enc.SetBytes(params(1), 0)
				enc.SetBuffer(a, 8, 1)
				enc.SetBuffer(a, 0, 2)
				enc.SetBuffer(a, 0, 3)
				enc.DispatchThreadgroups(mtl.Size{Width: 1, Height: 1, Depth: 1}, mtl.Size{Width: 256, Height: 1, Depth: 1})
				enc.EndEncoding()
			})
		}, "offset 8, not a multiple of 16"},
		{"threadgroup above the pipeline maximum", func(t *testing.T, k *kit) {
			a := k.buf(t, 1)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				enc, _ := cb.NewComputeEncoder(mtl.DispatchSerial)
				enc.SetPipeline(k.pipe)
				enc.SetBytes(params(1), 0)
				for i := 1; i <= 3; i++ {
					enc.SetBuffer(a, 0, i)
				}
				enc.DispatchThreadgroups(mtl.Size{Width: 1, Height: 1, Depth: 1}, mtl.Size{Width: 2048, Height: 1, Depth: 1})
				enc.EndEncoding()
			})
		}, "threadgroup of 2048 threads, pipeline allows 1..1024"},
		{"threadgroup other than the kernel's", func(t *testing.T, k *kit) {
			a := k.buf(t, 1)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				enc, _ := cb.NewComputeEncoder(mtl.DispatchSerial)
				enc.SetPipeline(k.pipe)
				enc.SetBytes(params(1), 0)
				for i := 1; i <= 3; i++ {
					enc.SetBuffer(a, 0, i)
				}
				enc.DispatchThreadgroups(mtl.Size{Width: 1, Height: 1, Depth: 1}, mtl.Size{Width: 64, Height: 1, Depth: 1})
				enc.EndEncoding()
			})
		}, "the kernel is written for (256, 1, 1)"},
		{"setBytes over 4 KB", func(t *testing.T, k *kit) {
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				enc, _ := cb.NewComputeEncoder(mtl.DispatchSerial)
				enc.SetBytes(make([]byte, 5000), 0)
				enc.EndEncoding()
			})
		}, "setBytes of 5000 bytes"},
		{"command buffer outside an autorelease pool", func(t *testing.T, k *kit) {
			k.queue.NewCommandBuffer()
		}, "outside an autorelease pool"},
		{"command buffer used after its pool drained", func(t *testing.T, k *kit) {
			var cb mtl.CommandBuffer
			k.dev.Pool(func() { cb, _ = k.queue.NewCommandBuffer() })
			cb.Commit()
		}, "after its autorelease pool drained"},
		{"dependent dispatches of a concurrent encoder without a barrier", func(t *testing.T, k *kit) {
			a, b, d1, d2 := k.buf(t, 1, 2, 3), k.buf(t, 10, 20, 30), k.buf(t, 0, 0, 0), k.buf(t, 0, 0, 0)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				k.chain(cb, a, b, d1, d2, 3, false)
				cb.Commit()
				cb.WaitUntilCompleted()
			})
		}, "missing memory barrier: dispatch 0 (eltwise) and dispatch 1 (eltwise)"},
		{"a dispatch overwriting what another of its group reads", func(t *testing.T, k *kit) {
			a, b, d1 := k.buf(t, 1, 2, 3), k.buf(t, 10, 20, 30), k.buf(t, 0, 0, 0)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				enc, _ := cb.NewComputeEncoder(mtl.DispatchConcurrent)
				k.encodeAdd(enc, a, b, d1, 3) // reads a
				k.encodeAdd(enc, b, b, a, 3)  // writes a
				enc.EndEncoding()
				cb.Commit()
				cb.WaitUntilCompleted()
			})
		}, "missing memory barrier"},
		{"a GPU write to an untracked buffer", func(t *testing.T, k *kit) {
			a := k.buf(t, 1, 2)
			u, _ := k.dev.NewBuffer(64, mtl.StorageShared|mtl.HazardUntracked)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				k.add(cb, a, a, u, 2)
				cb.Commit()
				cb.WaitUntilCompleted()
			})
		}, "the GPU wrote buffer #2 (shared untracked, 64 bytes) "},
		{"private storage", func(t *testing.T, k *kit) {
			k.dev.NewBuffer(64, 2<<4)
		}, "storage mode 2, not shared"},
		{"parameter block at an offset off 256 bytes", func(t *testing.T, k *kit) {
			a, p := k.buf(t, 1, 2), k.buf(t, make([]float32, 128)...)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				k.paramsAt(cb, p, 16, a, a)
			})
		}, "[[buffer(0)]] (constant) bound at offset 16, not a multiple of 256"},
		{"parameter block past the end of its buffer", func(t *testing.T, k *kit) {
			a, p := k.buf(t, 1, 2), k.buf(t, make([]float32, 72)...)
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				k.paramsAt(cb, p, 256, a, a)
			})
		}, "runs past the end of buffer #2"},
		{"parameter block rewritten before completion", func(t *testing.T, k *kit) {
			a, d, p := k.buf(t, 1, 2), k.buf(t, 0, 0), k.buf(t, make([]float32, 64)...)
			copy(unsafe.Slice((*byte)(p.Contents()), 256), params(2))
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				k.paramsAt(cb, p, 0, a, d)
				cb.Commit()
				*(*uint32)(unsafe.Add(p.Contents(), 4*8)) = 1
				cb.WaitUntilCompleted()
			})
		}, "parameter block in buffer #3 (shared, 256 bytes) changed after the command buffer was committed"},
		{"setBufferOffset where nothing is bound", func(t *testing.T, k *kit) {
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				enc, _ := cb.NewComputeEncoder(mtl.DispatchConcurrent)
				enc.SetBufferOffset(256, 4)
				enc.EndEncoding()
			})
		}, "setBufferOffset at index 4, where no buffer is bound"},
		{"barrier without the buffer scope", func(t *testing.T, k *kit) {
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				enc, _ := cb.NewComputeEncoder(mtl.DispatchConcurrent)
				enc.MemoryBarrier(2)
				enc.EndEncoding()
			})
		}, "scope 2 does not include buffers"},
		{"command buffer waited for after its pool drained, not retained", func(t *testing.T, k *kit) {
			a, d := k.buf(t, 1), k.buf(t, 0)
			var cb mtl.CommandBuffer
			k.dev.Pool(func() {
				cb, _ = k.queue.NewCommandBuffer()
				k.add(cb, a, a, d, 1)
				cb.Commit()
			})
			cb.WaitUntilCompleted()
		}, "waitUntilCompleted on a command buffer after its autorelease pool drained (it was not retained)"},
		{"command buffer released more often than retained", func(t *testing.T, k *kit) {
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				cb.Retain()
				cb.Release()
				cb.Release()
			})
		}, "released more often than retained"},
		{"command buffer retained and never released", func(t *testing.T, k *kit) {
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				cb.Retain()
			})
			k.dev.Release()
		}, "1 command buffers retained and never released"},
		{"encoder used after its pool drained", func(t *testing.T, k *kit) {
			var enc mtl.ComputeEncoder
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				cb.Retain()
				enc, _ = cb.NewComputeEncoder(mtl.DispatchConcurrent)
			})
			enc.EndEncoding()
		}, "endEncoding on an encoder after its autorelease pool drained"},
		{"commit with an open encoder", func(t *testing.T, k *kit) {
			k.dev.Pool(func() {
				cb, _ := k.queue.NewCommandBuffer()
				cb.NewComputeEncoder(mtl.DispatchSerial)
				cb.Commit()
				cb.WaitUntilCompleted()
			})
		}, "encoder not ended"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := newKit(t)
			c.do(t, k)
			v := k.dev.Violations()
			for _, s := range v {
				if strings.Contains(s, c.want) {
					t.Logf("caught: %s", s)
					return
				}
			}
			t.Errorf("violations %q, want one containing %q", v, c.want)
		})
	}
}

// TestMappedWeightsSplit: a weight region larger than maxBufferLength is
// wrapped in windows below that length, overlapping by half, and a matrix
// crossing window boundaries multiplies as on tensor/cpu (its row chunks
// each bound inside one window).
func TestMappedWeightsSplit(t *testing.T) {
	const maxLen = 16 << 20
	g, dev := host(t, mtlfake.Options{MaxBufferLength: maxLen})
	region := anon(t, (40<<20)/os.Getpagesize())
	defer unix.Munmap(region)
	const out, in = 3072, 1024 // 12 MiB of F32 at 6 MiB: crosses 8 and 16 MiB
	off := 6 << 20
	r := rand.New(rand.NewPCG(7, 7))
	wv := unsafe.Slice((*float32)(unsafe.Pointer(&region[off])), out*in)
	for i := range wv {
		wv[i] = float32(r.NormFloat64())
	}
	wt, err := tensor.FromBytes(tensor.F32, []int{out, in}, region[off:off+4*out*in])
	if err != nil {
		t.Fatal(err)
	}
	w := &tensor.Matrix{Out: out, In: in, W: wt}
	if err := g.MapWeights(region); err != nil {
		t.Fatal(err)
	}
	if n := dev.Stats().NoCopyBuffers; n != 4 {
		t.Errorf("%d no-copy windows over 40 MiB with a 16 MiB maxBufferLength, want 4", n)
	}
	x := g.Alloc(2, in)
	xv := x.F32()
	for i := range xv {
		xv[i] = float32(r.NormFloat64())
	}
	dst := g.Alloc(2, out)
	if err := g.MatMul(dst, x, w); err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(); err != nil {
		t.Fatal(err)
	}
	c := cpu.New(1)
	defer c.Close()
	want := tensor.New(tensor.F32, 2, out)
	xc, _ := tensor.FromF32(append([]float32(nil), xv...), 2, in)
	if err := c.MatMul(want, xc, w); err != nil {
		t.Fatal(err)
	}
	for i, v := range want.F32() {
		if d := math.Abs(float64(dst.F32()[i] - v)); d > 1e-3*(1+math.Abs(float64(v))) {
			t.Fatalf("[%d] = %v, cpu %v", i, dst.F32()[i], v)
		}
	}
	if st := dev.Stats(); st.CopiedBytes != 0 {
		t.Errorf("%d weight bytes copied, want the matrix bound in place", st.CopiedBytes)
	}
	if err := g.UnmapWeights(region); err != nil {
		t.Fatal(err)
	}
}
