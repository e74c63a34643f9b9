//go:build linux

package vulkan

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Vulkan enums and flags used here (values from the Vulkan 1.1 headers).
const (
	vkSuccess           = 0
	vkErrorOutOfPool    = -1000069000
	vkErrorFragmented   = -12
	vkErrorOutOfHostMem = -1
	vkErrorOutOfDevMem  = -2

	stApplicationInfo        = 0
	stInstanceCreateInfo     = 1
	stDeviceQueueCreateInfo  = 2
	stDeviceCreateInfo       = 3
	stSubmitInfo             = 4
	stMemoryAllocateInfo     = 5
	stFenceCreateInfo        = 8
	stQueryPoolCreateInfo    = 11
	stBufferCreateInfo       = 12
	stShaderModuleCreateInfo = 16
	stPipelineShaderStage    = 18
	stComputePipelineCreate  = 29
	stPipelineLayoutCreate   = 30
	stDescSetLayoutCreate    = 32
	stDescPoolCreate         = 33
	stDescSetAllocate        = 34
	stWriteDescriptorSet     = 35
	stCommandPoolCreate      = 39
	stCommandBufferAllocate  = 40
	stCommandBufferBegin     = 42
	stMemoryBarrier          = 46
	stPhysProps2             = 1000059001
	stSubgroupProps          = 1000094000

	descUniformBuffer  = 6
	descUniformDynamic = 8
	descStorageBuffer  = 7
	stageCompute       = 0x20

	bufTransferSrc = 0x1
	bufTransferDst = 0x2
	bufUniform     = 0x10
	bufStorage     = 0x20

	memDeviceLocal  = 0x1
	memHostVisible  = 0x2
	memHostCoherent = 0x4
	memHostCached   = 0x8

	queueCompute = 0x2

	bindCompute = 1

	pipeTop      = 0x1
	pipeBottom   = 0x2000
	pipeCompute  = 0x800
	pipeTransfer = 0x1000
	pipeHost     = 0x4000

	accUniformRead   = 0x8
	accShaderRead    = 0x20
	accShaderWrite   = 0x40
	accTransferRead  = 0x800
	accTransferWrite = 0x1000
	accHostRead      = 0x2000
	accHostWrite     = 0x4000

	poolResetCommandBuffer = 0x2
	oneTimeSubmit          = 0x1

	apiVersion11 = 1<<22 | 1<<12

	queryTimestamp = 2
	queryResult64  = 0x1
	queryWait      = 0x2
)

type applicationInfo struct {
	sType              uint32
	pNext              unsafe.Pointer
	pApplicationName   unsafe.Pointer
	applicationVersion uint32
	pEngineName        unsafe.Pointer
	engineVersion      uint32
	apiVersion         uint32
}

type instanceCreateInfo struct {
	sType                   uint32
	pNext                   unsafe.Pointer
	flags                   uint32
	pApplicationInfo        unsafe.Pointer
	enabledLayerCount       uint32
	ppEnabledLayerNames     unsafe.Pointer
	enabledExtensionCount   uint32
	ppEnabledExtensionNames unsafe.Pointer
}

