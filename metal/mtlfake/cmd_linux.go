//go:build linux

package mtlfake

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"mlxchat/metal/gpu"
	"mlxchat/metal/kernels"
	"mlxchat/metal/mtl"
)

// NewCommandBuffer implements mtl.CommandQueue: an autoreleased command
// buffer that does not retain what it uses (the fake checks that those
// stay alive until it completes).
func (q *Queue) NewCommandBuffer() (mtl.CommandBuffer, error) {
	d := q.dev
	if q.released {
		d.violate("commandBuffer on a released queue")
	}
	c := &CommandBuffer{dev: d}
	if len(d.pools) == 0 {
		d.violate("commandBuffer outside an autorelease pool (the autoreleased object leaks)")
	} else {
		c.pool = d.pools[len(d.pools)-1]
	}
	return c, nil
}

// CommandBuffer is a simulated MTLCommandBuffer; its dispatches run on
// Vulkan when it completes (at the first WaitUntilCompleted of it or of a
// later one of the queue).
type CommandBuffer struct {
	dev       *Device
	pool      int // the autorelease pool that owns it
	retains   int // Retain calls not yet balanced by Release
	freed     bool
	enc       *Encoder // the open encoder
	group     int      // the current barrier group
	ops       []dispatch
	used      []*Buffer
	committed bool
	completed bool
	err       error
}

type binding struct {
	buf *Buffer
	off int
}

// dispatch is one recorded dispatch. Dispatches with the same group may
// run concurrently (a concurrent encoder between barriers); groups run
// in order.
type dispatch struct {
	k      kernels.ID
	lib    *Library
	params []byte // setBytes' copy, or the parameter buffer's bytes
	pbuf   *Buffer
	poff   int
	binds  [8]binding
	groups [3]int
	group  int
	index  int // position in the command buffer
}

func (o *dispatch) String() string { return fmt.Sprintf("dispatch %d (%s)", o.index, o.lib.name) }

// alive reports whether the command buffer object still exists: inside
// the pool that made it, or retained.
func (c *CommandBuffer) alive(what string) bool {
	switch {
	case c.freed:
		c.dev.violate("%s on a command buffer after its last release", what)
		return false
	case c.retains == 0 && !c.dev.inPool(c.pool):
		c.dev.violate("%s on a command buffer after its autorelease pool drained (it was not retained)", what)
		return false
	}
	return true
}

// Retain implements mtl.CommandBuffer.
func (c *CommandBuffer) Retain() {
	if c.alive("retain") {
		c.retains++
		c.dev.retained[c] = true
	}
}

// Release implements mtl.CommandBuffer: releasing more than was retained
// is a violation (the autorelease pool owns the first reference).
func (c *CommandBuffer) Release() {
	if !c.alive("release") {
		return
	}
	if c.retains == 0 {
		c.dev.violate("command buffer released more often than retained (its autorelease pool releases it)")
		return
	}
	c.retains--
	if c.retains == 0 {
		delete(c.dev.retained, c)
		c.freed = !c.dev.inPool(c.pool)
	}
}

// NewComputeEncoder implements mtl.CommandBuffer.
func (c *CommandBuffer) NewComputeEncoder(t mtl.DispatchType) (mtl.ComputeEncoder, error) {
	d := c.dev
	c.alive("computeCommandEncoderWithDispatchType")
	if c.committed {
		d.violate("computeCommandEncoder on a committed command buffer")
	}
	if c.enc != nil {
		d.violate("computeCommandEncoder while another encoder of the command buffer is open")
	}
	if t != mtl.DispatchSerial && t != mtl.DispatchConcurrent {
		d.violate("computeCommandEncoderWithDispatchType: unknown dispatch type %d", t)
	}
	if len(d.pools) == 0 {
		d.violate("computeCommandEncoder outside an autorelease pool")
	}
	c.group++
	e := &Encoder{cb: c, concurrent: t == mtl.DispatchConcurrent}
	if len(d.pools) > 0 {
		e.pool = d.pools[len(d.pools)-1]
	}
	if e.concurrent {
		d.mu.Lock()
		d.stats.ConcurrentEncoders++
		d.mu.Unlock()
	}
	c.enc = e
	return e, nil
}

// Commit implements mtl.CommandBuffer. Parameter blocks bound from a
// buffer are read now: the CPU must not change them before the command
// buffer completes.
func (c *CommandBuffer) Commit() {
	if !c.alive("commit") {
		return
	}
	if c.committed {
		c.dev.violate("command buffer committed twice")
		return
	}
	if c.enc != nil {
		c.dev.violate("command buffer committed with an encoder not ended")
	}
	c.committed = true
	for i := range c.ops {
		if o := &c.ops[i]; o.pbuf != nil {
			o.params = append(o.params[:0], o.pbuf.mem[o.poff:o.poff+o.lib.params]...)
		}
	}
	for _, b := range c.used {
		b.users++
	}
	c.dev.pending = append(c.dev.pending, c)
}

