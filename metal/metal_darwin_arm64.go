//go:build darwin && arm64

package metal

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"

	"mlxchat/metal/gpu"
	"mlxchat/metal/kernels"
	"mlxchat/tensor"
)

// Metal constants (MTLResourceOptions, MTLLanguageVersion, status).
const (
	storageModeShared  = 0
	languageVersion2_3 = 2<<16 | 3
	cbStatusError      = 5
	noCopyMinBytes     = 1 << 20 // smaller weights are copied
	commitEvery        = 64      // launches per command buffer
	pageSize           = 16384   // Apple silicon VM page
)

// mtlSize is MTLSize, passed by value.
type mtlSize struct{ w, h, d uint64 }

// msg holds objc_msgSend typed once per signature (faster than objc.ID.Send
// on the per-op path) and the selectors, registered once.
type msg struct {
	id        func(id objc.ID, sel objc.SEL) objc.ID
	u64       func(id objc.ID, sel objc.SEL) uint64
	void      func(id objc.ID, sel objc.SEL)
	str       func(id objc.ID, sel objc.SEL) string
	ptr       func(id objc.ID, sel objc.SEL) *byte
	obj       func(id objc.ID, sel objc.SEL, a objc.ID) objc.ID
	cstr      func(id objc.ID, sel objc.SEL, s string) objc.ID
	objErr    func(id objc.ID, sel objc.SEL, a objc.ID, err *objc.ID) objc.ID
	objObjErr func(id objc.ID, sel objc.SEL, a, b objc.ID, err *objc.ID) objc.ID
	lenOpt    func(id objc.ID, sel objc.SEL, n, opt uint64) objc.ID
	bytesOpt  func(id objc.ID, sel objc.SEL, p unsafe.Pointer, n, opt uint64) objc.ID
	noCopy    func(id objc.ID, sel objc.SEL, p uintptr, n, opt uint64, dealloc uintptr) objc.ID
	setBool   func(id objc.ID, sel objc.SEL, v bool)
	setU64    func(id objc.ID, sel objc.SEL, v uint64)
	setBuffer func(id objc.ID, sel objc.SEL, buf objc.ID, off, idx uint64)
	setBytes  func(id objc.ID, sel objc.SEL, p unsafe.Pointer, n, idx uint64)
	dispatch  func(id objc.ID, sel objc.SEL, groups, threads mtlSize)

	// send is objc_msgSend's address, for purego.SyscallN on the per-op
	// path (integer and pointer arguments only; MTLSize goes through
	// dispatch, whose struct arguments need purego's ABI handling).
	send uintptr

	poolPush func() uintptr
	poolPop  func(uintptr)

	sel struct {
		alloc, init, release, retain, new                                  objc.SEL
		stringWithUTF8String, localizedDescription, utf8String             objc.SEL
		newCommandQueue, newLibraryWithSource, newFunctionWithName         objc.SEL
		newComputePipelineState, maxTotalThreads, maxBufferLength, name    objc.SEL
		setFastMathEnabled, setLanguageVersion                             objc.SEL
		newBufferWithLength, newBufferWithBytes, newBufferNoCopy, contents objc.SEL
		commandBuffer, computeCommandEncoder, setComputePipelineState      objc.SEL
		setBuffer, setBytes, dispatchThreadgroups, endEncoding, commit     objc.SEL
		waitUntilCompleted, status, errorSel                               objc.SEL
	}
}

