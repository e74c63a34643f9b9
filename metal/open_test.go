package metal

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestOpenErrors(t *testing.T) {
	cases := []struct {
		name string
		want string // substring of the error; "" = may succeed
	}{
		{"cpu", "--backend cpu: not a GPU backend"},
		{"cuda", "--backend cuda: unknown backend"},
	}
	if runtime.GOOS != "darwin" || runtime.GOARCH != "arm64" {
		cases = append(cases, struct{ name, want string }{"metal", "--backend metal: not available on " + runtime.GOOS + "/" + runtime.GOARCH})
	}
	for _, c := range cases {
		b, err := Open(c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) = %v, %v; want error containing %q", c.name, b, err, c.want)
		}
	}
}

// TestOpenGPU opens this platform's GPU backend (Vulkan on Linux, Metal
// on Apple silicon) and runs one op through it.
func TestOpenGPU(t *testing.T) {
	name := "vulkan"
	switch {
	case runtime.GOOS == "darwin" && runtime.GOARCH == "arm64":
		name = "metal"
	case runtime.GOOS != "linux":
		t.Skipf("no GPU backend on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	b, err := Open(name)
	if name == "metal" && err != nil {
		t.Fatalf("Open(metal) on Apple silicon: %v", err)
	}
	if err != nil {
		if lvp, _ := filepath.Glob("/usr/share/vulkan/icd.d/lvp_icd*.json"); len(lvp) > 0 {
			t.Fatalf("Open(vulkan) with lavapipe installed (%s): %v", lvp[0], err)
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("Open(vulkan) under CI=true (scripts/test.sh installs mesa-vulkan-drivers libvulkan1): %v", err)
		}
		t.Skipf("no Vulkan device (scripts/test.sh installs mesa-vulkan-drivers libvulkan1): %v", err)
	}
	if b.Name() != name || b.Synchronous() {
		t.Errorf("backend %q synchronous=%v, want async %s", b.Name(), b.Synchronous(), name)
	}
	x := b.Alloc(2, 3)
	copy(x.F32(), []float32{1, 2, 3, 4, 5, 6})
	if err := b.Scale(x, x, 2); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := x.F32()[5]; got != 12 {
		t.Errorf("scaled value %v, want 12", got)
	}
	if c, ok := b.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestDefault(t *testing.T) {
	want := "cpu"
	if runtime.GOOS == "darwin" && runtime.GOARCH == "arm64" {
		want = "metal"
	}
	if got := Default(); got != want {
		t.Errorf("Default() = %q, want %q", got, want)
	}
}
