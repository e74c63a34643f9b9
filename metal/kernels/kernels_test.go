package kernels

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"
)

// TestGeneratedUpToDate regenerates spv/ and msl/ from src/ and fails if
// the committed files differ. It needs glslangValidator and spirv-cross;
// without them it skips, except under CI=true where it fails.
func TestGeneratedUpToDate(t *testing.T) {
	for _, tool := range []string{"glslangValidator", "spirv-cross", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found under CI=true: scripts/test.sh installs glslang-tools and spirv-cross", tool)
			}
			t.Skipf("%s not found: scripts/test.sh installs glslang-tools and spirv-cross to check the generated kernels", tool)
		}
	}
	out := t.TempDir()
	cmd := exec.Command("bash", "gen.sh", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, msg)
	}
	for id := ID(0); id < Count; id++ {
		for _, f := range []string{"spv/" + id.String() + ".spv", "msl/" + id.String() + ".metal"} {
			want, err := os.ReadFile(filepath.Join(out, f))
			if err != nil {
				t.Fatalf("regenerated %s: %v", f, err)
			}
			got, err := os.ReadFile(f)
			if err != nil {
				t.Fatalf("committed %s: %v", f, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is stale: run `go generate ./metal/kernels` and commit", f)
			}
		}
	}
}

var (
	bufferRe = regexp.MustCompile(`\[\[buffer\((\d+)\)\]\]`)
	paramsRe = regexp.MustCompile(`(?s)struct Params\n\{(.*?)\};`)
	memberRe = regexp.MustCompile(`(?m)^\s+(uint|float) \w+;`)
	wgRe     = regexp.MustCompile(`gl_WorkGroupSize \[\[maybe_unused\]\] = uint3\((\d+)u, 1u, 1u\)`)
)

// TestTableMatchesMSL checks that each kernel's Metal signature binds
// exactly the parameter block at buffer 0 plus the table's storage
// bindings (no hidden buffers such as buffer-size arrays), and that the
// workgroup size matches.
func TestTableMatchesMSL(t *testing.T) {
	for id := ID(0); id < Count; id++ {
		src, err := MSL(id)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, m := range bufferRe.FindAllStringSubmatch(src, -1) {
			n, _ := strconv.Atoi(m[1])
			got = append(got, n)
		}
		sort.Ints(got)
		want := append([]int{0}, id.Info().Bindings...)
		if len(got) != len(want) {
			t.Errorf("%s: MSL buffers %v, table says %v", id, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: MSL buffers %v, table says %v", id, got, want)
				break
			}
		}
		m := wgRe.FindStringSubmatch(src)
		if m == nil {
			t.Errorf("%s: no workgroup size in MSL", id)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n != id.Info().Local {
			t.Errorf("%s: MSL workgroup size %d, table says %d", id, n, id.Info().Local)
		}
		if !regexp.MustCompile(`kernel void ` + id.String() + `\(`).MatchString(src) {
			t.Errorf("%s: MSL has no kernel function named %s", id, id)
		}
		if pm := paramsRe.FindStringSubmatch(src); pm == nil {
			t.Errorf("%s: no Params struct in MSL", id)
		} else if n := len(memberRe.FindAllString(pm[1], -1)); n != ParamHeader+id.Info().Params {
			t.Errorf("%s: MSL Params has %d members, table says %d", id, n, ParamHeader+id.Info().Params)
		}
		if b, err := SPIRV(id); err != nil || len(b) < 20 || b[0] != 0x03 || b[1] != 0x02 || b[2] != 0x23 || b[3] != 0x07 {
			t.Errorf("%s: SPIR-V missing or without magic number (err %v)", id, err)
		}
	}
}

// TestMSLNeedsNoPreciseMath checks that no kernel's accuracy rests on GLSL
// `precise` (NoContraction): SPIRV-Cross carries it into MSL only as
// [[clang::optnone]] helper functions (spvFMul, spvFSub, ...), which
// Apple's compiler is not bound to keep. Kernels that need an exact step
// spell it with fma() instead.
func TestMSLNeedsNoPreciseMath(t *testing.T) {
	for id := ID(0); id < Count; id++ {
		src, err := MSL(id)
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`optnone|spvF(Mul|Add|Sub)`).MatchString(src) {
			t.Errorf("%s: MSL relies on no-contraction helpers (GLSL `precise`); use fma() for exact steps", id)
		}
	}
}
