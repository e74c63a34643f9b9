//go:build linux

package vulkan

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"

	"mlxchat/metal/gpu"
	"mlxchat/metal/kernels"
)

// Driver is the Vulkan implementation of gpu.Driver. It records every
// dispatch into one command buffer that Flush submits and waits for.
type Driver struct {
	v      *vk
	inst   uintptr
	pdev   uintptr
	dev    uintptr
	queue  uintptr
	family uint32

	info     Info
	lim      gpu.Limits
	uboAlign int64
	mem      memoryProps

	// timing is what plans recorded from now on time (SetTiming);
	// tsBits and tsPeriod are the queue's valid timestamp bits and the
	// nanoseconds per timestamp tick (tsBits 0: the queue cannot time).
	timing   gpu.Timing
	tsBits   uint32
	tsPeriod float64

	setLayout  uint64
	pipeLayout uint64
	modules    [kernels.Count]uint64
	pipes      [kernels.Count]uint64

	cmdPool   uint64
	cb        uintptr   // the command buffer being recorded (cbs[cbIdx])
	cbs       []uintptr // command buffers of this step, reused after Flush
	cbIdx     int
	inBatch   int  // dispatches recorded into cb
	submitted bool // earlier batches of this step are already on the queue
	recording bool
	lastPipe  uint64

	copyCBs []uintptr // command buffers of this step's copies (Copy)
	copyIdx int
	fence   uint64

	scr *scratch // heap-allocated, reused by every Dispatch

	stagedUploads bool  // upload weights by copy commands even when mappable (tests)
	uploadChunk   int64 // staging buffer size; 0 = 64 MiB
	stage         *vbuf // weight upload staging, made on first use
	stageCB       uintptr
	stageFence    uint64

	pools   []uint64
	poolIdx int
	ubos    []*vbuf
	uboIdx  int
	uboUsed int64
}

// Info describes the device a Driver runs on.
type Info struct {
	Name         string
	Type         string // "discrete", "integrated", "virtual", "cpu", "other"
	SubgroupSize int
	MaxRange     int64
	OffsetAlign  int64
	SharedMemory int
	APIVersion   string
	// Memory lists the memory types as "flags@heap(size)" for diagnostics
	// (DL device-local, HV host-visible, HC coherent, CA cached).
	Memory string
	// Activations says where Alloc'd buffers go: "device" (device-local
	// and host-visible when possible) or "host" (host-cached memory).
	Activations string
}

// vbuf is a buffer with its own memory allocation.
type vbuf struct {
	buf, mem uint64
	size     int64
	mapped   []byte // nil for device-only memory
}

// scratch holds the structures a dispatch passes to Vulkan by pointer. It
// lives on the heap (its addresses are stable) and is reused.
type scratch struct {
	infos   [8]descBufferInfo
	writes  [8]writeDescSet
	set     uint64
	layout  uint64
	alloc   descSetAllocateInfo
	barrier memoryBarrier
	dynOff  uint32 // dynamic offset of the parameter block
}

const (
	// batchSize dispatches fill one command buffer before it is submitted
	// without waiting, so the GPU runs a step while the host records it.
	batchSize   = 48
	setsPerPool = 512
	uboChunk    = 1 << 20
)