// WaitUntilCompleted implements mtl.CommandBuffer: it runs every
// committed command buffer up to this one, in commit order.
func (c *CommandBuffer) WaitUntilCompleted() {
	if !c.alive("waitUntilCompleted") {
		return
	}
	if !c.committed {
		c.dev.violate("waitUntilCompleted on a command buffer never committed")
		return
	}
	d := c.dev
	d.mu.Lock()
	d.stats.Waits++
	d.mu.Unlock()
	for !c.completed {
		next := d.pending[0]
		d.pending = d.pending[1:]
		next.err = next.run()
		next.completed = true
		for _, b := range next.used {
			b.users--
		}
	}
}

// Err implements mtl.CommandBuffer.
func (c *CommandBuffer) Err() error {
	c.alive("status")
	if !c.completed {
		c.dev.violate("command buffer status read before it completed")
	}
	return c.err
}

// run executes the command buffer's dispatches on Vulkan, barrier group
// by barrier group (see Order): no-copy buffers are mirrored in first
// (their memory must still be mapped) and written bindings of no-copy
// buffers copied back after.
func (c *CommandBuffer) run() error {
	d := c.dev
	for _, b := range c.used {
		if b.released {
			d.violate("a command buffer ran with a buffer released before it completed")
			return errors.New("buffer released")
		}
		if b.noCopy {
			if err := mapped(uintptr(unsafe.Pointer(unsafe.SliceData(b.mem))), len(b.mem)); err != nil {
				d.violate("a command buffer ran after the memory of a no-copy buffer it uses was unmapped")
				return err
			}
			if !bytes.Equal(b.mirror, b.mem) {
				copy(b.mirror, b.mem)
			}
		}
	}
	for i := range c.ops {
		o := &c.ops[i]
		if o.pbuf == nil {
			continue
		}
		if cur := o.pbuf.mem[o.poff : o.poff+len(o.params)]; !bytes.Equal(cur, o.params) {
			d.violate("%s: its parameter block in %s changed after the command buffer was committed, before it completed", o, o.pbuf)
			copy(o.params, cur) // what the GPU would read
		}
	}
	// Untracked buffers bound where a kernel may write (a fused kernel's
	// generic slots) must come out unchanged.
	var watch []*Buffer
	for _, o := range c.ops {
		for j, bd := range o.binds {
			if bd.buf != nil && bd.buf.untracked && o.lib.writes[j] && !contains(watch, bd.buf) {
				watch = append(watch, bd.buf)
			}
		}
	}
	before := d.snapshot(3, watch)
	groups := c.groupBounds()
	var err error
	if d.opts.Order == CompareOrders {
		err = c.runCompared(groups)
	} else {
		for _, g := range groups {
			for i := len(g) - 1; i >= 0 && err == nil; i-- {
				err = d.launch(&g[i], false)
			}
		}
		if err == nil {
			err = d.vk.Flush()
		}
	}
	if err != nil {
		return err
	}
	if b, off := differ(watch, before); b != nil {
		var by []string
		for i := range c.ops {
			for j, bd := range c.ops[i].binds {
				if bd.buf == b && c.ops[i].lib.writes[j] {
					by = append(by, c.ops[i].String())
					break
				}
			}
		}
		d.violate("the GPU wrote %s (first at byte %d), bound writable to %s: nothing orders GPU writes to an untracked buffer with later encoders and command buffers", b, off, strings.Join(by, ", "))
	}
	for _, o := range c.ops {
		for i := 1; i < 8; i++ {
			if bd := o.binds[i]; bd.buf != nil && bd.buf.noCopy && !bd.buf.untracked && o.lib.writes[i] && !bytes.Equal(bd.buf.mem, bd.buf.mirror) {
				copy(bd.buf.mem, bd.buf.mirror)
			}
		}
	}
	d.mu.Lock()
	d.stats.CommandBuffers++
	d.stats.Dispatches += len(c.ops)
	for _, g := range groups {
		if len(g) > 1 {
			d.stats.Groups++
		}
	}
	d.mu.Unlock()
	return nil
}

// groupBounds splits the dispatches into barrier groups.
func (c *CommandBuffer) groupBounds() [][]dispatch {
	var gs [][]dispatch
	for lo := 0; lo < len(c.ops); {
		hi := lo + 1
		for hi < len(c.ops) && c.ops[hi].group == c.ops[lo].group {
			hi++
		}
		gs = append(gs, c.ops[lo:hi])
		lo = hi
	}
	return gs
}

