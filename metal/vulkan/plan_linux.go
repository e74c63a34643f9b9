//go:build linux

package vulkan

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"

	"mlxchat/metal/gpu"
)

// vplan is a recorded step: one command buffer that binds the parameter
// blocks from its own buffer through a dynamic uniform offset, so running
// it again only needs new bytes in that buffer.
type vplan struct {
	cb     uintptr
	pool   uint64
	params *vbuf
	// queries holds the plan's timestamps (timing not TimingOff): one
	// before the first launch, then one after each launch (TimingLaunches)
	// or after the last (TimingSpan).
	queries  uint64
	nq       int
	timing   gpu.Timing
	launches int
	ticks    []uint64
}

var _ gpu.Planner = (*Driver)(nil)

// ParamAlign is the device's uniform-buffer offset alignment.
func (d *Driver) ParamAlign() int { return int(d.uboAlign) }

// NewPlan records launches into a command buffer kept for repeated runs.
// Launches with the same bindings share one descriptor set. A barrier
// precedes a launch only where it asks for one (and the whole plan starts
// after earlier work and ends visible to the host and to copies).
func (d *Driver) NewPlan(launches []gpu.Launch, paramBytes int) (gpu.Plan, []byte, error) {
	v := d.v
	maxSize := 16
	for _, l := range launches {
		maxSize = max(maxSize, (l.ParamSize+15)&^15)
	}
	pl := &vplan{timing: d.timing, launches: len(launches)}
	var err error
	// The descriptor range reaches maxSize bytes past every offset.
	if pl.params, err = d.newVBuf(int64(paramBytes+maxSize), bufUniform, memHostVisible|memHostCoherent, memDeviceLocal, 0); err != nil {
		return nil, nil, err
	}
	fail := func(e error) (gpu.Plan, []byte, error) {
		d.ReleasePlan(pl)
		return nil, nil, e
	}
	type key [8]gpu.Binding
	setOf := map[key]int{}
	var uniq []key
	idx := make([]int, len(launches))
	for i, l := range launches {
		k := key(l.Binds)
		k[0] = gpu.Binding{}
		j, ok := setOf[k]
		if !ok {
			j = len(uniq)
			setOf[k] = j
			uniq = append(uniq, k)
		}
		idx[i] = j
	}
	n := uint32(len(uniq))
	sizes := []descPoolSize{{descUniformDynamic, n}, {descStorageBuffer, 7 * n}}
	pci := &descPoolCreateInfo{sType: stDescPoolCreate, maxSets: n, poolSizeCount: 2, pPoolSizes: p(&sizes[0])}
	if err := vkErr("vkCreateDescriptorPool", v.CreateDescriptorPool(d.dev, p(pci), nil, p(&pl.pool))); err != nil {
		return fail(err)
	}
	sets := make([]uint64, n)
	layouts := make([]uint64, n)
	for i := range layouts {
		layouts[i] = d.setLayout
	}
	ai := &descSetAllocateInfo{sType: stDescSetAllocate, descriptorPool: pl.pool, descriptorSetCount: n, pSetLayouts: p(&layouts[0])}
	if err := vkErr("vkAllocateDescriptorSets", v.AllocateDescriptorSets(d.dev, p(ai), p(&sets[0]))); err != nil {
		return fail(err)
	}
	infos := make([]descBufferInfo, 8)
	writes := make([]writeDescSet, 8)
	for j, k := range uniq {
		infos[0] = descBufferInfo{buffer: pl.params.buf, offset: 0, rng: uint64(maxSize)}
		writes[0] = writeDescSet{sType: stWriteDescriptorSet, dstSet: sets[j], dstBinding: 0, descriptorCount: 1, descriptorType: descUniformDynamic, pBufferInfo: p(&infos[0])}
		w := 1
		for i := 1; i < 8; i++ {
			bd := k[i]
			if bd.Buf == nil {
				continue
			}
			vb, ok := bd.Buf.(*vbuf)
			if !ok {
				return fail(fmt.Errorf("vulkan: binding %d is not a Vulkan buffer", i))
			}
			infos[w] = descBufferInfo{buffer: vb.buf, offset: uint64(bd.Offset), rng: uint64(bd.Size)}
			writes[w] = writeDescSet{sType: stWriteDescriptorSet, dstSet: sets[j], dstBinding: uint32(i), descriptorCount: 1, descriptorType: descStorageBuffer, pBufferInfo: p(&infos[w])}
			w++
		}
		v.UpdateDescriptorSets(d.dev, uint32(w), p(&writes[0]), 0, nil)
	}
	if pl.cb, err = d.newCommandBuffer(); err != nil {
		return fail(err)
	}
	bi := &commandBufferBeginInfo{sType: stCommandBufferBegin}
	if err := vkErr("vkBeginCommandBuffer", v.BeginCommandBuffer(pl.cb, p(bi))); err != nil {
		return fail(err)
	}
	if pl.timing != gpu.TimingOff {
		pl.nq = 2
		if pl.timing == gpu.TimingLaunches {
			pl.nq = len(launches) + 1
		}
		qci := &queryPoolCreateInfo{sType: stQueryPoolCreateInfo, queryType: queryTimestamp, queryCount: uint32(pl.nq)}
		if err := vkErr("vkCreateQueryPool", v.CreateQueryPool(d.dev, p(qci), nil, p(&pl.queries))); err != nil {
			return fail(err)
		}
		v.CmdResetQueryPool(pl.cb, pl.queries, 0, uint32(pl.nq))
	}
	start := &memoryBarrier{sType: stMemoryBarrier, srcAccessMask: accShaderWrite | accTransferWrite | accHostWrite, dstAccessMask: accShaderRead | accShaderWrite | accUniformRead}
	v.CmdPipelineBarrier(pl.cb, pipeCompute|pipeTransfer|pipeHost, pipeCompute, 0, 1, p(start), 0, nil, 0, nil)
	if pl.nq > 0 {
		v.CmdWriteTimestamp(pl.cb, pipeBottom, pl.queries, 0)
	}
	mb := &memoryBarrier{sType: stMemoryBarrier, srcAccessMask: accShaderWrite, dstAccessMask: accShaderRead | accShaderWrite}
	dyn := new(uint32)
	var last uint64
	for i, l := range launches {
		pipe, err := d.pipeline(l.Kernel)
		if err != nil {
			return fail(err)
		}
		if l.Barrier {
			purego.SyscallN(v.rawCmdPipelineBarrier, pl.cb, pipeCompute, pipeCompute, 0, 1, uintptr(p(mb)), 0, 0, 0, 0)
		}
		if pipe != last {
			purego.SyscallN(v.rawCmdBindPipeline, pl.cb, bindCompute, uintptr(pipe))
			last = pipe
		}
		*dyn = uint32(l.Params)
		purego.SyscallN(v.rawCmdBindDescriptorSets, pl.cb, bindCompute, uintptr(d.pipeLayout), 0, 1, uintptr(p(&sets[idx[i]])), 1, uintptr(p(dyn)))
		purego.SyscallN(v.rawCmdDispatch, pl.cb, uintptr(l.Groups[0]), uintptr(l.Groups[1]), uintptr(l.Groups[2]))
		if pl.timing == gpu.TimingLaunches {
			purego.SyscallN(v.rawCmdWriteTimestamp, pl.cb, pipeBottom, uintptr(pl.queries), uintptr(i+1))
		}
	}
	if pl.timing == gpu.TimingSpan {
		v.CmdWriteTimestamp(pl.cb, pipeBottom, pl.queries, 1)
	}
	end := &memoryBarrier{sType: stMemoryBarrier, srcAccessMask: accShaderWrite, dstAccessMask: accHostRead | accTransferRead | accShaderRead}
	v.CmdPipelineBarrier(pl.cb, pipeCompute, pipeHost|pipeTransfer|pipeCompute, 0, 1, p(end), 0, nil, 0, nil)
	if err := vkErr("vkEndCommandBuffer", v.EndCommandBuffer(pl.cb)); err != nil {
		return fail(err)
	}
	return pl, pl.params.mapped[:paramBytes], nil
}

