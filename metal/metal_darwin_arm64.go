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
	"mlxchat/metal/mtl"
	"mlxchat/tensor"
)

// This file binds the mtl interfaces to Metal through the Objective-C
// runtime and does nothing else: every check and every decision is in
// metal/mtl, which also runs in go test on Linux against metal/mtlfake.
// Setup calls go through purego/objc (reflection, a few per object);
// per-dispatch calls through objc_msgSend with purego.SyscallN and the
// argument slice kept in device, so encoding allocates nothing.

// selectors are registered once per device (RegisterName takes a lock).
type selectors struct {
	release, newObj, name, utf8, desc, str, supportsFamily, maxBuf, maxTG     objc.SEL
	newBuf, newBufBytes, newBufNoCopy, contents, length                       objc.SEL
	newLib, setFastMath, setLangVer, newFn, newPipe, maxThreads, staticTG     objc.SEL
	newQueue, cmdBuf, computeEnc, setPipe, setBytes, setBuf, dispatch, endEnc objc.SEL
	commit, wait, status, errorSel, count, objectAt, retain, setBufOff, bar   objc.SEL
}

// device implements mtl.Device; object is every other Metal object (which
// methods apply depends on its class, as in Objective-C).
type device struct {
	object
	msgSend, poolPush, poolPop uintptr
	s                          selectors
	args                       [5]uintptr  // per-dispatch SyscallN arguments
	sizes                      [2]mtl.Size // MTLSize arguments: AAPCS64 passes them by address
	errp                       objc.ID     // NSError out-parameter
}

type object struct {
	id objc.ID
	d  *device
}