// limitsHead is VkPhysicalDeviceLimits up to the fields read here.
type limitsHead struct {
	maxImageDimension1D, maxImageDimension2D, maxImageDimension3D, maxImageDimensionCube      uint32
	maxImageArrayLayers, maxTexelBufferElements, maxUniformBufferRange, maxStorageBufferRange uint32
	maxPushConstantsSize, maxMemoryAllocationCount, maxSamplerAllocationCount                 uint32
	bufferImageGranularity, sparseAddressSpaceSize                                            uint64
	maxBoundDescriptorSets                                                                    uint32
	perStage                                                                                  [6]uint32
	maxPerStageResources                                                                      uint32
	descriptorSet                                                                             [8]uint32
	vertex                                                                                    [5]uint32
	tess                                                                                      [8]uint32
	geom                                                                                      [5]uint32
	frag                                                                                      [4]uint32
	maxComputeSharedMemorySize                                                                uint32
	maxComputeWorkGroupCount                                                                  [3]uint32
	maxComputeWorkGroupInvocations                                                            uint32
	maxComputeWorkGroupSize                                                                   [3]uint32
	subPixelPrecisionBits, subTexelPrecisionBits, mipmapPrecisionBits                         uint32
	maxDrawIndexedIndexValue, maxDrawIndirectCount                                            uint32
	maxSamplerLodBias, maxSamplerAnisotropy                                                   float32
	maxViewports                                                                              uint32
	maxViewportDimensions                                                                     [2]uint32
	viewportBoundsRange                                                                       [2]float32
	viewportSubPixelBits                                                                      uint32
	minMemoryMapAlignment                                                                     uintptr
	minTexelBufferOffsetAlignment                                                             uint64
	minUniformBufferOffsetAlignment                                                           uint64
	minStorageBufferOffsetAlignment                                                           uint64
	texelAndFramebuffer                                                                       [21]uint32 // minTexelOffset .. maxSampleMaskWords
	timestampComputeAndGraphics                                                               uint32
	timestampPeriod                                                                           float32
}

// physProps is the head of VkPhysicalDeviceProperties; it is read into a
// buffer of physPropsSize bytes.
type physProps struct {
	apiVersion, driverVersion, vendorID, deviceID, deviceType uint32
	deviceName                                                [256]byte
	pipelineCacheUUID                                         [16]byte
	limits                                                    limitsHead
}

const physPropsSize = 824 // sizeof(VkPhysicalDeviceProperties) on 64-bit

type physProps2 struct {
	sType uint32
	pNext unsafe.Pointer
	props [physPropsSize]byte
}

type subgroupProps struct {
	sType                     uint32
	pNext                     unsafe.Pointer
	subgroupSize              uint32
	supportedStages           uint32
	supportedOperations       uint32
	quadOperationsInAllStages uint32
}

type memoryType struct{ propertyFlags, heapIndex uint32 }

type memoryHeap struct {
	size  uint64
	flags uint32
}

type memoryProps struct {
	memoryTypeCount uint32
	memoryTypes     [32]memoryType
	memoryHeapCount uint32
	memoryHeaps     [16]memoryHeap
}

type queueFamilyProps struct {
	queueFlags, queueCount, timestampValidBits uint32
	granularity                                [3]uint32
}

type deviceQueueCreateInfo struct {
	sType            uint32
	pNext            unsafe.Pointer
	flags            uint32
	queueFamilyIndex uint32
	queueCount       uint32
	pQueuePriorities unsafe.Pointer
}

type deviceCreateInfo struct {
	sType                   uint32
	pNext                   unsafe.Pointer
	flags                   uint32
	queueCreateInfoCount    uint32
	pQueueCreateInfos       unsafe.Pointer
	enabledLayerCount       uint32
	ppEnabledLayerNames     unsafe.Pointer
	enabledExtensionCount   uint32
	ppEnabledExtensionNames unsafe.Pointer
	pEnabledFeatures        unsafe.Pointer
}

type bufferCreateInfo struct {
	sType                 uint32
	pNext                 unsafe.Pointer
	flags                 uint32
	size                  uint64
	usage                 uint32
	sharingMode           uint32
	queueFamilyIndexCount uint32
	pQueueFamilyIndices   unsafe.Pointer
}

type memoryRequirements struct {
	size, alignment uint64
	memoryTypeBits  uint32
}

type memoryAllocateInfo struct {
	sType           uint32
	pNext           unsafe.Pointer
	allocationSize  uint64
	memoryTypeIndex uint32
}

type shaderModuleCreateInfo struct {
	sType    uint32
	pNext    unsafe.Pointer
	flags    uint32
	codeSize uintptr
	pCode    unsafe.Pointer
}

type descSetLayoutBinding struct {
	binding, descriptorType, descriptorCount, stageFlags uint32
	pImmutableSamplers                                   unsafe.Pointer
}