func loadMsg() (*msg, error) {
	lib, err := purego.Dlopen("/usr/lib/libobjc.A.dylib", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("metal: loading libobjc: %w", err)
	}
	send, err := purego.Dlsym(lib, "objc_msgSend")
	if err != nil {
		return nil, fmt.Errorf("metal: objc_msgSend: %w", err)
	}
	m := &msg{send: send}
	for _, f := range []any{&m.id, &m.u64, &m.void, &m.str, &m.ptr, &m.obj, &m.cstr, &m.objErr, &m.objObjErr,
		&m.lenOpt, &m.bytesOpt, &m.noCopy, &m.setBool, &m.setU64, &m.setBuffer, &m.setBytes, &m.dispatch} {
		purego.RegisterFunc(f, send)
	}
	for _, f := range []struct {
		ptr  any
		name string
	}{{&m.poolPush, "objc_autoreleasePoolPush"}, {&m.poolPop, "objc_autoreleasePoolPop"}} {
		sym, err := purego.Dlsym(lib, f.name)
		if err != nil {
			return nil, fmt.Errorf("metal: %s: %w", f.name, err)
		}
		purego.RegisterFunc(f.ptr, sym)
	}
	s := &m.sel
	for _, r := range []struct {
		p    *objc.SEL
		name string
	}{
		{&s.alloc, "alloc"}, {&s.init, "init"}, {&s.release, "release"}, {&s.retain, "retain"}, {&s.new, "new"},
		{&s.stringWithUTF8String, "stringWithUTF8String:"}, {&s.localizedDescription, "localizedDescription"},
		{&s.utf8String, "UTF8String"}, {&s.newCommandQueue, "newCommandQueue"},
		{&s.newLibraryWithSource, "newLibraryWithSource:options:error:"}, {&s.newFunctionWithName, "newFunctionWithName:"},
		{&s.newComputePipelineState, "newComputePipelineStateWithFunction:error:"},
		{&s.maxTotalThreads, "maxTotalThreadsPerThreadgroup"}, {&s.maxBufferLength, "maxBufferLength"}, {&s.name, "name"},
		{&s.setFastMathEnabled, "setFastMathEnabled:"}, {&s.setLanguageVersion, "setLanguageVersion:"},
		{&s.newBufferWithLength, "newBufferWithLength:options:"}, {&s.newBufferWithBytes, "newBufferWithBytes:length:options:"},
		{&s.newBufferNoCopy, "newBufferWithBytesNoCopy:length:options:deallocator:"}, {&s.contents, "contents"},
		{&s.commandBuffer, "commandBuffer"}, {&s.computeCommandEncoder, "computeCommandEncoder"},
		{&s.setComputePipelineState, "setComputePipelineState:"}, {&s.setBuffer, "setBuffer:offset:atIndex:"},
		{&s.setBytes, "setBytes:length:atIndex:"}, {&s.dispatchThreadgroups, "dispatchThreadgroups:threadsPerThreadgroup:"},
		{&s.endEncoding, "endEncoding"}, {&s.commit, "commit"}, {&s.waitUntilCompleted, "waitUntilCompleted"},
		{&s.status, "status"}, {&s.errorSel, "error"},
	} {
		*r.p = objc.RegisterName(r.name)
	}
	return m, nil
}

// mtlBuf is a Metal buffer and the offset of the caller's first byte in it
// (non-zero for no-copy buffers that start at a page boundary).
type mtlBuf struct {
	id  objc.ID
	off int64
}

// driver implements gpu.Driver on Metal. Every Objective-C call runs on one
// locked OS thread, inside an autorelease pool per call. Launches are
// recorded in Go and encoded into one command buffer per Sync.
type driver struct {
	m      *msg
	calls  chan func()
	done   chan struct{}
	dev    objc.ID
	queue  objc.ID
	pipes  [kernels.Count]objc.ID
	ops    []op
	name   string
	maxLen int64
}

