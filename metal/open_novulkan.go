//go:build !linux

package metal

import "mlxchat/tensor"

func openVulkanBackend() (tensor.Backend, error) { return nil, unavailable() }