// newDevice loads Metal and returns the system default GPU or, when a
// command-line process gets none, the first device Metal lists.
func newDevice() (*device, error) {
	lib, err := purego.Dlopen("/usr/lib/libobjc.A.dylib", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("loading libobjc: %w", err)
	}
	mtlLib, err := purego.Dlopen("/System/Library/Frameworks/Metal.framework/Metal", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("loading Metal.framework: %w", err)
	}
	_, _ = purego.Dlopen("/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	d := &device{}
	d.d = d
	for _, f := range []struct {
		p    *uintptr
		h    uintptr
		name string
	}{{&d.msgSend, lib, "objc_msgSend"}, {&d.poolPush, lib, "objc_autoreleasePoolPush"}, {&d.poolPop, lib, "objc_autoreleasePoolPop"}} {
		if *f.p, err = purego.Dlsym(f.h, f.name); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	s := &d.s
	for p, name := range map[*objc.SEL]string{
		&s.release: "release", &s.newObj: "new", &s.name: "name", &s.utf8: "UTF8String", &s.desc: "localizedDescription",
		&s.str: "stringWithUTF8String:", &s.supportsFamily: "supportsFamily:", &s.maxBuf: "maxBufferLength",
		&s.maxTG: "maxThreadgroupMemoryLength", &s.newBuf: "newBufferWithLength:options:",
		&s.newBufBytes: "newBufferWithBytes:length:options:", &s.newBufNoCopy: "newBufferWithBytesNoCopy:length:options:deallocator:",
		&s.contents: "contents", &s.length: "length", &s.newLib: "newLibraryWithSource:options:error:",
		&s.setFastMath: "setFastMathEnabled:", &s.setLangVer: "setLanguageVersion:", &s.newFn: "newFunctionWithName:",
		&s.newPipe: "newComputePipelineStateWithFunction:error:", &s.maxThreads: "maxTotalThreadsPerThreadgroup",
		&s.staticTG: "staticThreadgroupMemoryLength", &s.newQueue: "newCommandQueue", &s.cmdBuf: "commandBufferWithUnretainedReferences",
		&s.computeEnc: "computeCommandEncoderWithDispatchType:", &s.retain: "retain", &s.setBufOff: "setBufferOffset:atIndex:",
		&s.bar: "memoryBarrierWithScope:", &s.setPipe: "setComputePipelineState:", &s.setBytes: "setBytes:length:atIndex:",
		&s.setBuf: "setBuffer:offset:atIndex:", &s.dispatch: "dispatchThreadgroups:threadsPerThreadgroup:",
		&s.endEnc: "endEncoding", &s.commit: "commit", &s.wait: "waitUntilCompleted", &s.status: "status",
		&s.errorSel: "error", &s.count: "count", &s.objectAt: "objectAtIndex:",
	} {
		*p = objc.RegisterName(name)
	}
	var create, all func() objc.ID
	purego.RegisterLibFunc(&create, mtlLib, "MTLCreateSystemDefaultDevice")
	purego.RegisterLibFunc(&all, mtlLib, "MTLCopyAllDevices")
	d.Pool(func() {
		if d.id = create(); d.id != 0 {
			return
		}
		list := all()
		if list == 0 {
			return
		}
		if objc.Send[uint64](list, s.count) > 0 {
			d.id = list.Send(s.objectAt, uint64(0)).Send(s.retain)
		}
		list.Send(s.release)
	})
	if d.id == 0 {
		return nil, errors.New("no Metal device (MTLCreateSystemDefaultDevice and MTLCopyAllDevices found none)")
	}
	return d, nil
}

// send calls objc_msgSend with d.args[:n] (no allocation).
func (d *device) send(n int) uintptr {
	r, _, _ := purego.SyscallN(d.msgSend, d.args[:n]...)
	return r
}

func (o object) call(s objc.SEL) uintptr {
	o.d.args[0], o.d.args[1] = uintptr(o.id), uintptr(s)
	return o.d.send(2)
}

func (o object) obj(s objc.SEL) object { return object{objc.ID(o.call(s)), o.d} }

func (o object) str(s objc.SEL) string { return objc.Send[string](o.id.Send(s), o.d.s.utf8) }

func (d *device) nsString(s string) objc.ID {
	b := append([]byte(s), 0)
	defer runtime.KeepAlive(b)
	return objc.ID(objc.GetClass("NSString")).Send(d.s.str, unsafe.Pointer(&b[0]))
}

// made wraps id, or reports what failed with the NSError the call left
// (the compiler also leaves warnings there on success: always cleared).
func (d *device) made(id objc.ID, what string) (object, error) {
	e := d.errp
	d.errp = 0
	if id != 0 {
		return object{id, d}, nil
	}
	if e != 0 {
		return object{}, fmt.Errorf("%s: %s", what, object{e, d}.str(d.s.desc))
	}
	return object{}, fmt.Errorf("%s failed", what)
}

// Name reads the autoreleased name inside a pool of its own.
func (d *device) Name() (n string) {
	d.Pool(func() { n = d.str(d.s.name) })
	return n
}
func (d *device) SupportsFamily(f mtl.GPUFamily) bool {
	return objc.Send[bool](d.id, d.s.supportsFamily, int64(f))
}
func (d *device) MaxBufferLength() int            { return int(objc.Send[uint64](d.id, d.s.maxBuf)) }
func (d *device) MaxThreadgroupMemoryLength() int { return int(objc.Send[uint64](d.id, d.s.maxTG)) }

func (d *device) NewBuffer(n int, o mtl.ResourceOptions) (mtl.Buffer, error) {
	return d.made(d.id.Send(d.s.newBuf, uint64(n), uint64(o)), fmt.Sprintf("newBufferWithLength(%d)", n))
}

func (d *device) NewBufferWithBytes(b []byte, o mtl.ResourceOptions) (mtl.Buffer, error) {
	defer runtime.KeepAlive(b)
	return d.made(d.id.Send(d.s.newBufBytes, unsafe.Pointer(&b[0]), uint64(len(b)), uint64(o)), fmt.Sprintf("newBufferWithBytes(%d)", len(b)))
}

func (d *device) NewBufferNoCopy(p unsafe.Pointer, n int, o mtl.ResourceOptions) (mtl.Buffer, error) {
	return d.made(d.id.Send(d.s.newBufNoCopy, p, uint64(n), uint64(o), uintptr(0)), fmt.Sprintf("newBufferWithBytesNoCopy(%d)", n))
}

func (d *device) NewLibrary(src string) (mtl.Library, error) {
	opts := objc.ID(objc.GetClass("MTLCompileOptions")).Send(d.s.newObj)
	defer opts.Send(d.s.release)
	opts.Send(d.s.setFastMath, false)
	opts.Send(d.s.setLangVer, uint64(2<<16|3)) // MTLLanguageVersion2_3
	return d.made(d.id.Send(d.s.newLib, d.nsString(src), opts, unsafe.Pointer(&d.errp)), "newLibraryWithSource")
}

func (d *device) NewComputePipeline(fn mtl.Function) (mtl.Pipeline, error) {
	return d.made(d.id.Send(d.s.newPipe, fn.(object).id, unsafe.Pointer(&d.errp)), "newComputePipelineState")
}

func (d *device) NewCommandQueue() (mtl.CommandQueue, error) {
	return d.made(objc.ID(d.call(d.s.newQueue)), "newCommandQueue")
}

// Pool runs f in an autorelease pool on a locked OS thread.
func (d *device) Pool(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, _, _ := purego.SyscallN(d.poolPush)
	defer purego.SyscallN(d.poolPop, p)
	f()
}

func (o object) Release() { o.call(o.d.s.release) }
func (o object) Retain()  { o.call(o.d.s.retain) }

func (o object) Contents() unsafe.Pointer { return objc.Send[unsafe.Pointer](o.id, o.d.s.contents) }
func (o object) Length() int              { return int(objc.Send[uint64](o.id, o.d.s.length)) }

func (o object) NewFunction(name string) (mtl.Function, error) {
	return o.d.made(o.id.Send(o.d.s.newFn, o.d.nsString(name)), "newFunctionWithName("+name+")")
}

func (o object) MaxTotalThreadsPerThreadgroup() int {
	return int(objc.Send[uint64](o.id, o.d.s.maxThreads))
}
func (o object) StaticThreadgroupMemoryLength() int {
	return int(objc.Send[uint64](o.id, o.d.s.staticTG))
}

func (o object) NewCommandBuffer() (mtl.CommandBuffer, error) {
	return o.d.made(o.obj(o.d.s.cmdBuf).id, "commandBuffer")
}
func (o object) NewComputeEncoder(t mtl.DispatchType) (mtl.ComputeEncoder, error) {
	o.d.args[2] = uintptr(t)
	return o.d.made(objc.ID(o.args(o.d.s.computeEnc, 3)), "computeCommandEncoderWithDispatchType")
}
func (o object) Commit()             { o.call(o.d.s.commit) }
func (o object) WaitUntilCompleted() { o.call(o.d.s.wait) }

// Err reports MTLCommandBufferStatusError (5) with the buffer's error.
func (o object) Err() error {
	if objc.Send[uint64](o.id, o.d.s.status) != 5 {
		return nil
	}
	return errors.New(object{o.id.Send(o.d.s.errorSel), o.d}.str(o.d.s.desc))
}

func (o object) SetPipeline(p mtl.Pipeline) {
	o.d.args[2] = uintptr(p.(object).id)
	o.args(o.d.s.setPipe, 3)
}

func (o object) SetBytes(b []byte, i int) {
	o.d.args[2], o.d.args[3], o.d.args[4] = uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(i)
	o.args(o.d.s.setBytes, 5)
	runtime.KeepAlive(b)
}

func (o object) SetBuffer(b mtl.Buffer, off, i int) {
	o.d.args[2], o.d.args[3], o.d.args[4] = uintptr(b.(object).id), uintptr(off), uintptr(i)
	o.args(o.d.s.setBuf, 5)
}

func (o object) SetBufferOffset(off, i int) {
	o.d.args[2], o.d.args[3] = uintptr(off), uintptr(i)
	o.args(o.d.s.setBufOff, 4)
}

func (o object) MemoryBarrier(s mtl.BarrierScope) {
	o.d.args[2] = uintptr(s)
	o.args(o.d.s.bar, 3)
}

func (o object) DispatchThreadgroups(g, t mtl.Size) {
	d := o.d
	d.sizes = [2]mtl.Size{g, t}
	d.args[2], d.args[3] = uintptr(unsafe.Pointer(&d.sizes[0])), uintptr(unsafe.Pointer(&d.sizes[1]))
	o.args(d.s.dispatch, 4)
}

func (o object) EndEncoding() { o.call(o.d.s.endEnc) }

// args sends s to o with the arguments already in d.args[2:n].
func (o object) args(s objc.SEL, n int) uintptr {
	o.d.args[0], o.d.args[1] = uintptr(o.id), uintptr(s)
	return o.d.send(n)
}

// openMetalBackend opens the GPU through the binding and metal/mtl's
// driver, which compiles every pipeline before it returns.
func openMetalBackend() (tensor.Backend, error) {
	dev, err := newDevice()
	if err != nil {
		return nil, fmt.Errorf("metal: %w", err)
	}
	drv, err := mtl.Open(dev)
	if err != nil {
		return nil, err
	}
	return gpu.New(drv), nil
}
