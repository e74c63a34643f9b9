package gpu

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"math"

	"mlxchat/metal/kernels"
	"mlxchat/tensor"
)

// arg is one tensor bound to a kernel slot: the byte range [off, off+n) of
// t.Data (n == 0: all of it).
type arg struct {
	t      *tensor.Tensor
	write  bool
	read   bool // with write: the kernel also reads the range (in place)
	weight bool
	off, n int64
	// scratch, when set, is a slot of this step's arena that t.Data views
	// (GPU-only temporaries): bound in place, never copied.
	scratch *stageSlot
}

func in(t *tensor.Tensor) arg     { return arg{t: t} }
func out(t *tensor.Tensor) arg    { return arg{t: t, write: true} }
func inout(t *tensor.Tensor) arg  { return arg{t: t, write: true, read: true} }
func weight(t *tensor.Tensor) arg { return arg{t: t, weight: true} }

// sub narrows a to bytes [off, off+n) of its tensor.
func (a arg) sub(off, n int64) arg { a.off, a.n = off, n; return a }

// errMisaligned reports a 16-byte vector binding whose tensor does not start
// on a 16-byte boundary; callers fall back to a scalar kernel.
var errMisaligned = errors.New("binding not aligned for vector loads")

// ref is where an operand's bytes are for the GPU: byte offset off in buf
// (of size bytes); st is the activation allocation holding them, if any.
type ref struct {
	buf  Buf
	off  int64
	size int64
	st   *bufState
	// mapped: a weight inside memory the driver wraps in place
	// (MappedWeights), which may be a read-only file mapping
	mapped bool
}

// resolve maps a tensor's bytes to a buffer range: an activation buffer it
// lives in (its device twin on remote drivers), its uploaded weight copy,
// or a staging slot.
func (b *Backend) resolve(a arg) (ref, error) {
	t := a.t
	if len(t.Data) == 0 {
		return ref{}, fmt.Errorf("tensor %s has no data", t)
	}
	if f, ok := t.Handle.(*allocFailure); ok {
		return ref{}, fmt.Errorf("tensor %s has no GPU memory: %w", t, f.err)
	}
	if a.scratch != nil {
		return ref{buf: a.scratch.chunk.buf, off: a.scratch.off + a.off, size: a.scratch.chunk.size}, nil
	}
	p := dataPtr(t.Data)
	if st := b.activation(t); st != nil {
		ch := st.ch
		buf := ch.buf
		if b.remote != nil {
			if ch.dev == nil {
				dev, err := b.remote.NewDeviceBuffer(int(ch.size))
				if err != nil {
					return ref{}, fmt.Errorf("device copy of %d bytes of activations: %w", ch.size, err)
				}
				ch.dev = dev
				if ch.heap {
					b.chunkOf[dev] = ch
				}
			}
			if st.fresh {
				st.fresh = false
				b.step.uploads = append(b.step.uploads, st)
			}
			buf = ch.dev
		}
		return ref{buf: buf, off: st.off + int64(p-st.base) + a.off, size: ch.size, st: st}, nil
	}
	if a.weight {
		if mw, ok := b.drv.(MappedWeights); ok {
			n := a.n
			if n == 0 {
				n = int64(len(t.Data)) - a.off
			}
			if buf, off, size, ok := mw.WeightRange(p+uintptr(a.off), n); ok {
				return ref{buf: buf, off: off, size: size, mapped: true}, nil
			}
		}
		key := memKey{p, len(t.Data)}
		w, ok := b.weights[key]
		if !ok {
			var err error
			if w, err = b.uploadWeight(t); err != nil {
				return ref{}, err
			}
			b.weights[key] = w
		}
		return ref{buf: w.buf, off: w.off + a.off, size: w.bufSize()}, nil
	}
	if b.profile != nil {
		b.profKey = fmt.Sprintf("%s%v", t.DType, t.Shape)
	}
	s, err := b.stage(t.Data, a.write)
	if err != nil {
		return ref{}, err
	}
	return ref{buf: s.chunk.buf, off: s.off + a.off, size: s.chunk.size}, nil
}

