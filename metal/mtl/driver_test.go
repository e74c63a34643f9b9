package mtl

import (
	"testing"
	"unsafe"

	"mlxchat/metal/gpu"
	"mlxchat/metal/kernels"
)

// nop is a Device whose objects do nothing and allocate nothing per call,
// so allocations measured around Driver are Driver's own.
type nop struct {
	mem        []byte
	encoded    int
	commits    int
	barriers   int
	concurrent int
	setBuffers int
	retains    int
	releases   int
}

func (n *nop) Name() string                    { return "nop" }
func (n *nop) SupportsFamily(f GPUFamily) bool { return f == FamilyApple7 }
func (n *nop) MaxBufferLength() int            { return 1 << 30 }
func (n *nop) MaxThreadgroupMemoryLength() int { return 32 << 10 }
func (n *nop) NewBuffer(l int, _ ResourceOptions) (Buffer, error) {
	return &nopBuf{make([]byte, l)}, nil
}
func (n *nop) NewBufferWithBytes(b []byte, _ ResourceOptions) (Buffer, error) {
	return &nopBuf{append([]byte(nil), b...)}, nil
}
func (n *nop) NewBufferNoCopy(p unsafe.Pointer, l int, _ ResourceOptions) (Buffer, error) {
	return &nopBuf{unsafe.Slice((*byte)(p), l)}, nil
}
func (n *nop) NewLibrary(string) (Library, error)            { return nopObj{}, nil }
func (n *nop) NewComputePipeline(Function) (Pipeline, error) { return nopObj{}, nil }
func (n *nop) NewCommandQueue() (CommandQueue, error)        { return &nopQueue{n}, nil }
func (n *nop) Pool(f func())                                 { f() }
func (n *nop) Release()                                      {}

type nopBuf struct{ b []byte }

func (b *nopBuf) Contents() unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b.b)) }
func (b *nopBuf) Length() int              { return len(b.b) }
func (b *nopBuf) Release()                 {}

type nopObj struct{}

func (nopObj) NewFunction(string) (Function, error) { return nopObj{}, nil }
func (nopObj) Release()                             {}
func (nopObj) MaxTotalThreadsPerThreadgroup() int   { return 1024 }
func (nopObj) StaticThreadgroupMemoryLength() int   { return 0 }

type nopQueue struct{ n *nop }

func (q *nopQueue) NewCommandBuffer() (CommandBuffer, error) { return q, nil }
func (q *nopQueue) Release()                                 { q.n.releases++ }
func (q *nopQueue) NewComputeEncoder(t DispatchType) (ComputeEncoder, error) {
	if t == DispatchConcurrent {
		q.n.concurrent++
	}
	return q, nil
}
func (q *nopQueue) Retain()                         { q.n.retains++ }
func (q *nopQueue) Commit()                         { q.n.commits++ }
func (q *nopQueue) WaitUntilCompleted()             {}
func (q *nopQueue) Err() error                      { return nil }
func (q *nopQueue) SetPipeline(Pipeline)            {}
func (q *nopQueue) SetBytes([]byte, int)            {}
func (q *nopQueue) SetBuffer(Buffer, int, int)      { q.n.setBuffers++ }
func (q *nopQueue) SetBufferOffset(int, int)        {}
func (q *nopQueue) MemoryBarrier(BarrierScope)      { q.n.barriers++ }
func (q *nopQueue) DispatchThreadgroups(Size, Size) { q.n.encoded++ }
func (q *nopQueue) EndEncoding()                    {}