// NewDriver opens the Vulkan loader and picks a device: the one whose index
// MLXCHAT_VULKAN_DEVICE names, else the first discrete GPU, then
// integrated, virtual and CPU devices in that order.
func NewDriver() (*Driver, error) {
	v, err := loadVK()
	if err != nil {
		return nil, err
	}
	d := &Driver{v: v}
	if err := d.init(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *Driver) init() error {
	v := d.v
	app := &applicationInfo{sType: stApplicationInfo, pApplicationName: cstr("mlxchat"), pEngineName: cstr("mlxchat"), apiVersion: apiVersion11}
	ici := &instanceCreateInfo{sType: stInstanceCreateInfo, pApplicationInfo: p(app)}
	if err := vkErr("vkCreateInstance", v.CreateInstance(p(ici), nil, p(&d.inst))); err != nil {
		return err
	}
	var n uint32
	if err := vkErr("vkEnumeratePhysicalDevices", v.EnumeratePhysicalDevices(d.inst, p(&n), nil)); err != nil {
		return err
	}
	if n == 0 {
		return errors.New("vulkan: no physical device (install a driver, e.g. mesa-vulkan-drivers for lavapipe)")
	}
	devs := make([]uintptr, n)
	if err := vkErr("vkEnumeratePhysicalDevices", v.EnumeratePhysicalDevices(d.inst, p(&n), p(&devs[0]))); err != nil {
		return err
	}
	props := make([]*physProps, n)
	for i, pd := range devs {
		buf := new([physPropsSize]byte)
		v.GetPhysicalDeviceProperties(pd, p(buf))
		props[i] = (*physProps)(p(buf))
	}
	pick := -1
	if s := os.Getenv("MLXCHAT_VULKAN_DEVICE"); s != "" {
		i, err := strconv.Atoi(s)
		if err != nil || i < 0 || i >= int(n) {
			return fmt.Errorf("vulkan: MLXCHAT_VULKAN_DEVICE=%q: want an index below %d", s, n)
		}
		pick = i
	} else {
		for _, want := range []uint32{2, 1, 3, 4, 0} { // discrete, integrated, virtual, cpu, other
			for i, pr := range props {
				if pick < 0 && pr.deviceType == want && pr.apiVersion >= apiVersion11 {
					pick = i
				}
			}
		}
		if pick < 0 {
			return errors.New("vulkan: no device supports Vulkan 1.1")
		}
	}
	d.pdev = devs[pick]
	pr := props[pick]
	d.info = Info{
		Name:         cName(pr.deviceName[:]),
		Type:         [...]string{"other", "integrated", "discrete", "virtual", "cpu"}[min(pr.deviceType, 4)],
		MaxRange:     int64(pr.limits.maxStorageBufferRange),
		OffsetAlign:  int64(max(pr.limits.minStorageBufferOffsetAlignment, 16)),
		SharedMemory: int(pr.limits.maxComputeSharedMemorySize),
		APIVersion:   fmt.Sprintf("%d.%d.%d", pr.apiVersion>>22, pr.apiVersion>>12&0x3ff, pr.apiVersion&0xfff),
	}
	d.uboAlign = int64(max(pr.limits.minUniformBufferOffsetAlignment, 16))
	d.lim = gpu.Limits{OffsetAlign: d.info.OffsetAlign, MaxRange: d.info.MaxRange}
	sg := &subgroupProps{sType: stSubgroupProps}
	p2 := &physProps2{sType: stPhysProps2, pNext: p(sg)}
	v.GetPhysicalDeviceProperties2(d.pdev, p(p2))
	d.info.SubgroupSize = int(sg.subgroupSize)
	if sg.supportedOperations&0x4 == 0 || sg.supportedStages&stageCompute == 0 { // ARITHMETIC_BIT
		return fmt.Errorf("vulkan: %s lacks subgroup arithmetic in compute shaders", d.info.Name)
	}
	if d.info.SharedMemory < 16<<10 {
		return fmt.Errorf("vulkan: %s has only %d bytes of shared memory", d.info.Name, d.info.SharedMemory)
	}
	v.GetPhysicalDeviceMemoryProperties(d.pdev, p(&d.mem))
	d.info.Memory = d.describeMemory()
	// Discrete GPUs: the host reads results (logits, new K/V rows) from
	// Data, and CPU reads of device-local memory through the PCIe BAR are
	// uncached (on the H200, 1 MB of logits took 639 ms). Host-cached system
	// memory costs the GPU PCIe traffic instead and measured 25x faster
	// per decoded token, so it is the default there.
	d.info.Activations = "device"
	if d.info.Type == "discrete" {
		d.info.Activations = "host"
	}
	switch a := os.Getenv("MLXCHAT_VULKAN_ACTIVATIONS"); a {
	case "":
	case "device", "host":
		d.info.Activations = a
	default:
		return fmt.Errorf("vulkan: MLXCHAT_VULKAN_ACTIVATIONS=%q: want device or host", a)
	}

	var nq uint32
	v.GetPhysicalDeviceQueueFamilyProperties(d.pdev, p(&nq), nil)
	qf := make([]queueFamilyProps, max(nq, 1))
	v.GetPhysicalDeviceQueueFamilyProperties(d.pdev, p(&nq), p(&qf[0]))
	d.family = ^uint32(0)
	for i := uint32(0); i < nq; i++ {
		if qf[i].queueFlags&queueCompute != 0 {
			d.family = i
			break
		}
	}
	if d.family == ^uint32(0) {
		return fmt.Errorf("vulkan: %s has no compute queue", d.info.Name)
	}
	d.tsBits, d.tsPeriod = qf[d.family].timestampValidBits, float64(pr.limits.timestampPeriod)
	prio := new(float32)
	*prio = 1
	qci := &deviceQueueCreateInfo{sType: stDeviceQueueCreateInfo, queueFamilyIndex: d.family, queueCount: 1, pQueuePriorities: p(prio)}
	dci := &deviceCreateInfo{sType: stDeviceCreateInfo, queueCreateInfoCount: 1, pQueueCreateInfos: p(qci)}
	if err := vkErr("vkCreateDevice", v.CreateDevice(d.pdev, p(dci), nil, p(&d.dev))); err != nil {
		return err
	}
	v.GetDeviceQueue(d.dev, d.family, 0, p(&d.queue))

	binds := make([]descSetLayoutBinding, 8)
	for i := range binds {
		binds[i] = descSetLayoutBinding{binding: uint32(i), descriptorType: descStorageBuffer, descriptorCount: 1, stageFlags: stageCompute}
	}
	binds[0].descriptorType = descUniformDynamic
	lci := &descSetLayoutCreateInfo{sType: stDescSetLayoutCreate, bindingCount: 8, pBindings: p(&binds[0])}
	if err := vkErr("vkCreateDescriptorSetLayout", v.CreateDescriptorSetLayout(d.dev, p(lci), nil, p(&d.setLayout))); err != nil {
		return err
	}
	d.scr = &scratch{layout: d.setLayout}
	d.scr.barrier = memoryBarrier{sType: stMemoryBarrier, srcAccessMask: accShaderWrite, dstAccessMask: accShaderRead | accShaderWrite}
	d.scr.alloc = descSetAllocateInfo{sType: stDescSetAllocate, descriptorSetCount: 1, pSetLayouts: p(&d.scr.layout)}
	for i := range d.scr.writes {
		d.scr.writes[i] = writeDescSet{sType: stWriteDescriptorSet, descriptorCount: 1, pBufferInfo: p(&d.scr.infos[i])}
	}
	layouts := []uint64{d.setLayout}
	plci := &pipelineLayoutCreateInfo{sType: stPipelineLayoutCreate, setLayoutCount: 1, pSetLayouts: p(&layouts[0])}
	if err := vkErr("vkCreatePipelineLayout", v.CreatePipelineLayout(d.dev, p(plci), nil, p(&d.pipeLayout))); err != nil {
		return err
	}
	cpci := &commandPoolCreateInfo{sType: stCommandPoolCreate, flags: poolResetCommandBuffer, queueFamilyIndex: d.family}
	if err := vkErr("vkCreateCommandPool", v.CreateCommandPool(d.dev, p(cpci), nil, p(&d.cmdPool))); err != nil {
		return err
	}
	cb, err := d.newCommandBuffer()
	if err != nil {
		return err
	}
	d.cb = cb
	d.cbs = []uintptr{cb}
	fci := &fenceCreateInfo{sType: stFenceCreateInfo}
	return vkErr("vkCreateFence", v.CreateFence(d.dev, p(fci), nil, p(&d.fence)))
}

func (d *Driver) describeMemory() string {
	var sb strings.Builder
	for i := uint32(0); i < d.mem.memoryTypeCount; i++ {
		t := d.mem.memoryTypes[i]
		if i > 0 {
			sb.WriteString(" ")
		}
		for _, f := range []struct {
			bit  uint32
			name string
		}{{memDeviceLocal, "DL"}, {memHostVisible, "HV"}, {memHostCoherent, "HC"}, {memHostCached, "CA"}} {
			if t.propertyFlags&f.bit != 0 {
				sb.WriteString(f.name)
			}
		}
		if t.propertyFlags == 0 {
			sb.WriteString("-")
		}
		h := d.mem.memoryHeaps[t.heapIndex]
		fmt.Fprintf(&sb, "@%d(%dMiB)", t.heapIndex, h.size>>20)
	}
	return sb.String()
}

func cName(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func (d *Driver) newCommandBuffer() (uintptr, error) {
	var cb uintptr
	ai := &commandBufferAllocateInfo{sType: stCommandBufferAllocate, commandPool: d.cmdPool, commandBufferCount: 1}
	return cb, vkErr("vkAllocateCommandBuffers", d.v.AllocateCommandBuffers(d.dev, p(ai), p(&cb)))
}

// Name returns "vulkan".
func (d *Driver) Name() string { return "vulkan" }

// Info describes the selected device.
func (d *Driver) Info() Info { return d.info }

// Limits returns the binding constraints of the device.
func (d *Driver) Limits() gpu.Limits { return d.lim }

// memType returns a memory type allowed by bits that has all of want,
// preferring one that also has prefer and none of avoid.
func (d *Driver) memType(bits, want, prefer, avoid uint32) (uint32, bool) {
	best, bestScore := uint32(0), -1
	for i := uint32(0); i < d.mem.memoryTypeCount; i++ {
		f := d.mem.memoryTypes[i].propertyFlags
		if bits&(1<<i) == 0 || f&want != want {
			continue
		}
		score := 0
		if f&prefer == prefer {
			score += 2
		}
		if f&avoid == 0 {
			score++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best, bestScore >= 0
}

// newVBuf creates a buffer of size bytes in memory with flags want (and,
// if possible, prefer), mapped when host-visible.
func (d *Driver) newVBuf(size int64, usage, want, prefer, avoid uint32) (*vbuf, error) {
	v := d.v
	b := &vbuf{size: size}
	bci := &bufferCreateInfo{sType: stBufferCreateInfo, size: uint64(size), usage: usage}
	if err := vkErr("vkCreateBuffer", v.CreateBuffer(d.dev, p(bci), nil, p(&b.buf))); err != nil {
		return nil, err
	}
	req := &memoryRequirements{}
	v.GetBufferMemoryRequirements(d.dev, b.buf, p(req))
	t, ok := d.memType(req.memoryTypeBits, want, prefer, avoid)
	if !ok {
		v.DestroyBuffer(d.dev, b.buf, nil)
		return nil, fmt.Errorf("vulkan: no memory type with flags %#x for a %d-byte buffer", want, size)
	}
	mai := &memoryAllocateInfo{sType: stMemoryAllocateInfo, allocationSize: req.size, memoryTypeIndex: t}
	if err := vkErr(fmt.Sprintf("vkAllocateMemory(%d bytes)", req.size), v.AllocateMemory(d.dev, p(mai), nil, p(&b.mem))); err != nil {
		v.DestroyBuffer(d.dev, b.buf, nil)
		return nil, err
	}
	if err := vkErr("vkBindBufferMemory", v.BindBufferMemory(d.dev, b.buf, b.mem, 0)); err != nil {
		d.release(b)
		return nil, err
	}
	if d.mem.memoryTypes[t].propertyFlags&memHostVisible != 0 {
		var ptr unsafe.Pointer
		if err := vkErr("vkMapMemory", v.MapMemory(d.dev, b.mem, 0, uint64(size), 0, p(&ptr))); err != nil {
			d.release(b)
			return nil, err
		}
		b.mapped = unsafe.Slice((*byte)(ptr), size)
	}
	return b, nil
}

const allUsage = bufStorage | bufTransferSrc | bufTransferDst

// NewBuffer returns a zeroed host-visible, coherent buffer, in device-local
// memory when the device offers such memory and it has room.
func (d *Driver) NewBuffer(size int) (gpu.Buf, []byte, error) {
	var b *vbuf
	err := errors.New("host activations")
	if d.info.Activations == "device" {
		b, err = d.newVBuf(int64(size), allUsage|bufUniform, memHostVisible|memHostCoherent|memDeviceLocal, memHostCached, 0)
	}
	if err != nil {
		b, err = d.newVBuf(int64(size), allUsage|bufUniform, memHostVisible|memHostCoherent, memHostCached, 0)
	}
	if err != nil {
		return nil, nil, err
	}
	clear(b.mapped)
	return b, b.mapped, nil
}

// NewWeights copies data into device-local memory (through a staging
// buffer when that memory is not host-visible).
func (d *Driver) NewWeights(data []byte) (gpu.Buf, error) {
	size := int64(len(data))
	b, err := d.newVBuf(size, allUsage, memDeviceLocal, 0, memHostVisible)
	if err != nil {
		b, err = d.newVBuf(size, allUsage, memHostVisible|memHostCoherent, 0, 0)
		if err != nil {
			return nil, err
		}
	}
	if b.mapped != nil && !d.stagedUploads {
		copy(b.mapped, data)
		return b, nil
	}
	if err := d.upload(b, 0, data); err != nil {
		d.release(b)
		return nil, err
	}
	return b, nil
}

var _ gpu.WeightHeap = (*Driver)(nil)

// NewWeightBuffer returns a device-local buffer (host-visible memory when
// no device-local memory is left) that weights are packed into.
func (d *Driver) NewWeightBuffer(size int64) (gpu.Buf, error) {
	b, err := d.newVBuf(size, allUsage, memDeviceLocal, 0, memHostVisible)
	if err != nil {
		b, err = d.newVBuf(size, allUsage, memHostVisible|memHostCoherent, 0, 0)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// WriteWeights copies data into a weight buffer at byte offset off:
// through its mapping, or by copy commands from a staging buffer (waited
// for) when it is device-only.
func (d *Driver) WriteWeights(dst gpu.Buf, off int64, data []byte) error {
	vb, ok := dst.(*vbuf)
	if !ok {
		return fmt.Errorf("vulkan: weights into a buffer this driver did not make")
	}
	if off < 0 || off+int64(len(data)) > vb.size {
		return fmt.Errorf("vulkan: %d bytes of weights at %d overflow a %d-byte buffer", len(data), off, vb.size)
	}
	if vb.mapped != nil && !d.stagedUploads {
		copy(vb.mapped[off:], data)
		return nil
	}
	return d.upload(vb, off, data)
}

// upload copies data into the device-only buffer dst in chunks through a
// staging buffer and command buffer kept for all uploads, waiting for each
// chunk (uploads happen once per weight, outside the recorded step).
func (d *Driver) upload(dst *vbuf, at int64, data []byte) error {
	chunk := d.uploadChunk
	if chunk == 0 {
		chunk = 64 << 20
	}
	if d.stage == nil {
		st, err := d.newVBuf(chunk, bufTransferSrc, memHostVisible|memHostCoherent, 0, 0)
		if err != nil {
			return err
		}
		cb, err := d.newCommandBuffer()
		if err != nil {
			d.release(st)
			return err
		}
		var fence uint64
		fci := &fenceCreateInfo{sType: stFenceCreateInfo}
		if err := vkErr("vkCreateFence", d.v.CreateFence(d.dev, p(fci), nil, p(&fence))); err != nil {
			d.release(st)
			return err
		}
		d.stage, d.stageCB, d.stageFence = st, cb, fence
	}
	for off := int64(0); off < int64(len(data)); off += chunk {
		n := min(chunk, int64(len(data))-off)
		copy(d.stage.mapped, data[off:off+n])
		bi := &commandBufferBeginInfo{sType: stCommandBufferBegin, flags: oneTimeSubmit}
		if err := vkErr("vkBeginCommandBuffer", d.v.BeginCommandBuffer(d.stageCB, p(bi))); err != nil {
			return err
		}
		region := &bufferCopy{srcOffset: 0, dstOffset: uint64(at + off), size: uint64(n)}
		d.v.CmdCopyBuffer(d.stageCB, d.stage.buf, dst.buf, 1, p(region))
		mb := &memoryBarrier{sType: stMemoryBarrier, srcAccessMask: accTransferWrite, dstAccessMask: accShaderRead}
		d.v.CmdPipelineBarrier(d.stageCB, pipeTransfer, pipeCompute, 0, 1, p(mb), 0, nil, 0, nil)
		if err := vkErr("vkEndCommandBuffer", d.v.EndCommandBuffer(d.stageCB)); err != nil {
			return err
		}
		if err := d.submitWait(d.stageCB, d.stageFence); err != nil {
			return err
		}
		if err := vkErr("vkResetCommandBuffer", d.v.ResetCommandBuffer(d.stageCB, 0)); err != nil {
			return err
		}
	}
	return nil
}

func (d *Driver) submitWait(cb uintptr, fence uint64) error {
	cbs := []uintptr{cb}
	si := &submitInfo{sType: stSubmitInfo, commandBufferCount: 1, pCommandBuffers: p(&cbs[0])}
	if err := vkErr("vkQueueSubmit", d.v.QueueSubmit(d.queue, 1, p(si), fence)); err != nil {
		return err
	}
	fences := []uint64{fence}
	if err := vkErr("vkWaitForFences", d.v.WaitForFences(d.dev, 1, p(&fences[0]), 1, ^uint64(0))); err != nil {
		return err
	}
	return vkErr("vkResetFences", d.v.ResetFences(d.dev, 1, p(&fences[0])))
}

// Release frees a buffer made by NewBuffer or NewWeights.
func (d *Driver) Release(b gpu.Buf) {
	if vb, ok := b.(*vbuf); ok {
		d.release(vb)
	}
}

func (d *Driver) release(b *vbuf) {
	if b.mapped != nil {
		d.v.UnmapMemory(d.dev, b.mem)
		b.mapped = nil
	}
	if b.buf != 0 {
		d.v.DestroyBuffer(d.dev, b.buf, nil)
		b.buf = 0
	}
	if b.mem != 0 {
		d.v.FreeMemory(d.dev, b.mem, nil)
		b.mem = 0
	}
}

// pipeline returns kernel k's compute pipeline, creating it on first use.
func (d *Driver) pipeline(k kernels.ID) (uint64, error) {
	if d.pipes[k] != 0 {
		return d.pipes[k], nil
	}
	code, err := kernels.SPIRV(k)
	if err != nil {
		return 0, err
	}
	words := make([]uint32, (len(code)+3)/4) // 4-byte aligned copy
	copy(unsafe.Slice((*byte)(p(&words[0])), len(code)), code)
	smci := &shaderModuleCreateInfo{sType: stShaderModuleCreateInfo, codeSize: uintptr(len(code)), pCode: p(&words[0])}
	if err := vkErr("vkCreateShaderModule("+k.String()+")", d.v.CreateShaderModule(d.dev, p(smci), nil, p(&d.modules[k]))); err != nil {
		return 0, err
	}
	ci := &computePipelineCreateInfo{
		sType:             stComputePipelineCreate,
		stage:             shaderStageCreateInfo{sType: stPipelineShaderStage, stage: stageCompute, module: d.modules[k], pName: cstr("main")},
		layout:            d.pipeLayout,
		basePipelineIndex: -1,
	}
	if err := vkErr("vkCreateComputePipelines("+k.String()+")", d.v.CreateComputePipelines(d.dev, 0, 1, p(ci), nil, p(&d.pipes[k]))); err != nil {
		return 0, err
	}
	return d.pipes[k], nil
}

// descriptorSet allocates a set from this step's pools into scr.set,
// adding a pool when the current ones are full.
func (d *Driver) descriptorSet() error {
	for {
		if d.poolIdx == len(d.pools) {
			sizes := []descPoolSize{{descUniformDynamic, setsPerPool}, {descStorageBuffer, 7 * setsPerPool}}
			pci := &descPoolCreateInfo{sType: stDescPoolCreate, maxSets: setsPerPool, poolSizeCount: 2, pPoolSizes: p(&sizes[0])}
			var pool uint64
			if err := vkErr("vkCreateDescriptorPool", d.v.CreateDescriptorPool(d.dev, p(pci), nil, p(&pool))); err != nil {
				return err
			}
			d.pools = append(d.pools, pool)
		}
		d.scr.alloc.descriptorPool = d.pools[d.poolIdx]
		r1, _, _ := purego.SyscallN(d.v.rawAllocateDescriptorSets, d.dev, uintptr(p(&d.scr.alloc)), uintptr(p(&d.scr.set)))
		switch r := int32(r1); r {
		case vkSuccess:
			return nil
		case vkErrorOutOfPool, vkErrorFragmented:
			d.poolIdx++
		default:
			return vkErr("vkAllocateDescriptorSets", r)
		}
	}
}

// uniform copies a parameter block into this step's uniform ring.
func (d *Driver) uniform(params []byte) (*vbuf, int64, error) {
	need := (int64(len(params)) + d.uboAlign - 1) &^ (d.uboAlign - 1)
	if d.uboIdx < len(d.ubos) && d.uboUsed+need > d.ubos[d.uboIdx].size {
		d.uboIdx++
		d.uboUsed = 0
	}
	if d.uboIdx == len(d.ubos) {
		b, err := d.newVBuf(uboChunk, bufUniform, memHostVisible|memHostCoherent, memDeviceLocal, 0)
		if err != nil {
			return nil, 0, err
		}
		d.ubos = append(d.ubos, b)
		d.uboUsed = 0
	}
	b := d.ubos[d.uboIdx]
	off := d.uboUsed
	copy(b.mapped[off:], params)
	d.uboUsed += need
	return b, off, nil
}

// Dispatch records kernel k with its parameter block and bindings. The
// calls go through purego.SyscallN with pointers into d.scr, which is on
// the heap and so never moves.
func (d *Driver) Dispatch(k kernels.ID, params []byte, binds *[8]gpu.Binding, groups [3]int) error {
	pipe, err := d.pipeline(k)
	if err != nil {
		return err
	}
	if !d.recording {
		bi := &commandBufferBeginInfo{sType: stCommandBufferBegin, flags: oneTimeSubmit}
		if err := vkErr("vkBeginCommandBuffer", d.v.BeginCommandBuffer(d.cb, p(bi))); err != nil {
			return err
		}
		d.recording = true
		d.lastPipe = 0
	}
	ubo, uoff, err := d.uniform(params)
	if err != nil {
		return err
	}
	if err := d.descriptorSet(); err != nil {
		return err
	}
	scr := d.scr
	scr.infos[0] = descBufferInfo{buffer: ubo.buf, offset: 0, rng: uint64((len(params) + 15) &^ 15)}
	scr.writes[0].dstSet, scr.writes[0].dstBinding, scr.writes[0].descriptorType = scr.set, 0, descUniformDynamic
	scr.dynOff = uint32(uoff)
	scr.writes[0].pBufferInfo = p(&scr.infos[0])
	n := 1
	for i := 1; i < 8; i++ {
		bd := binds[i]
		if bd.Buf == nil {
			continue
		}
		vb, ok := bd.Buf.(*vbuf)
		if !ok {
			return fmt.Errorf("vulkan: binding %d of %s is not a Vulkan buffer", i, k)
		}
		scr.infos[n] = descBufferInfo{buffer: vb.buf, offset: uint64(bd.Offset), rng: uint64(bd.Size)}
		w := &scr.writes[n]
		w.dstSet, w.dstBinding, w.descriptorType, w.pBufferInfo = scr.set, uint32(i), descStorageBuffer, p(&scr.infos[n])
		n++
	}
	v := d.v
	purego.SyscallN(v.rawUpdateDescriptorSets, d.dev, uintptr(n), uintptr(p(&scr.writes[0])), 0, 0)
	if pipe != d.lastPipe {
		purego.SyscallN(v.rawCmdBindPipeline, d.cb, bindCompute, uintptr(pipe))
		d.lastPipe = pipe
	}
	purego.SyscallN(v.rawCmdBindDescriptorSets, d.cb, bindCompute, uintptr(d.pipeLayout), 0, 1, uintptr(p(&scr.set)), 1, uintptr(p(&scr.dynOff)))
	purego.SyscallN(v.rawCmdDispatch, d.cb, uintptr(groups[0]), uintptr(groups[1]), uintptr(groups[2]))
	purego.SyscallN(v.rawCmdPipelineBarrier, d.cb, pipeCompute, pipeCompute, 0, 1, uintptr(p(&scr.barrier)), 0, 0, 0, 0)
	d.inBatch++
	if d.inBatch >= batchSize {
		return d.submitBatch()
	}
	return nil
}

// endBatch closes the command buffer being recorded with a barrier that
// makes its writes visible to the host.
func (d *Driver) endBatch() error {
	d.recording = false
	d.inBatch = 0
	mb := &memoryBarrier{sType: stMemoryBarrier, srcAccessMask: accShaderWrite, dstAccessMask: accHostRead}
	d.v.CmdPipelineBarrier(d.cb, pipeCompute, pipeHost, 0, 1, p(mb), 0, nil, 0, nil)
	return vkErr("vkEndCommandBuffer", d.v.EndCommandBuffer(d.cb))
}

// submitBatch submits the full command buffer without waiting and moves
// recording to the next one. The barrier after every dispatch orders the
// next batch after this one (barriers reach across submissions).
func (d *Driver) submitBatch() error {
	if err := d.endBatch(); err != nil {
		return err
	}
	cbs := []uintptr{d.cb}
	si := &submitInfo{sType: stSubmitInfo, commandBufferCount: 1, pCommandBuffers: p(&cbs[0])}
	if err := vkErr("vkQueueSubmit", d.v.QueueSubmit(d.queue, 1, p(si), 0)); err != nil {
		return err
	}
	d.submitted = true
	d.cbIdx++
	if d.cbIdx == len(d.cbs) {
		cb, err := d.newCommandBuffer()
		if err != nil {
			return err
		}
		d.cbs = append(d.cbs, cb)
	}
	d.cb = d.cbs[d.cbIdx]
	return nil
}

// Flush submits what is still being recorded and waits for everything
// submitted in this step.
func (d *Driver) Flush() error {
	if !d.recording && !d.submitted {
		return nil
	}
	var err error
	switch {
	case d.recording:
		if err = d.endBatch(); err == nil {
			err = d.submitWait(d.cb, d.fence)
		}
	default:
		err = vkErr("vkQueueWaitIdle", d.v.QueueWaitIdle(d.queue))
	}
	if err != nil {
		// Do not reuse command buffers the device may still hold.
		if werr := vkErr("vkQueueWaitIdle", d.v.QueueWaitIdle(d.queue)); werr != nil {
			return fmt.Errorf("%w (and then %v)", err, werr)
		}
	}
	d.recording, d.submitted = false, false
	for _, cb := range d.cbs[:d.cbIdx+1] {
		if rerr := vkErr("vkResetCommandBuffer", d.v.ResetCommandBuffer(cb, 0)); err == nil {
			err = rerr
		}
	}
	d.cbIdx, d.inBatch = 0, 0
	d.cb = d.cbs[0]
	for _, cb := range d.copyCBs[:d.copyIdx] {
		if rerr := vkErr("vkResetCommandBuffer", d.v.ResetCommandBuffer(cb, 0)); err == nil {
			err = rerr
		}
	}
	d.copyIdx = 0
	for _, pool := range d.pools[:min(d.poolIdx+1, len(d.pools))] {
		if rerr := vkErr("vkResetDescriptorPool", d.v.ResetDescriptorPool(d.dev, pool, 0)); err == nil {
			err = rerr
		}
	}
	d.poolIdx = 0
	d.uboIdx, d.uboUsed = 0, 0
	return err
}

// Close waits for the device and destroys everything the driver made.
func (d *Driver) Close() error {
	v := d.v
	if d.dev != 0 {
		v.DeviceWaitIdle(d.dev)
		for _, b := range d.ubos {
			d.release(b)
		}
		if d.stage != nil {
			d.release(d.stage)
			v.DestroyFence(d.dev, d.stageFence, nil)
			d.stage = nil
		}
		d.ubos = nil
		for _, pool := range d.pools {
			v.DestroyDescriptorPool(d.dev, pool, nil)
		}
		d.pools = nil
		for k := range d.pipes {
			if d.pipes[k] != 0 {
				v.DestroyPipeline(d.dev, d.pipes[k], nil)
				d.pipes[k] = 0
			}
			if d.modules[k] != 0 {
				v.DestroyShaderModule(d.dev, d.modules[k], nil)
				d.modules[k] = 0
			}
		}
		if d.fence != 0 {
			v.DestroyFence(d.dev, d.fence, nil)
		}
		if d.cmdPool != 0 {
			v.DestroyCommandPool(d.dev, d.cmdPool, nil)
		}
		if d.pipeLayout != 0 {
			v.DestroyPipelineLayout(d.dev, d.pipeLayout, nil)
		}
		if d.setLayout != 0 {
			v.DestroyDescriptorSetLayout(d.dev, d.setLayout, nil)
		}
		v.DestroyDevice(d.dev, nil)
		d.dev = 0
	}
	if d.inst != 0 {
		v.DestroyInstance(d.inst, nil)
		d.inst = 0
	}
	return nil
}

// ActivationsRemote reports whether Alloc'd buffers live in host memory
// across the bus from the GPU (the discrete-GPU default): gpu.Backend then
// stages re-read operands into device-only scratch. MLXCHAT_VULKAN_LOCALIZE=0
// turns that off (for measurements).
func (d *Driver) ActivationsRemote() bool {
	return d.info.Activations == "host" && os.Getenv("MLXCHAT_VULKAN_LOCALIZE") != "0"
}

// NewDeviceBuffer returns a device-local buffer the host never maps.
func (d *Driver) NewDeviceBuffer(size int) (gpu.Buf, error) {
	b, err := d.newVBuf(int64(size), allUsage, memDeviceLocal, 0, memHostVisible)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// SetStagedUploads makes later weight uploads go through a staging buffer
// of chunk bytes and copy commands, as on discrete GPUs, even where weights
// could be written through a mapping (lets tests on lavapipe cover that
// path). Call it before the first upload.
func (d *Driver) SetStagedUploads(chunk int) {
	if chunk > 0 && d.stage == nil {
		d.stagedUploads, d.uploadChunk = true, int64(chunk)
	}
}

// Open returns a tensor.Backend running on the selected Vulkan device.
// MLXCHAT_GPU_FUSION=0|seg|1 sets how much of a decode step is fused
// (gpu.ParseFusion; for measurements), MLXCHAT_GPU_CHAINS=0 turns off the
// folding of row-local ops into their neighbours (gpu.Backend.SetChains),
// MLXCHAT_GPU_EARLY=0 the submitting of a step's first segments while the
// rest is recorded (gpu.Backend.SetEarlySubmit), MLXCHAT_GPU_SCHEDULE=0 the
// reordering of independent launches to share barriers
// (gpu.Backend.SetSchedule).
func Open() (*gpu.Backend, *Driver, error) {
	d, err := NewDriver()
	if err != nil {
		return nil, nil, err
	}
	b := gpu.New(d)
	if f := os.Getenv("MLXCHAT_GPU_FUSION"); f != "" {
		m, err := gpu.ParseFusion(f)
		if err != nil {
			d.Close()
			return nil, nil, fmt.Errorf("vulkan: MLXCHAT_GPU_FUSION: %w", err)
		}
		b.SetFusionMode(m)
	}
	for _, sw := range []struct {
		name string
		set  func(bool)
	}{{"MLXCHAT_GPU_CHAINS", b.SetChains}, {"MLXCHAT_GPU_EARLY", b.SetEarlySubmit}, {"MLXCHAT_GPU_SCHEDULE", b.SetSchedule}} {
		switch c := os.Getenv(sw.name); c {
		case "", "1":
		case "0":
			sw.set(false)
		default:
			d.Close()
			return nil, nil, fmt.Errorf("vulkan: %s=%q: want 0 or 1", sw.name, c)
		}
	}
	return b, d, nil
}