// Weight heap sizes: the first chunk and the largest one (also capped by
// the binding limit), and the largest weight packed into a chunk.
const (
	wheapFirst = 16 << 20
	wheapMax   = 1 << 30
	wheapPiece = 256 << 20
)

// uploadWeight copies a weight to the GPU: into the weight heap where the
// driver has one and the weight is not huge, else into a buffer of its
// own.
func (b *Backend) uploadWeight(t *tensor.Tensor) (weightBuf, error) {
	data := t.Data
	if len(data)%16 != 0 {
		// Kernels read 16-bit and vector data in whole words: pad.
		data = make([]byte, (len(t.Data)+15)&^15)
		copy(data, t.Data)
	}
	n := int64(len(data))
	b.stats.WeightBytes += int64(len(t.Data))
	if wh, ok := b.drv.(WeightHeap); ok && n <= min(wheapPiece, b.lim.MaxRange) {
		const align = 256
		var c *wchunk
		if k := len(b.wheap); k > 0 {
			if last := b.wheap[k-1]; (last.used+align-1)&^(align-1)+n <= last.size {
				c = last
			}
		}
		if c == nil {
			size := int64(wheapFirst)
			if k := len(b.wheap); k > 0 {
				size = 2 * b.wheap[k-1].size
			}
			size = max(min(size, wheapMax, b.drv.Limits().MaxRange), n)
			buf, err := wh.NewWeightBuffer(size)
			if err != nil {
				return weightBuf{}, fmt.Errorf("uploading weight %s (%d bytes): %w", t, len(t.Data), err)
			}
			c = &wchunk{buf: buf, size: size}
			b.wheap = append(b.wheap, c)
		}
		off := (c.used + align - 1) &^ (align - 1)
		if err := wh.WriteWeights(c.buf, off, data); err != nil {
			return weightBuf{}, fmt.Errorf("uploading weight %s (%d bytes): %w", t, len(t.Data), err)
		}
		c.used = off + n
		c.live++
		return weightBuf{buf: c.buf, off: off, size: n, wc: c, keep: t.Data}, nil
	}
	wb, err := b.drv.NewWeights(data)
	if err != nil {
		return weightBuf{}, fmt.Errorf("uploading weight %s (%d bytes): %w", t, len(t.Data), err)
	}
	// Keep both: t.Data pins the address the cache is keyed by, data is
	// what the driver may alias (the padded copy when there is one, which
	// nothing else references).
	return weightBuf{buf: wb, size: n, keep: t.Data, data: data}, nil
}

// bufSize is the size of the buffer a weight lives in.
func (w weightBuf) bufSize() int64 {
	if w.wc != nil {
		return w.wc.size
	}
	return w.size
}

// activation returns the live allocation t.Data lies in, or nil for host
// memory.
func (b *Backend) activation(t *tensor.Tensor) *bufState {
	p := dataPtr(t.Data)
	if h, ok := t.Handle.(*buffer); ok && p >= h.st.base && p+uintptr(len(t.Data)) <= h.st.base+uintptr(h.st.size) {
		return h.st
	}
	return b.lookup(p, len(t.Data))
}

// Limits of the upload cache of unchanged host tensors: the largest
// tensor it keeps, its total size, and the evicted bytes that make Sync
// start it afresh.
const (
	maxConstTensor = 256 << 10
	maxConst       = 16 << 20
	maxConstWaste  = 4 << 20
)

