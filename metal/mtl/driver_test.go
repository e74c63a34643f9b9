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
	mem     []byte
	encoded int
	commits int
}

func (n *nop) Name() string                    { return "nop" }
func (n *nop) SupportsFamily(f GPUFamily) bool { return f == FamilyApple7 }
func (n *nop) MaxBufferLength() int            { return 1 << 30 }
func (n *nop) MaxThreadgroupMemoryLength() int { return 32 << 10 }
func (n *nop) NewBuffer(l int) (Buffer, error) { return &nopBuf{make([]byte, l)}, nil }
func (n *nop) NewBufferWithBytes(b []byte) (Buffer, error) {
	return &nopBuf{append([]byte(nil), b...)}, nil
}
func (n *nop) NewBufferNoCopy(p unsafe.Pointer, l int) (Buffer, error) {
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

func (q *nopQueue) NewCommandBuffer() (CommandBuffer, error)   { return q, nil }
func (q *nopQueue) Release()                                   {}
func (q *nopQueue) NewComputeEncoder() (ComputeEncoder, error) { return q, nil }
func (q *nopQueue) Commit()                                    { q.n.commits++ }
func (q *nopQueue) WaitUntilCompleted()                        {}
func (q *nopQueue) Err() error                                 { return nil }
func (q *nopQueue) SetPipeline(Pipeline)                       {}
func (q *nopQueue) SetBytes([]byte, int)                       {}
func (q *nopQueue) SetBuffer(Buffer, int, int)                 {}
func (q *nopQueue) DispatchThreadgroups(Size, Size)            { q.n.encoded++ }
func (q *nopQueue) EndEncoding()                               {}

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