// newDriver creates the system default Metal device and a command queue.
func newDriver() (*driver, error) {
	m, err := loadMsg()
	if err != nil {
		return nil, err
	}
	mtl, err := purego.Dlopen("/System/Library/Frameworks/Metal.framework/Metal", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("metal: loading Metal.framework: %w", err)
	}
	// A command-line process gets no default device unless CoreGraphics is
	// loaded; failing to load it only matters if the device is nil below.
	_, _ = purego.Dlopen("/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	var create func() objc.ID
	sym, err := purego.Dlsym(mtl, "MTLCreateSystemDefaultDevice")
	if err != nil {
		return nil, fmt.Errorf("metal: MTLCreateSystemDefaultDevice: %w", err)
	}
	purego.RegisterFunc(&create, sym)

	d := &driver{m: m, calls: make(chan func()), done: make(chan struct{})}
	go d.loop()
	d.do(func() {
		d.dev = create()
		if d.dev == 0 {
			err = errors.New("metal: no Metal device (MTLCreateSystemDefaultDevice returned nil)")
			return
		}
		d.name = m.str(m.id(d.dev, m.sel.name), m.sel.utf8String)
		d.maxLen = int64(m.u64(d.dev, m.sel.maxBufferLength))
		d.queue = m.id(d.dev, m.sel.newCommandQueue)
		if d.queue == 0 {
			err = errors.New("metal: newCommandQueue returned nil")
		}
	})
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// loop owns the OS thread all Metal calls run on.
func (d *driver) loop() {
	runtime.LockOSThread()
	for f := range d.calls {
		pool := d.m.poolPush()
		f()
		d.m.poolPop(pool)
		d.done <- struct{}{}
	}
}

// do runs f on the Metal thread and waits for it.
func (d *driver) do(f func()) {
	d.calls <- f
	<-d.done
}

func (d *driver) nsError(e objc.ID) string {
	if e == 0 {
		return "unknown error"
	}
	m := d.m
	return m.str(m.id(e, m.sel.localizedDescription), m.sel.utf8String)
}

// Name returns "metal".
func (d *driver) Name() string { return "metal" }

// Limits: offsets aligned to 256 bytes (safe for every address space),
// bindings up to the device's largest buffer.
func (d *driver) Limits() gpu.Limits {
	return gpu.Limits{OffsetAlign: 256, MaxRange: d.maxLen}
}

// NewBuffer returns a zeroed shared-storage buffer (unified memory: the
// host mapping is the GPU's memory, no copies).
func (d *driver) NewBuffer(size int) (gpu.Buf, []byte, error) {
	var b objc.ID
	var mem []byte
	d.do(func() {
		b = d.m.lenOpt(d.dev, d.m.sel.newBufferWithLength, uint64(size), storageModeShared)
		if b != 0 {
			mem = unsafe.Slice(d.m.ptr(b, d.m.sel.contents), size)
		}
	})
	if b == 0 {
		return nil, nil, fmt.Errorf("metal: newBufferWithLength(%d) failed", size)
	}
	clear(mem)
	return &mtlBuf{id: b}, mem, nil
}

// NewWeights wraps large 16-byte-aligned weights (mmap'd checkpoints) in a
// no-copy buffer over their enclosing pages; smaller or unaligned ones are
// copied into a shared buffer.
func (d *driver) NewWeights(data []byte) (gpu.Buf, error) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	var b objc.ID
	var off int64
	d.do(func() {
		if len(data) >= noCopyMinBytes && p%16 == 0 {
			start := p &^ (pageSize - 1)
			end := (p + uintptr(len(data)) + pageSize - 1) &^ (pageSize - 1)
			// The enclosing pages belong to the same mapping as data.
			b = d.m.noCopy(d.dev, d.m.sel.newBufferNoCopy, start, uint64(end-start), storageModeShared, 0)
			off = int64(p - start)
		}
		if b == 0 {
			b = d.m.bytesOpt(d.dev, d.m.sel.newBufferWithBytes, unsafe.Pointer(unsafe.SliceData(data)), uint64(len(data)), storageModeShared)
			off = 0
		}
	})
	runtime.KeepAlive(data)
	if b == 0 {
		return nil, fmt.Errorf("metal: no buffer for %d bytes of weights", len(data))
	}
	return &mtlBuf{id: b, off: off}, nil
}

// Release frees a buffer.
func (d *driver) Release(b gpu.Buf) {
	if mb, ok := b.(*mtlBuf); ok && mb.id != 0 {
		d.do(func() { d.m.void(mb.id, d.m.sel.release) })
		mb.id = 0
	}
}

// pipeline compiles kernel k's MSL (fast math off) on first use.
func (d *driver) pipeline(k kernels.ID) (objc.ID, error) {
	if d.pipes[k] != 0 {
		return d.pipes[k], nil
	}
	src, err := kernels.MSL(k)
	if err != nil {
		return 0, err
	}
	m := d.m
	nsString := objc.ID(objc.GetClass("NSString"))
	optClass := objc.ID(objc.GetClass("MTLCompileOptions"))
	if nsString == 0 || optClass == 0 {
		return 0, errors.New("metal: NSString or MTLCompileOptions class missing")
	}
	opts := m.id(optClass, m.sel.new)
	defer m.void(opts, m.sel.release)
	m.setBool(opts, m.sel.setFastMathEnabled, false)
	m.setU64(opts, m.sel.setLanguageVersion, languageVersion2_3)
	var nserr objc.ID
	lib := m.objObjErr(d.dev, m.sel.newLibraryWithSource, m.cstr(nsString, m.sel.stringWithUTF8String, src), opts, &nserr)
	if lib == 0 {
		return 0, fmt.Errorf("metal: compiling kernel %s: %s", k, d.nsError(nserr))
	}
	defer m.void(lib, m.sel.release)
	fn := m.obj(lib, m.sel.newFunctionWithName, m.cstr(nsString, m.sel.stringWithUTF8String, k.String()))
	if fn == 0 {
		return 0, fmt.Errorf("metal: kernel function %s not found in its library", k)
	}
	defer m.void(fn, m.sel.release)
	nserr = 0
	ps := m.objErr(d.dev, m.sel.newComputePipelineState, fn, &nserr)
	if ps == 0 {
		return 0, fmt.Errorf("metal: pipeline for %s: %s", k, d.nsError(nserr))
	}
	if max := m.u64(ps, m.sel.maxTotalThreads); max < uint64(k.Info().Local) {
		m.void(ps, m.sel.release)
		return 0, fmt.Errorf("metal: kernel %s needs %d threads per threadgroup, device allows %d", k, k.Info().Local, max)
	}
	d.pipes[k] = ps
	return ps, nil
}

// op is one recorded dispatch, encoded at Flush.
type op struct {
	k      kernels.ID
	params []byte
	bufs   [8]objc.ID
	offs   [8]uint64
	groups mtlSize
}

// Dispatch records a launch in Go memory only; Flush encodes every recorded
// launch in one trip to the Metal thread.
func (d *driver) Dispatch(k kernels.ID, params []byte, binds *[8]gpu.Binding, groups [3]int) error {
	o := op{k: k, params: append([]byte(nil), params...), groups: mtlSize{uint64(groups[0]), uint64(groups[1]), uint64(groups[2])}}
	for i := 1; i < 8; i++ {
		if binds[i].Buf == nil {
			continue
		}
		mb, ok := binds[i].Buf.(*mtlBuf)
		if !ok || mb.id == 0 {
			return fmt.Errorf("metal: binding %d of %s is not a live Metal buffer", i, k)
		}
		o.bufs[i], o.offs[i] = mb.id, uint64(mb.off+binds[i].Offset)
	}
	d.ops = append(d.ops, o)
	return nil
}

// Flush encodes the recorded launches into command buffers of commitEvery
// launches, each with one serial compute encoder (each dispatch sees the
// previous ones' writes), commits each as soon as it is full, waits for
// all, and reports the first command buffer error.
func (d *driver) Flush() error {
	if len(d.ops) == 0 {
		return nil
	}
	ops := d.ops
	d.ops = d.ops[:0]
	var err error
	d.do(func() {
		m := d.m
		for _, o := range ops { // compile before encoding: errors leave nothing half-built
			if _, err = d.pipeline(o.k); err != nil {
				return
			}
		}
		// Commit every commitEvery launches so the GPU starts while the
		// rest is encoded; a queue runs its command buffers in commit
		// order and tracks hazards on the (tracked) buffers between them.
		var cbs []objc.ID
		var cb, enc objc.ID
		var last objc.ID
		for i := range ops {
			if enc == 0 {
				if cb = m.id(d.queue, m.sel.commandBuffer); cb == 0 {
					err = errors.New("metal: cannot create a command buffer")
					break
				}
				if enc = m.id(cb, m.sel.computeCommandEncoder); enc == 0 {
					err = errors.New("metal: cannot create a compute encoder")
					break
				}
				cbs = append(cbs, cb)
				last = 0
			}
			o := &ops[i]
			if ps := d.pipes[o.k]; ps != last {
				purego.SyscallN(m.send, uintptr(enc), uintptr(m.sel.setComputePipelineState), uintptr(ps))
				last = ps
			}
			// o.params is heap memory owned by ops, alive past the call.
			purego.SyscallN(m.send, uintptr(enc), uintptr(m.sel.setBytes), uintptr(unsafe.Pointer(&o.params[0])), uintptr(len(o.params)), 0)
			for j := 1; j < 8; j++ {
				if o.bufs[j] != 0 {
					purego.SyscallN(m.send, uintptr(enc), uintptr(m.sel.setBuffer), uintptr(o.bufs[j]), uintptr(o.offs[j]), uintptr(j))
				}
			}
			m.dispatch(enc, m.sel.dispatchThreadgroups, o.groups, mtlSize{uint64(o.k.Info().Local), 1, 1})
			if (i+1)%commitEvery == 0 || i == len(ops)-1 {
				m.void(enc, m.sel.endEncoding)
				m.void(cb, m.sel.commit)
				enc = 0
			}
		}
		if enc != 0 { // stopped by an error: close what was opened
			m.void(enc, m.sel.endEncoding)
			m.void(cb, m.sel.commit)
		}
		for _, c := range cbs {
			m.void(c, m.sel.waitUntilCompleted)
			if m.u64(c, m.sel.status) == cbStatusError && err == nil {
				err = fmt.Errorf("metal: command buffer failed: %s", d.nsError(m.id(c, m.sel.errorSel)))
			}
		}
		// cb and enc are autoreleased: the pool around this call frees them.
	})
	runtime.KeepAlive(ops)
	return err
}

// Close releases the pipelines, the queue and the device and stops the
// Metal thread.
func (d *driver) Close() error {
	if d.calls == nil {
		return nil
	}
	d.do(func() {
		m := d.m
		for k, ps := range d.pipes {
			if ps != 0 {
				m.void(ps, m.sel.release)
				d.pipes[k] = 0
			}
		}
		if d.queue != 0 {
			m.void(d.queue, m.sel.release)
		}
		if d.dev != 0 {
			m.void(d.dev, m.sel.release)
		}
	})
	close(d.calls)
	d.calls = nil
	return nil
}

func openMetal() (*gpu.Backend, error) {
	d, err := newDriver()
	if err != nil {
		return nil, err
	}
	return gpu.New(d), nil
}

func openMetalBackend() (tensor.Backend, error) {
	b, err := openMetal()
	if err != nil {
		return nil, err
	}
	return b, nil
}
