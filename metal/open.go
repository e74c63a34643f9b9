package metal

import (
	"fmt"
	"runtime"
	"strings"

	"mlxchat/tensor"
)

// Open returns the GPU backend called name: "metal" (macOS on Apple
// silicon) or "vulkan" (Linux with a Vulkan driver). The error says why a
// backend is unavailable here, e.g. "--backend metal: not available on
// linux/amd64". "cpu" is not served here: callers make it with cpu.New.
func Open(name string) (tensor.Backend, error) {
	switch name {
	case "metal":
		b, err := openMetalBackend()
		if err != nil {
			if strings.HasPrefix(err.Error(), "metal: ") { // metal/mtl's errors name it already
				return nil, fmt.Errorf("--backend %w", err)
			}
			return nil, fmt.Errorf("--backend metal: %w", err)
		}
		return b, nil
	case "vulkan":
		b, err := openVulkanBackend()
		if err != nil {
			return nil, fmt.Errorf("--backend vulkan: %w", err)
		}
		return b, nil
	case "cpu":
		return nil, fmt.Errorf("--backend cpu: not a GPU backend (construct it with tensor/cpu)")
	}
	return nil, fmt.Errorf("--backend %s: unknown backend (want cpu, metal or vulkan)", name)
}

// Default is the backend to use when none is asked for: "metal" on
// darwin/arm64, "cpu" elsewhere.
func Default() string {
	if runtime.GOOS == "darwin" && runtime.GOARCH == "arm64" {
		return "metal"
	}
	return "cpu"
}

// unavailable is the error for a backend that this build cannot provide.
func unavailable() error {
	return fmt.Errorf("not available on %s/%s", runtime.GOOS, runtime.GOARCH)
}