// TestDispatchAllocatesNothing: recording and encoding a dispatch costs no
// allocation once the driver's buffers have grown (the old binding went
// through purego's reflection for every dispatchThreadgroups call).
func TestDispatchAllocatesNothing(t *testing.T) {
	n := &nop{}
	d, err := Open(n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	buf, _, err := d.NewBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	binds := [8]gpu.Binding{1: {Buf: buf, Size: 4096}, 2: {Buf: buf, Offset: 256, Size: 1024}}
	params := make([]byte, 48)
	step := func(ops int) {
		for range ops {
			if err := d.Dispatch(kernels.Eltwise, params, &binds, [3]int{4, 1, 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	step(1000) // grow the op and parameter slices
	few := testing.AllocsPerRun(20, func() { step(10) })
	many := testing.AllocsPerRun(20, func() { step(1000) })
	t.Logf("allocations per step: %v (10 dispatches), %v (1000)", few, many)
	if many > few || many > 2 {
		t.Errorf("%v allocations for a step of 10 dispatches, %v for 1000: want a constant of at most 2", few, many)
	}
	if n.commits < 1000/commitEvery {
		t.Errorf("%d commits for 1000 dispatches, want one per %d", n.commits, commitEvery)
	}
}

// TestDispatchRejectsForeignBuffers: a binding that is not a live Metal
// buffer of this driver is an error, not a crash in the Objective-C
// runtime.
func TestDispatchRejectsForeignBuffers(t *testing.T) {
	d, err := Open(&nop{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b, _, _ := d.NewBuffer(64)
	d.Release(b)
	for _, bad := range []gpu.Buf{"not a buffer", b} {
		binds := [8]gpu.Binding{1: {Buf: bad, Size: 64}}
		if err := d.Dispatch(kernels.Eltwise, make([]byte, 48), &binds, [3]int{1, 1, 1}); err == nil {
			t.Errorf("binding %v: want an error", bad)
		}
	}
	if err := d.Dispatch(kernels.Eltwise, make([]byte, SetBytesLimit+4), &[8]gpu.Binding{}, [3]int{1, 1, 1}); err == nil {
		t.Error("parameter block over setBytes' limit: want an error")
	}
	if err := d.UnmapWeights(make([]byte, 4096)); err == nil {
		t.Error("unmapping a region never mapped: want an error")
	}
}

// TestPlanRunsAsOneCommandBuffer: a plan runs as one retained command
// buffer with one concurrent encoder, a memory barrier exactly before the
// launches that ask for one, buffers bound again only where they change,
// and no allocation per run; parameter blocks off the 256-byte alignment
// are refused.
func TestPlanRunsAsOneCommandBuffer(t *testing.T) {
	n := &nop{}
	d, err := Open(n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	x, _, _ := d.NewBuffer(1 << 16)
	y, _, _ := d.NewBuffer(1 << 16)
	if d.ParamAlign() != 256 {
		t.Fatalf("ParamAlign %d, want 256", d.ParamAlign())
	}
	var launches []gpu.Launch
	barriers := 0
	for i := range 100 {
		a, b := x, y
		if i%2 == 1 {
			a, b = y, x
		}
		l := gpu.Launch{Kernel: kernels.Eltwise, Groups: [3]int{1, 1, 1}, Params: 256 * i, ParamSize: 48, Barrier: i%3 == 0}
		l.Binds[1], l.Binds[2], l.Binds[3] = gpu.Binding{Buf: a, Size: 1 << 16}, gpu.Binding{Buf: a, Size: 1 << 16}, gpu.Binding{Buf: b, Size: 1 << 16}
		if l.Barrier && i > 0 {
			barriers++
		}
		launches = append(launches, l)
	}
	p, mem, err := d.NewPlan(launches, 256*100)
	if err != nil {
		t.Fatal(err)
	}
	if len(mem) != 256*100 {
		t.Fatalf("parameter mapping of %d bytes, want %d", len(mem), 256*100)
	}
	run := func() {
		if err := d.RunPlan(p); err != nil {
			t.Fatal(err)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n.commits != 1 || n.concurrent != 1 || n.barriers != barriers || n.encoded != 100 || n.retains != 1 || n.releases != 1 {
		t.Errorf("one run: %d commits, %d concurrent encoders, %d barriers (want %d), %d dispatches, %d retains, %d releases", n.commits, n.concurrent, n.barriers, barriers, n.encoded, n.retains, n.releases)
	}
	// Index 0 once, then slots 1-3 whenever the buffer changes (every
	// launch: x and y alternate).
	if n.setBuffers != 1+3*100 {
		t.Errorf("%d setBuffer calls", n.setBuffers)
	}
	if a := testing.AllocsPerRun(20, run); a != 0 {
		t.Errorf("%v allocations per plan run, want 0", a)
	}
	d.ReleasePlan(p)
	if err := d.RunPlan(p); err == nil {
		t.Error("RunPlan of a released plan: want an error")
	}
	bad := append([]gpu.Launch(nil), launches...)
	bad[7].Params = 7 * 16
	if _, _, err := d.NewPlan(bad, 256*100); err == nil {
		t.Error("a parameter block at a 16-byte offset: want an error")
	}
	bad[7].Params = 256 * 100
	if _, _, err := d.NewPlan(bad, 256*100); err == nil {
		t.Error("a parameter block past the parameter buffer: want an error")
	}
}

// TestParamStructSizes: the parameter struct size read from each kernel's
// MSL is the kernel table's words for plain kernels, and for the fused
// kernels the words plus their segment table and tail program, within
// setBytes' limit.
func TestParamStructSizes(t *testing.T) {
	for id := kernels.ID(0); id < kernels.Count; id++ {
		src, err := kernels.MSL(id)
		if err != nil {
			t.Fatal(err)
		}
		n, err := paramStructSize(src)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		words := 4 * (kernels.ParamHeader + id.Info().Params)
		if id.Info().Program && (n <= words || n > SetBytesLimit) || !id.Info().Program && n != words {
			t.Errorf("%s: parameter struct of %d bytes, %d bytes of words (program %v)", id, n, words, id.Info().Program)
		}
	}
	for _, bad := range []string{"kernel void x()", "\nstruct Params\n{\n    uint a;\n", "\nstruct Params\n{\n    half a;\n};"} {
		if _, err := paramStructSize(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// TestWeightHeap: weights written into a weight buffer land at their
// offset; a write past its end or into another kind of buffer fails.
func TestWeightHeap(t *testing.T) {
	d, err := Open(&nop{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	w, err := d.NewWeightBuffer(1024)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteWeights(w, 256, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if got := w.(*buffer).mem[256:259]; got[0] != 1 || got[2] != 3 {
		t.Errorf("weights read back %v", got)
	}
	if err := d.WriteWeights(w, 1020, make([]byte, 8)); err == nil {
		t.Error("a write past the buffer: want an error")
	}
	act, _, _ := d.NewBuffer(64)
	if err := d.WriteWeights(act, 0, []byte{1}); err == nil {
		t.Error("weights into an activation buffer: want an error")
	}
	d.Release(w)
	d.Release(act)
}