type descSetLayoutCreateInfo struct {
	sType        uint32
	pNext        unsafe.Pointer
	flags        uint32
	bindingCount uint32
	pBindings    unsafe.Pointer
}

type pipelineLayoutCreateInfo struct {
	sType                  uint32
	pNext                  unsafe.Pointer
	flags                  uint32
	setLayoutCount         uint32
	pSetLayouts            unsafe.Pointer
	pushConstantRangeCount uint32
	pPushConstantRanges    unsafe.Pointer
}

type shaderStageCreateInfo struct {
	sType               uint32
	pNext               unsafe.Pointer
	flags               uint32
	stage               uint32
	module              uint64
	pName               unsafe.Pointer
	pSpecializationInfo unsafe.Pointer
}

type computePipelineCreateInfo struct {
	sType              uint32
	pNext              unsafe.Pointer
	flags              uint32
	stage              shaderStageCreateInfo
	layout             uint64
	basePipelineHandle uint64
	basePipelineIndex  int32
}

type descPoolSize struct{ typ, count uint32 }

type descPoolCreateInfo struct {
	sType         uint32
	pNext         unsafe.Pointer
	flags         uint32
	maxSets       uint32
	poolSizeCount uint32
	pPoolSizes    unsafe.Pointer
}

type descSetAllocateInfo struct {
	sType              uint32
	pNext              unsafe.Pointer
	descriptorPool     uint64
	descriptorSetCount uint32
	pSetLayouts        unsafe.Pointer
}

type descBufferInfo struct{ buffer, offset, rng uint64 }

type writeDescSet struct {
	sType            uint32
	pNext            unsafe.Pointer
	dstSet           uint64
	dstBinding       uint32
	dstArrayElement  uint32
	descriptorCount  uint32
	descriptorType   uint32
	pImageInfo       unsafe.Pointer
	pBufferInfo      unsafe.Pointer
	pTexelBufferView unsafe.Pointer
}

type commandPoolCreateInfo struct {
	sType            uint32
	pNext            unsafe.Pointer
	flags            uint32
	queueFamilyIndex uint32
}

type commandBufferAllocateInfo struct {
	sType              uint32
	pNext              unsafe.Pointer
	commandPool        uint64
	level              uint32
	commandBufferCount uint32
}

type commandBufferBeginInfo struct {
	sType            uint32
	pNext            unsafe.Pointer
	flags            uint32
	pInheritanceInfo unsafe.Pointer
}

type memoryBarrier struct {
	sType         uint32
	pNext         unsafe.Pointer
	srcAccessMask uint32
	dstAccessMask uint32
}

type bufferCopy struct{ srcOffset, dstOffset, size uint64 }

type submitInfo struct {
	sType                uint32
	pNext                unsafe.Pointer
	waitSemaphoreCount   uint32
	pWaitSemaphores      unsafe.Pointer
	pWaitDstStageMask    unsafe.Pointer
	commandBufferCount   uint32
	pCommandBuffers      unsafe.Pointer
	signalSemaphoreCount uint32
	pSignalSemaphores    unsafe.Pointer
}

type queryPoolCreateInfo struct {
	sType              uint32
	pNext              unsafe.Pointer
	flags              uint32
	queryType          uint32
	queryCount         uint32
	pipelineStatistics uint32
}

type fenceCreateInfo struct {
	sType uint32
	pNext unsafe.Pointer
	flags uint32
}

type p = unsafe.Pointer