// runCompared is CompareOrders: every group forwards on the buffers and
// backwards on the twins, one comparison at the end, and a replay that
// names the missing barrier when they differ.
func (c *CommandBuffer) runCompared(groups [][]dispatch) error {
	d := c.dev
	var written []*Buffer
	for _, o := range c.ops {
		for j, bd := range o.binds {
			if bd.buf != nil && o.lib.writes[j] && !bd.buf.untracked && !contains(written, bd.buf) {
				written = append(written, bd.buf)
			}
		}
	}
	for _, b := range written {
		if b.twin == nil {
			var err error
			if b.twin, b.twinMem, err = d.vk.NewBuffer(len(b.mem)); err != nil {
				return fmt.Errorf("second replica of %s: %w", b, err)
			}
		}
		copy(b.twinMem, b.gpuMem())
	}
	start := d.snapshot(0, written)
	for _, g := range groups {
		for i := range g {
			if err := d.launch(&g[i], false); err != nil {
				return err
			}
		}
		for i := len(g) - 1; i >= 0; i-- {
			if err := d.launch(&g[i], true); err != nil {
				return err
			}
		}
	}
	if err := d.vk.Flush(); err != nil {
		return err
	}
	d.mu.Lock()
	d.stats.Compared++
	d.mu.Unlock()
	for _, b := range written {
		if !bytes.Equal(b.gpuMem(), b.twinMem) {
			return c.localize(groups, written, start)
		}
	}
	return nil
}

// localize replays the command buffer from its starting memory, running
// each group of two or more dispatches forwards and backwards from the
// same memory, and blames the first group whose orders differ.
func (c *CommandBuffer) localize(groups [][]dispatch, written []*Buffer, start [][]byte) error {
	d := c.dev
	restore(written, start)
	found := false
	for _, g := range groups {
		if found || len(g) == 1 {
			if err := d.runOrder(g, false, seq(len(g), false)...); err != nil {
				return err
			}
			continue
		}
		s0 := d.snapshot(1, written)
		if err := d.runOrder(g, false, seq(len(g), true)...); err != nil {
			return err
		}
		rev := d.snapshot(2, written)
		restore(written, s0)
		if err := d.runOrder(g, false, seq(len(g), false)...); err != nil {
			return err
		}
		if b, off := differ(written, rev); b != nil {
			found = true
			fwd := d.snapshot(4, written)
			if err := c.blame(g, written, s0, b, off); err != nil {
				return err
			}
			restore(written, fwd)
		}
	}
	if !found {
		d.violate("missing memory barrier: the command buffer's results differ between its recording order and each barrier group reversed, though no single group does")
	}
	for _, b := range written {
		copy(b.twinMem, b.gpuMem())
	}
	return nil
}

// seq is 0..n-1, or n-1..0.
func seq(n int, reverse bool) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
		if reverse {
			s[i] = n - 1 - i
		}
	}
	return s
}

// launch records o on the Vulkan driver, on the twins of the buffers it
// binds when twin is set (buffers without a twin are never written).
func (d *Device) launch(o *dispatch, twin bool) error {
	lim := d.vk.Limits()
	var binds [8]gpu.Binding
	for i := 1; i < 8; i++ {
		bd := o.binds[i]
		if bd.buf == nil {
			continue
		}
		size := min(int64(len(bd.buf.mem)-bd.off), lim.MaxRange)
		vb := bd.buf.vk
		if twin && bd.buf.twin != nil {
			vb = bd.buf.twin
		}
		binds[i] = gpu.Binding{Buf: vb, Offset: int64(bd.off), Size: size}
	}
	if err := d.vk.Dispatch(o.k, o.params, &binds, o.groups); err != nil {
		return fmt.Errorf("running %s on Vulkan: %w", o.k, err)
	}
	return nil
}

// runOrder launches g's dispatches in the order of idx and waits.
func (d *Device) runOrder(g []dispatch, twin bool, idx ...int) error {
	for _, i := range idx {
		if err := d.launch(&g[i], twin); err != nil {
			return err
		}
	}
	return d.vk.Flush()
}