// RunPlan submits a plan after the work recorded or submitted before it.
func (d *Driver) RunPlan(pp gpu.Plan) error {
	pl, ok := pp.(*vplan)
	if !ok || pl.cb == 0 {
		return fmt.Errorf("vulkan: RunPlan of a plan this driver did not make")
	}
	return d.submit(pl.cb)
}

// submit queues cb after whatever is being recorded (submitted first).
func (d *Driver) submit(cb uintptr) error {
	if d.recording {
		if err := d.submitBatch(); err != nil {
			return err
		}
	}
	cbs := []uintptr{cb}
	si := &submitInfo{sType: stSubmitInfo, commandBufferCount: 1, pCommandBuffers: p(&cbs[0])}
	if err := vkErr("vkQueueSubmit", d.v.QueueSubmit(d.queue, 1, p(si), 0)); err != nil {
		return err
	}
	d.submitted = true
	return nil
}

// ReleasePlan frees a plan's command buffer, descriptor sets and parameter
// buffer.
func (d *Driver) ReleasePlan(pp gpu.Plan) {
	pl, ok := pp.(*vplan)
	if !ok {
		return
	}
	if pl.cb != 0 {
		cbs := []uintptr{pl.cb}
		d.v.FreeCommandBuffers(d.dev, d.cmdPool, 1, p(&cbs[0]))
		pl.cb = 0
	}
	if pl.pool != 0 {
		d.v.DestroyDescriptorPool(d.dev, pl.pool, nil)
		pl.pool = 0
	}
	if pl.params != nil {
		d.release(pl.params)
		pl.params = nil
	}
	if pl.queries != 0 {
		d.v.DestroyQueryPool(d.dev, pl.queries, nil)
		pl.queries = 0
	}
}