// vk holds the Vulkan entry points, resolved from the loader library. The
// per-dispatch ones are also kept as raw addresses for purego.SyscallN,
// which costs a fraction of a reflect-built call.
type vk struct {
	lib uintptr

	rawAllocateDescriptorSets, rawUpdateDescriptorSets, rawCmdBindPipeline uintptr
	rawCmdBindDescriptorSets, rawCmdDispatch, rawCmdPipelineBarrier        uintptr
	rawCmdWriteTimestamp                                                   uintptr

	CreateInstance                         func(ci, alloc, out p) int32
	DestroyInstance                        func(inst uintptr, alloc p)
	EnumeratePhysicalDevices               func(inst uintptr, count, devs p) int32
	GetPhysicalDeviceProperties            func(pd uintptr, props p)
	GetPhysicalDeviceProperties2           func(pd uintptr, props p)
	GetPhysicalDeviceQueueFamilyProperties func(pd uintptr, count, props p)
	GetPhysicalDeviceMemoryProperties      func(pd uintptr, props p)
	CreateDevice                           func(pd uintptr, ci, alloc, out p) int32
	DestroyDevice                          func(dev uintptr, alloc p)
	GetDeviceQueue                         func(dev uintptr, family, index uint32, out p)
	CreateBuffer                           func(dev uintptr, ci, alloc, out p) int32
	DestroyBuffer                          func(dev uintptr, buf uint64, alloc p)
	GetBufferMemoryRequirements            func(dev uintptr, buf uint64, out p)
	AllocateMemory                         func(dev uintptr, ai, alloc, out p) int32
	FreeMemory                             func(dev uintptr, mem uint64, alloc p)
	BindBufferMemory                       func(dev uintptr, buf, mem, off uint64) int32
	MapMemory                              func(dev uintptr, mem, off, size uint64, flags uint32, out p) int32
	UnmapMemory                            func(dev uintptr, mem uint64)
	CreateShaderModule                     func(dev uintptr, ci, alloc, out p) int32
	DestroyShaderModule                    func(dev uintptr, m uint64, alloc p)
	CreateDescriptorSetLayout              func(dev uintptr, ci, alloc, out p) int32
	DestroyDescriptorSetLayout             func(dev uintptr, l uint64, alloc p)
	CreatePipelineLayout                   func(dev uintptr, ci, alloc, out p) int32
	DestroyPipelineLayout                  func(dev uintptr, l uint64, alloc p)
	CreateComputePipelines                 func(dev uintptr, cache uint64, n uint32, ci, alloc, out p) int32
	DestroyPipeline                        func(dev uintptr, pl uint64, alloc p)
	CreateDescriptorPool                   func(dev uintptr, ci, alloc, out p) int32
	DestroyDescriptorPool                  func(dev uintptr, pool uint64, alloc p)
	ResetDescriptorPool                    func(dev uintptr, pool uint64, flags uint32) int32
	AllocateDescriptorSets                 func(dev uintptr, ai, out p) int32
	UpdateDescriptorSets                   func(dev uintptr, nw uint32, w p, nc uint32, c p)
	CreateCommandPool                      func(dev uintptr, ci, alloc, out p) int32
	DestroyCommandPool                     func(dev uintptr, pool uint64, alloc p)
	AllocateCommandBuffers                 func(dev uintptr, ai, out p) int32
	FreeCommandBuffers                     func(dev uintptr, pool uint64, n uint32, cbs p)
	BeginCommandBuffer                     func(cb uintptr, bi p) int32
	EndCommandBuffer                       func(cb uintptr) int32
	ResetCommandBuffer                     func(cb uintptr, flags uint32) int32
	CmdBindPipeline                        func(cb uintptr, bp uint32, pl uint64)
	CmdBindDescriptorSets                  func(cb uintptr, bp uint32, layout uint64, first, n uint32, sets p, nd uint32, dyn p)
	CmdDispatch                            func(cb uintptr, x, y, z uint32)
	CmdPipelineBarrier                     func(cb uintptr, src, dst, dep, nm uint32, mb p, nb uint32, bb p, ni uint32, ib p)
	CmdCopyBuffer                          func(cb uintptr, src, dst uint64, n uint32, regions p)
	QueueSubmit                            func(q uintptr, n uint32, si p, fence uint64) int32
	QueueWaitIdle                          func(q uintptr) int32
	DeviceWaitIdle                         func(dev uintptr) int32
	CreateFence                            func(dev uintptr, ci, alloc, out p) int32
	DestroyFence                           func(dev uintptr, f uint64, alloc p)
	WaitForFences                          func(dev uintptr, n uint32, fences p, all uint32, timeout uint64) int32
	ResetFences                            func(dev uintptr, n uint32, fences p) int32
	CreateQueryPool                        func(dev uintptr, ci, alloc, out p) int32
	DestroyQueryPool                       func(dev uintptr, pool uint64, alloc p)
	CmdResetQueryPool                      func(cb uintptr, pool uint64, first, n uint32)
	CmdWriteTimestamp                      func(cb uintptr, stage uint32, pool uint64, query uint32)
	GetQueryPoolResults                    func(dev uintptr, pool uint64, first, n uint32, size uintptr, data p, stride uint64, flags uint32) int32
}

