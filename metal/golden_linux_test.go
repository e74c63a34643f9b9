package metal_test

import (
	"os"
	"testing"

	"mlxchat/metal/gpu"
	"mlxchat/metal/mtl"
	"mlxchat/metal/mtlfake"
)

// metalBackend is the Metal host path on the fake Metal device; it fails
// the test on any contract violation. Without Vulkan it skips, except
// under CI=true. The fake runs the dispatches between barriers reversed
// (once: comparing both orders, as metal/mtlfake's host tests do, would
// double the run), so a missing barrier shows as logits off the golden
// ones.
func metalBackend(t *testing.T) *gpu.Backend {
	dev, err := mtlfake.New(mtlfake.Options{Order: mtlfake.Reverse})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("fake Metal device under CI=true: %v", err)
		}
		t.Skipf("no Vulkan device for the fake Metal device: %v", err)
	}
	drv, err := mtl.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	b := gpu.New(drv)
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		for _, v := range dev.Violations() {
			t.Errorf("Metal contract violation: %s", v)
		}
	})
	return b
}