// stage copies host bytes into this step's arena (once per step and
// address) and, for outputs, schedules the copy back at Sync. Small inputs
// whose bytes equal those staged at the same address in the previous step
// are uploaded once into the persistent cache arena and served from there
// while every later use finds the same bytes.
func (b *Backend) stage(data []byte, write bool) (stageSlot, error) {
	key := memKey{dataPtr(data), len(data)}
	s, ok := b.staged[key]
	if !ok && !write && len(data) <= maxConstTensor {
		if c, hit := b.consts[key]; hit {
			if bytes.Equal(c.bytes, data) {
				b.stats.ReusedBytes += int64(len(data))
				return c.slot, nil
			}
			delete(b.consts, key)
			b.cwaste += int64(len(data))
		}
		if _, hit := b.consts[key]; !hit {
			h := maphash.Bytes(b.seed, data)
			if prev, was := b.seenPrev[key]; was && prev == h && b.cbytes+int64(len(data)) <= maxConst {
				cs, err := b.slot(&b.carena, len(data), false)
				if err != nil {
					return stageSlot{}, fmt.Errorf("caching %d unchanged bytes: %w", len(data), err)
				}
				copy(cs.chunk.mem[cs.off:], data)
				b.count(len(data))
				b.cbytes += int64(len(data))
				b.consts[key] = constSlot{slot: cs, bytes: bytes.Clone(data)}
				return cs, nil
			}
			b.seen[key] = h
		}
	}
	if !ok {
		var err error
		if s, err = b.arenaSlot(len(data)); err != nil {
			return stageSlot{}, fmt.Errorf("staging %d bytes: %w", len(data), err)
		}
		s.host = data
		copy(s.chunk.mem[s.off:], data)
		b.count(len(data))
		b.staged[key] = s
	}
	if write {
		for _, w := range b.writeback {
			if w.chunk == s.chunk && w.off == s.off {
				return s, nil
			}
		}
		b.writeback = append(b.writeback, s)
	}
	return s, nil
}

// count adds n uploaded bytes to the stats (and the staging profile).
func (b *Backend) count(n int) {
	b.stats.StagedBytes += int64(n)
	if b.profile != nil {
		b.profile[b.profKey] += int64(n)
	}
}

// arenaSlot reserves n bytes of this step's host-visible arena.
func (b *Backend) arenaSlot(n int) (stageSlot, error) {
	return b.slot(&b.arena, n, false)
}

// slot reserves n bytes in one of the step arenas, growing it by chunks of
// at least 8 MiB (device-only chunks have no mapping: mem stays nil and
// size is tracked in cap).
func (b *Backend) slot(arena *[]*arenaChunk, n int, device bool) (stageSlot, error) {
	need := (int64(n) + b.lim.OffsetAlign - 1) &^ (b.lim.OffsetAlign - 1)
	var c *arenaChunk
	for _, ch := range *arena {
		if ch.size-ch.used >= need {
			c = ch
			break
		}
	}
	if c == nil {
		size := max(int64(8<<20), need)
		c = &arenaChunk{size: size}
		var err error
		if device {
			c.buf, err = b.remote.NewDeviceBuffer(int(size))
		} else {
			c.buf, c.mem, err = b.drv.NewBuffer(int(size))
		}
		if err != nil {
			return stageSlot{}, err
		}
		*arena = append(*arena, c)
	}
	s := stageSlot{chunk: c, off: c.used}
	c.used += need
	return s, nil
}

// scratch returns an F32 temporary of n values for results one kernel
// hands to the next within the step: in device-only memory when the
// driver's activations are remote, else in the step arena. Its tensor has
// no host data worth reading (a zero-filled stand-in on device memory).
func (b *Backend) scratch(n int) (arg, error) {
	var s stageSlot
	var err error
	if b.remote != nil {
		s, err = b.slot(&b.darena, 4*n, true)
	} else {
		s, err = b.arenaSlot(4 * n)
	}
	if err != nil {
		return arg{}, fmt.Errorf("scratch of %d floats: %w", n, err)
	}
	t := &tensor.Tensor{DType: tensor.F32, Shape: []int{n}, Data: make([]byte, 4)}
	if s.chunk.mem != nil {
		t.Data = s.chunk.mem[s.off : s.off+int64(4*n)]
	}
	return arg{t: t, write: true, scratch: &s, n: int64(4 * n)}, nil
}

// localize returns a, an F32 operand of n values that many workgroups will
// re-read, copied into device-only scratch when the driver's activations
// are remote and a is a plain host tensor (staged in host memory);
// otherwise a itself (activations are read from their device twins).
func (b *Backend) localize(a arg, n int) (arg, error) {
	if b.remote == nil || a.scratch != nil || b.activation(a.t) != nil {
		return a, nil
	}
	s, err := b.scratch(n)
	if err != nil {
		return arg{}, err
	}
	args := [8]arg{1: a, 2: a, 3: s}
	if err := b.launch(kernels.Eltwise, &args, []uint32{uint32(n), uint32(n), opCopy, 0}, grid1D(n, 256)); err != nil {
		return arg{}, err
	}
	s.write = false
	return s, nil
}