// loadVK opens the Vulkan loader and resolves every entry point.
func loadVK() (*vk, error) {
	var lib uintptr
	var err error
	for _, name := range []string{"libvulkan.so.1", "libvulkan.so"} {
		lib, err = purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("vulkan: cannot load libvulkan.so.1 (install libvulkan1 and a driver, e.g. mesa-vulkan-drivers): %w", err)
	}
	v := &vk{lib: lib}
	fns := []struct {
		ptr  any
		name string
	}{
		{&v.CreateInstance, "vkCreateInstance"},
		{&v.DestroyInstance, "vkDestroyInstance"},
		{&v.EnumeratePhysicalDevices, "vkEnumeratePhysicalDevices"},
		{&v.GetPhysicalDeviceProperties, "vkGetPhysicalDeviceProperties"},
		{&v.GetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2"},
		{&v.GetPhysicalDeviceQueueFamilyProperties, "vkGetPhysicalDeviceQueueFamilyProperties"},
		{&v.GetPhysicalDeviceMemoryProperties, "vkGetPhysicalDeviceMemoryProperties"},
		{&v.CreateDevice, "vkCreateDevice"},
		{&v.DestroyDevice, "vkDestroyDevice"},
		{&v.GetDeviceQueue, "vkGetDeviceQueue"},
		{&v.CreateBuffer, "vkCreateBuffer"},
		{&v.DestroyBuffer, "vkDestroyBuffer"},
		{&v.GetBufferMemoryRequirements, "vkGetBufferMemoryRequirements"},
		{&v.AllocateMemory, "vkAllocateMemory"},
		{&v.FreeMemory, "vkFreeMemory"},
		{&v.BindBufferMemory, "vkBindBufferMemory"},
		{&v.MapMemory, "vkMapMemory"},
		{&v.UnmapMemory, "vkUnmapMemory"},
		{&v.CreateShaderModule, "vkCreateShaderModule"},
		{&v.DestroyShaderModule, "vkDestroyShaderModule"},
		{&v.CreateDescriptorSetLayout, "vkCreateDescriptorSetLayout"},
		{&v.DestroyDescriptorSetLayout, "vkDestroyDescriptorSetLayout"},
		{&v.CreatePipelineLayout, "vkCreatePipelineLayout"},
		{&v.DestroyPipelineLayout, "vkDestroyPipelineLayout"},
		{&v.CreateComputePipelines, "vkCreateComputePipelines"},
		{&v.DestroyPipeline, "vkDestroyPipeline"},
		{&v.CreateDescriptorPool, "vkCreateDescriptorPool"},
		{&v.DestroyDescriptorPool, "vkDestroyDescriptorPool"},
		{&v.ResetDescriptorPool, "vkResetDescriptorPool"},
		{&v.AllocateDescriptorSets, "vkAllocateDescriptorSets"},
		{&v.UpdateDescriptorSets, "vkUpdateDescriptorSets"},
		{&v.CreateCommandPool, "vkCreateCommandPool"},
		{&v.DestroyCommandPool, "vkDestroyCommandPool"},
		{&v.AllocateCommandBuffers, "vkAllocateCommandBuffers"},
		{&v.FreeCommandBuffers, "vkFreeCommandBuffers"},
		{&v.BeginCommandBuffer, "vkBeginCommandBuffer"},
		{&v.EndCommandBuffer, "vkEndCommandBuffer"},
		{&v.ResetCommandBuffer, "vkResetCommandBuffer"},
		{&v.CmdBindPipeline, "vkCmdBindPipeline"},
		{&v.CmdBindDescriptorSets, "vkCmdBindDescriptorSets"},
		{&v.CmdDispatch, "vkCmdDispatch"},
		{&v.CmdPipelineBarrier, "vkCmdPipelineBarrier"},
		{&v.CmdCopyBuffer, "vkCmdCopyBuffer"},
		{&v.QueueSubmit, "vkQueueSubmit"},
		{&v.QueueWaitIdle, "vkQueueWaitIdle"},
		{&v.DeviceWaitIdle, "vkDeviceWaitIdle"},
		{&v.CreateFence, "vkCreateFence"},
		{&v.DestroyFence, "vkDestroyFence"},
		{&v.WaitForFences, "vkWaitForFences"},
		{&v.ResetFences, "vkResetFences"},
		{&v.CreateQueryPool, "vkCreateQueryPool"},
		{&v.DestroyQueryPool, "vkDestroyQueryPool"},
		{&v.CmdResetQueryPool, "vkCmdResetQueryPool"},
		{&v.CmdWriteTimestamp, "vkCmdWriteTimestamp"},
		{&v.GetQueryPoolResults, "vkGetQueryPoolResults"},
	}
	for _, f := range fns {
		sym, err := purego.Dlsym(lib, f.name)
		if err != nil {
			return nil, fmt.Errorf("vulkan: loader lacks %s: %w", f.name, err)
		}
		purego.RegisterFunc(f.ptr, sym)
		switch f.name {
		case "vkAllocateDescriptorSets":
			v.rawAllocateDescriptorSets = sym
		case "vkUpdateDescriptorSets":
			v.rawUpdateDescriptorSets = sym
		case "vkCmdBindPipeline":
			v.rawCmdBindPipeline = sym
		case "vkCmdBindDescriptorSets":
			v.rawCmdBindDescriptorSets = sym
		case "vkCmdDispatch":
			v.rawCmdDispatch = sym
		case "vkCmdPipelineBarrier":
			v.rawCmdPipelineBarrier = sym
		case "vkCmdWriteTimestamp":
			v.rawCmdWriteTimestamp = sym
		}
	}
	return v, nil
}

// vkErr turns a VkResult into an error naming the call.
func vkErr(what string, r int32) error {
	if r == vkSuccess {
		return nil
	}
	return fmt.Errorf("vulkan: %s failed: %s", what, resultName(r))
}

func resultName(r int32) string {
	switch r {
	case -1:
		return "VK_ERROR_OUT_OF_HOST_MEMORY"
	case -2:
		return "VK_ERROR_OUT_OF_DEVICE_MEMORY"
	case -3:
		return "VK_ERROR_INITIALIZATION_FAILED"
	case -4:
		return "VK_ERROR_DEVICE_LOST"
	case -5:
		return "VK_ERROR_MEMORY_MAP_FAILED"
	case -7:
		return "VK_ERROR_EXTENSION_NOT_PRESENT"
	case -9:
		return "VK_ERROR_INCOMPATIBLE_DRIVER"
	case -12:
		return "VK_ERROR_FRAGMENTED_POOL"
	case vkErrorOutOfPool:
		return "VK_ERROR_OUT_OF_POOL_MEMORY"
	case 2:
		return "VK_TIMEOUT"
	}
	return fmt.Sprintf("VkResult(%d)", r)
}

func cstr(s string) unsafe.Pointer {
	b := append([]byte(s), 0)
	return unsafe.Pointer(&b[0])
}