var _ gpu.LaunchTimer = (*Driver)(nil)

// SetTiming sets what plans recorded from now on time with GPU
// timestamps; it fails when the compute queue has no timestamps.
func (d *Driver) SetTiming(t gpu.Timing) error {
	if t != gpu.TimingOff && (d.tsBits == 0 || d.tsPeriod <= 0) {
		return fmt.Errorf("vulkan: %s cannot time compute work (its queue has no timestamps)", d.info.Name)
	}
	d.timing = t
	return nil
}

// Times reads the timestamps of a plan's last run, which has finished
// (see gpu.LaunchTimer).
func (d *Driver) Times(pp gpu.Plan, launches []float64) (float64, float64, bool, error) {
	pl, ok := pp.(*vplan)
	if !ok || pl.nq == 0 {
		return 0, 0, false, nil
	}
	if cap(pl.ticks) < pl.nq {
		pl.ticks = make([]uint64, pl.nq)
	}
	t := pl.ticks[:pl.nq]
	if err := vkErr("vkGetQueryPoolResults", d.v.GetQueryPoolResults(d.dev, pl.queries, 0, uint32(pl.nq), uintptr(8*pl.nq), p(&t[0]), 8, queryResult64|queryWait)); err != nil {
		return 0, 0, false, err
	}
	mask := ^uint64(0)
	if d.tsBits < 64 {
		mask = 1<<d.tsBits - 1
	}
	ns := func(a, b uint64) float64 { return float64((b-a)&mask) * d.tsPeriod }
	if pl.timing == gpu.TimingLaunches {
		for i := 0; i < pl.launches && i < len(launches); i++ {
			launches[i] = ns(t[i], t[i+1])
		}
	}
	return ns(t[0], t[pl.nq-1]), float64(t[0]&mask) * d.tsPeriod, true, nil
}

// Copy records the copies into a one-time command buffer, between barriers
// that order them after earlier and before later work, and submits it.
func (d *Driver) Copy(regions []gpu.CopyRegion) error {
	if len(regions) == 0 {
		return nil
	}
	if d.copyIdx == len(d.copyCBs) {
		cb, err := d.newCommandBuffer()
		if err != nil {
			return err
		}
		d.copyCBs = append(d.copyCBs, cb)
	}
	cb := d.copyCBs[d.copyIdx]
	d.copyIdx++
	v := d.v
	bi := &commandBufferBeginInfo{sType: stCommandBufferBegin, flags: oneTimeSubmit}
	if err := vkErr("vkBeginCommandBuffer", v.BeginCommandBuffer(cb, p(bi))); err != nil {
		return err
	}
	pre := &memoryBarrier{sType: stMemoryBarrier, srcAccessMask: accShaderWrite | accTransferWrite | accHostWrite, dstAccessMask: accTransferRead | accTransferWrite}
	v.CmdPipelineBarrier(cb, pipeCompute|pipeTransfer|pipeHost, pipeTransfer, 0, 1, p(pre), 0, nil, 0, nil)
	cp := make([]bufferCopy, 0, len(regions))
	for i := 0; i < len(regions); {
		r := regions[i]
		src, ok1 := r.Src.(*vbuf)
		dst, ok2 := r.Dst.(*vbuf)
		if !ok1 || !ok2 {
			v.EndCommandBuffer(cb)
			return fmt.Errorf("vulkan: copy between buffers this driver did not make")
		}
		cp = cp[:0]
		j := i
		for ; j < len(regions) && regions[j].Src == r.Src && regions[j].Dst == r.Dst; j++ {
			q := regions[j]
			cp = append(cp, bufferCopy{srcOffset: uint64(q.SrcOff), dstOffset: uint64(q.DstOff), size: uint64(q.Size)})
		}
		v.CmdCopyBuffer(cb, src.buf, dst.buf, uint32(len(cp)), unsafe.Pointer(&cp[0]))
		i = j
	}
	post := &memoryBarrier{sType: stMemoryBarrier, srcAccessMask: accTransferWrite, dstAccessMask: accShaderRead | accShaderWrite | accHostRead | accTransferRead | accTransferWrite}
	v.CmdPipelineBarrier(cb, pipeTransfer, pipeCompute|pipeHost|pipeTransfer, 0, 1, p(post), 0, nil, 0, nil)
	if err := vkErr("vkEndCommandBuffer", v.EndCommandBuffer(cb)); err != nil {
		return err
	}
	return d.submit(cb)
}