// blame finds two dispatches of group g that leave different results when
// run alone in either order from the group's starting memory s0, and
// reports the missing barrier between them.
func (c *CommandBuffer) blame(g []dispatch, written []*Buffer, s0 [][]byte, b0 *Buffer, off0 int) error {
	d := c.dev
	for j := 1; j < len(g); j++ {
		for i := j - 1; i >= 0; i-- {
			restore(written, s0)
			if err := d.runOrder(g, false, i, j); err != nil {
				return err
			}
			x := d.snapshot(2, written)
			restore(written, s0)
			if err := d.runOrder(g, false, j, i); err != nil {
				return err
			}
			if b, off := differ(written, x); b != nil {
				d.violate("missing memory barrier: %s and %s of one concurrent encoder, with no barrier between them, touch the same bytes of %s (first at byte %d): one reads or writes what the other writes, and the two orders leave different results", &g[i], &g[j], b, off)
				return nil
			}
		}
	}
	names := make([]string, len(g))
	for i := range g {
		names[i] = g[i].String()
	}
	d.violate("missing memory barrier: %s, with no barrier between them, leave different results in reverse order (first at byte %d of %s)", strings.Join(names, ", "), off0, b0)
	return nil
}

// snapshot copies the GPU memory of bufs into reused slot k (0: a command
// buffer's start, 1, 2 and 4: localize and blame, 3: the untracked
// buffers).
func (d *Device) snapshot(k int, bufs []*Buffer) [][]byte {
	s := d.snaps[k]
	for len(s) < len(bufs) {
		s = append(s, nil)
	}
	for i, b := range bufs {
		s[i] = append(s[i][:0], b.gpuMem()...)
	}
	d.snaps[k] = s
	return s[:len(bufs)]
}

// restore copies snapshot s back into bufs.
func restore(bufs []*Buffer, s [][]byte) {
	for i, b := range bufs {
		copy(b.gpuMem(), s[i])
	}
}

// differ returns the first buffer whose GPU memory differs from s, and
// the offset of the first differing byte.
func differ(bufs []*Buffer, s [][]byte) (*Buffer, int) {
	for i, b := range bufs {
		m := b.gpuMem()
		if bytes.Equal(m, s[i]) {
			continue
		}
		for off := range m {
			if m[off] != s[i][off] {
				return b, off
			}
		}
	}
	return nil, 0
}

func contains(l []*Buffer, b *Buffer) bool {
	for _, x := range l {
		if x == b {
			return true
		}
	}
	return false
}

// Encoder is a simulated MTLComputeCommandEncoder, serial or concurrent.
// Bindings persist across its dispatches, as in Metal.
type Encoder struct {
	cb         *CommandBuffer
	pool       int
	concurrent bool
	ended      bool
	pipe       *Pipeline
	params     []byte
	binds      [32]binding
	bytes0     bool // index 0 set by setBytes
	since      int  // dispatches since the last barrier
}

func (e *Encoder) check(what string) bool {
	d := e.cb.dev
	if !d.inPool(e.pool) {
		d.violate("%s on an encoder after its autorelease pool drained", what)
		return false
	}
	if e.ended {
		d.violate("%s on an ended encoder", what)
		return false
	}
	return true
}

// SetPipeline implements mtl.ComputeEncoder.
func (e *Encoder) SetPipeline(p mtl.Pipeline) {
	if e.check("setComputePipelineState") {
		e.pipe = p.(*Pipeline)
		if e.pipe.released {
			e.cb.dev.violate("setComputePipelineState with a released pipeline")
		}
	}
}

// SetBytes implements mtl.ComputeEncoder.
func (e *Encoder) SetBytes(data []byte, index int) {
	if !e.check("setBytes") {
		return
	}
	if len(data) > mtl.SetBytesLimit {
		e.cb.dev.violate("setBytes of %d bytes, more than %d", len(data), mtl.SetBytesLimit)
	}
	if index < 0 || index >= len(e.binds) {
		e.cb.dev.violate("setBytes at index %d outside 0..30", index)
		return
	}
	e.binds[index] = binding{}
	if index == 0 {
		e.params, e.bytes0 = append(e.params[:0], data...), true
	} else {
		e.cb.dev.violate("setBytes at index %d: the fake only passes parameter blocks at index 0", index)
	}
}

// SetBuffer implements mtl.ComputeEncoder.
func (e *Encoder) SetBuffer(b mtl.Buffer, offset, index int) {
	if !e.check("setBuffer") {
		return
	}
	d := e.cb.dev
	fb := b.(*Buffer)
	switch {
	case index < 0 || index >= len(e.binds):
		d.violate("setBuffer at index %d outside 0..30", index)
		return
	case fb.released:
		d.violate("setBuffer with a released buffer at index %d", index)
	case offset < 0 || offset >= len(fb.mem):
		d.violate("setBuffer offset %d outside the %d-byte buffer at index %d", offset, len(fb.mem), index)
	}
	e.binds[index] = binding{buf: fb, off: offset}
	if index == 0 {
		e.bytes0 = false
	}
}