// launch binds args to kernel id's slots, packs the offsets and words into
// its parameter block and records the launch for Sync.
func (b *Backend) launch(id kernels.ID, args *[8]arg, words []uint32, groups [3]int) error {
	k := id.Info()
	if len(words) != k.Params {
		return fmt.Errorf("kernel %s: %d parameter words, want %d", id, len(words), k.Params)
	}
	for _, g := range groups {
		if g <= 0 || g > 65535 {
			return fmt.Errorf("kernel %s: grid %v out of range", id, groups)
		}
	}
	if b.earlyCut(id, words) {
		b.submitEarly()
	}
	st := &b.step
	w0, a0 := len(st.words), len(st.acc)
	rollback := func() { st.words, st.acc = st.words[:w0], st.acc[:a0] }
	var header [kernels.ParamHeader]uint32
	st.words = append(st.words, header[:]...)
	st.words = append(st.words, words...)
	params := st.words[w0:]
	rec := launchRec{id: id, groups: groups}
	for _, slot := range k.Bindings {
		a := args[slot]
		if a.t == nil {
			rollback()
			return fmt.Errorf("kernel %s: binding %d has no tensor", id, slot)
		}
		n := a.n
		if n == 0 {
			n = int64(len(a.t.Data)) - a.off
		}
		if a.scratch != nil && a.n == 0 {
			rollback()
			return fmt.Errorf("kernel %s: scratch binding %d without a size", id, slot)
		}
		r, err := b.resolve(a)
		if err != nil {
			rollback()
			return err
		}
		unit := int64(a.t.DType.Size())
		if k.Vec4[slot] {
			unit = 16
		}
		// Bind the whole buffer where the limit allows, so a step binds
		// the same ranges while its tensors move inside them.
		var bind int64
		size := r.size
		if size > b.lim.MaxRange {
			bind = r.off &^ (b.lim.OffsetAlign - 1)
			size = min(b.lim.MaxRange, r.size-bind)
		}
		resid := r.off - bind
		if unit == 0 || resid%unit != 0 {
			rollback()
			if k.Vec4[slot] {
				return errMisaligned
			}
			return fmt.Errorf("kernel %s: tensor %s at byte offset %d is not aligned to its element size", id, a.t, r.off)
		}
		if resid+n > size {
			rollback()
			return fmt.Errorf("kernel %s: binding of %d bytes exceeds the device limit of %d", id, resid+n, b.lim.MaxRange)
		}
		if resid/unit > math.MaxUint32 {
			rollback()
			return fmt.Errorf("kernel %s: tensor %s sits beyond 2^32 elements into its buffer", id, a.t)
		}
		rec.binds[slot] = Binding{Buf: r.buf, Offset: bind, Size: size}
		rec.boff[slot] = r.off
		params[slot] = uint32(resid / unit)
		if a.read && a.write {
			st.acc = append(st.acc, access{buf: r.buf, lo: r.off, hi: r.off + n, st: r.st})
		}
		st.acc = append(st.acc, access{buf: r.buf, lo: r.off, hi: r.off + n, write: a.write, weight: r.mapped, st: r.st})
	}
	rec.w0, rec.w1 = int32(w0), int32(len(st.words))
	rec.a0, rec.a1 = int32(a0), int32(len(st.acc))
	st.recs = append(st.recs, rec)
	b.stats.Ops++
	return nil
}

func f32w(f float32) uint32 { return math.Float32bits(f) }

// grid1D covers total invocations with workgroups of local threads,
// folding into y past 65535 groups.
func grid1D(total, local int) [3]int {
	g := (total + local - 1) / local
	if g < 1 {
		g = 1
	}
	if g <= 65535 {
		return [3]int{g, 1, 1}
	}
	return [3]int{65535, (g + 65534) / 65535, 1}
}

// gridRows launches one workgroup per row, folding into y.
func gridRows(rows int) [3]int {
	if rows <= 65535 {
		return [3]int{rows, 1, 1}
	}
	return [3]int{65535, (rows + 65534) / 65535, 1}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
