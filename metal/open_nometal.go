//go:build !(darwin && arm64)

package metal

import "mlxchat/tensor"

func openMetalBackend() (tensor.Backend, error) { return nil, unavailable() }