// SetBufferOffset implements mtl.ComputeEncoder.
func (e *Encoder) SetBufferOffset(offset, index int) {
	if !e.check("setBufferOffset") {
		return
	}
	d := e.cb.dev
	if index < 0 || index >= len(e.binds) || e.binds[index].buf == nil || index == 0 && e.bytes0 {
		d.violate("setBufferOffset at index %d, where no buffer is bound", index)
		return
	}
	if b := e.binds[index].buf; offset < 0 || offset >= len(b.mem) {
		d.violate("setBufferOffset %d outside the %d-byte buffer at index %d", offset, len(b.mem), index)
	}
	e.binds[index].off = offset
}

// MemoryBarrier implements mtl.ComputeEncoder: it closes the current
// barrier group of a concurrent encoder.
func (e *Encoder) MemoryBarrier(scope mtl.BarrierScope) {
	if !e.check("memoryBarrierWithScope") {
		return
	}
	d := e.cb.dev
	if scope&mtl.BarrierBuffers == 0 {
		d.violate("memoryBarrierWithScope: scope %d does not include buffers", scope)
		return
	}
	d.mu.Lock()
	d.stats.Barriers++
	d.mu.Unlock()
	if e.since > 0 {
		e.cb.group++
		e.since = 0
	}
}

// DispatchThreadgroups implements mtl.ComputeEncoder: it checks the
// pipeline, bindings and sizes against the kernel's MSL and records the
// dispatch.
func (e *Encoder) DispatchThreadgroups(groups, threads mtl.Size) {
	if !e.check("dispatchThreadgroups") {
		return
	}
	d := e.cb.dev
	p := e.pipe
	if p == nil {
		d.violate("dispatchThreadgroups without a pipeline")
		return
	}
	lib := p.lib
	n := threads.Width * threads.Height * threads.Depth
	if n == 0 || n > uint64(p.max) {
		d.violate("%s: threadgroup of %d threads, pipeline allows 1..%d", lib.name, n, p.max)
	}
	if threads != (mtl.Size{Width: uint64(lib.local), Height: 1, Depth: 1}) {
		d.violate("%s: threadgroup %v, the kernel is written for (%d, 1, 1)", lib.name, threads, lib.local)
	}
	if groups.Width == 0 || groups.Height == 0 || groups.Depth == 0 {
		d.violate("%s: empty grid %v", lib.name, groups)
	}
	c := e.cb
	o := dispatch{k: lib.id, lib: lib, groups: [3]int{int(groups.Width), int(groups.Height), int(groups.Depth)}, group: c.group, index: len(c.ops)}
	for _, a := range lib.args {
		if a.index == 0 && e.bytes0 {
			if len(e.params) < lib.params {
				d.violate("%s: setBytes passed %d bytes for a parameter struct of %d", lib.name, len(e.params), lib.params)
				return
			}
			o.params = append([]byte(nil), e.params...)
			continue
		}
		bd := e.binds[a.index]
		if bd.buf == nil {
			if a.index == 0 {
				d.violate("%s: parameter block [[buffer(0)]] not set with setBytes or setBuffer", lib.name)
			} else {
				d.violate("%s: [[buffer(%d)]] is declared but not bound", lib.name, a.index)
			}
			return
		}
		align := 16
		if a.space == "constant" {
			align = mtl.ConstantOffsetAlign
		}
		if bd.off%align != 0 {
			d.violate("%s: [[buffer(%d)]] (%s) bound at offset %d, not a multiple of %d", lib.name, a.index, a.space, bd.off, align)
		}
		if bd.buf.released {
			d.violate("%s: [[buffer(%d)]] is a released buffer", lib.name, a.index)
			return
		}
		if a.index == 0 {
			if bd.off+lib.params > len(bd.buf.mem) {
				d.violate("%s: parameter block [[buffer(0)]] at offset %d runs past the end of %s (its struct has %d bytes)", lib.name, bd.off, bd.buf, lib.params)
				return
			}
			o.pbuf, o.poff = bd.buf, bd.off
		} else {
			o.binds[a.index] = bd
		}
		if !contains(c.used, bd.buf) {
			c.used = append(c.used, bd.buf)
		}
	}
	c.ops = append(c.ops, o)
	e.since++
	if !e.concurrent {
		c.group++
		e.since = 0
	}
}

// EndEncoding implements mtl.ComputeEncoder.
func (e *Encoder) EndEncoding() {
	if e.check("endEncoding") {
		e.ended = true
		e.cb.enc = nil
	}
}
