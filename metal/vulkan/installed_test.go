//go:build linux

package vulkan

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/ebitengine/purego"
)

// lavapipeInstalled reports whether the Vulkan loader and Mesa's lavapipe
// driver (or drivers named by VK_ICD_FILENAMES / VK_DRIVER_FILES) are on
// this machine, so that a failing Open is a bug to report, not a missing
// tool to skip over. what names what was found or what is missing.
func lavapipeInstalled() (ok bool, what string) {
	lib, err := purego.Dlopen("libvulkan.so.1", purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return false, "libvulkan.so.1 is not installed"
	}
	purego.Dlclose(lib)
	for _, env := range []string{"VK_DRIVER_FILES", "VK_ICD_FILENAMES"} {
		if v := os.Getenv(env); v != "" {
			return true, "libvulkan.so.1 and " + env + "=" + v
		}
	}
	dirs := []string{"/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/usr/share/vulkan/icd.d"}
	for _, d := range strings.Split(os.Getenv("XDG_DATA_DIRS"), ":") {
		if d != "" {
			dirs = append(dirs, filepath.Join(d, "vulkan", "icd.d"))
		}
	}
	for _, d := range dirs {
		if m, _ := filepath.Glob(filepath.Join(d, "lvp_icd*.json")); len(m) > 0 {
			return true, "libvulkan.so.1 and lavapipe (" + m[0] + ")"
		}
	}
	return false, "Mesa's lavapipe driver (mesa-vulkan-drivers) is not installed"
}
