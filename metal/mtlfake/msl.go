package mtlfake

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// arg is one [[buffer(n)]] argument of a kernel: its address space
// ("constant", "const device" or "device": only the last is written).
type arg struct {
	index int
	space string
}

// kernelMSL is what the fake reads from a kernel's MSL.
type kernelMSL struct {
	name   string
	local  int   // threads per threadgroup the kernel is written for
	args   []arg // declared buffer arguments
	tgMem  int   // bytes of threadgroup arrays
	params int   // bytes of the parameter struct [[buffer(0)]] reads
}

var (
	kernelRe = regexp.MustCompile(`(?m)^kernel void (\w+)\(([^\n]*)\)$`)
	argRe    = regexp.MustCompile(`(constant|const device|device) [\w:<>]+\s*[&*]\s*\w+ \[\[buffer\((\d+)\)\]\]`)
	localRe  = regexp.MustCompile(`gl_WorkGroupSize \[\[maybe_unused\]\] = uint3\((\d+)u, 1u, 1u\)`)
	tgRe     = regexp.MustCompile(`(?m)^\s+threadgroup (\w+) \w+((?:\[\d+\])+);`)
	dimRe    = regexp.MustCompile(`\[(\d+)\]`)
	paramsRe = regexp.MustCompile(`(?ms)^struct Params\n\{\n(.*?)^\};`)
	memberRe = regexp.MustCompile(`^\s*(\w+) \w+((?:\[\d+\])*);$`)
)

// memberLayout is the size and alignment of the MSL scalar and vector
// types a parameter struct holds.
var memberLayout = map[string][2]int{"uint": {4, 4}, "int": {4, 4}, "float": {4, 4}, "uint2": {8, 8}, "float2": {8, 8}, "uint4": {16, 16}, "int4": {16, 16}, "float4": {16, 16}}

var typeSize = map[string]int{"float": 4, "uint": 4, "int": 4, "half": 2, "float2": 8, "float4": 16, "uint2": 8, "uint4": 16}

// parseMSL reads the single kernel of src (as SPIRV-Cross writes it).
func parseMSL(src string) (kernelMSL, error) {
	ks := kernelRe.FindAllStringSubmatch(src, -1)
	if len(ks) != 1 {
		return kernelMSL{}, fmt.Errorf("MSL source declares %d kernel functions, want 1", len(ks))
	}
	m := kernelMSL{name: ks[0][1]}
	seen := map[int]bool{}
	for _, a := range argRe.FindAllStringSubmatch(ks[0][2], -1) {
		n, _ := strconv.Atoi(a[2])
		if seen[n] {
			return kernelMSL{}, fmt.Errorf("kernel %s declares [[buffer(%d)]] twice", m.name, n)
		}
		seen[n] = true
		m.args = append(m.args, arg{index: n, space: a[1]})
	}
	if l := localRe.FindStringSubmatch(src); l != nil {
		m.local, _ = strconv.Atoi(l[1])
	} else {
		return kernelMSL{}, fmt.Errorf("kernel %s: no workgroup size in its MSL", m.name)
	}
	ps := paramsRe.FindStringSubmatch(src)
	if ps == nil {
		return kernelMSL{}, fmt.Errorf("kernel %s: no struct Params in its MSL", m.name)
	}
	align := 4
	for _, line := range strings.Split(strings.TrimRight(ps[1], "\n"), "\n") {
		f := memberRe.FindStringSubmatch(line)
		if f == nil {
			return kernelMSL{}, fmt.Errorf("kernel %s: parameter struct member %q not understood", m.name, line)
		}
		l, ok := memberLayout[f[1]]
		if !ok {
			return kernelMSL{}, fmt.Errorf("kernel %s: parameter struct member of unknown type %s", m.name, f[1])
		}
		n := 1
		for _, dim := range dimRe.FindAllStringSubmatch(f[2], -1) {
			k, _ := strconv.Atoi(dim[1])
			n *= k
		}
		m.params = (m.params+l[1]-1)/l[1]*l[1] + n*l[0]
		align = max(align, l[1])
	}
	m.params = (m.params + align - 1) / align * align
	for _, t := range tgRe.FindAllStringSubmatch(src, -1) {
		size, ok := typeSize[t[1]]
		if !ok {
			return kernelMSL{}, fmt.Errorf("kernel %s: threadgroup array of unknown type %s", m.name, t[1])
		}
		for _, dim := range dimRe.FindAllStringSubmatch(t[2], -1) {
			n, _ := strconv.Atoi(dim[1])
			size *= n
		}
		m.tgMem += size
	}
	return m, nil
}
