//go:build linux

package metal

import (
	"mlxchat/metal/vulkan"
	"mlxchat/tensor"
)

func openVulkanBackend() (tensor.Backend, error) {
	b, _, err := vulkan.Open()
	if err != nil {
		return nil, err
	}
	return b, nil
}
