package mtlfake

import (
	"testing"

	"mlxchat/metal/kernels"
)

// TestParseCommittedMSL: every committed kernel's MSL parses to the
// bindings, workgroup size and threadgroup memory the kernel table and
// the GLSL sources give.
func TestParseCommittedMSL(t *testing.T) {
	tg := map[string]int{"qmm4": 2 * 32 * 17 * 16, "softmax": 128 * 4, "argmax": 128 * 8}
	for id := kernels.ID(0); id < kernels.Count; id++ {
		src, err := kernels.MSL(id)
		if err != nil {
			t.Fatal(err)
		}
		m, err := parseMSL(src)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if m.name != id.String() || m.local != id.Info().Local {
			t.Errorf("%s: parsed name %s, local %d", id, m.name, m.local)
		}
		want := append([]int{0}, id.Info().Bindings...)
		if len(m.args) != len(want) {
			t.Errorf("%s: parsed %v, want buffers %v", id, m.args, want)
			continue
		}
		writes := 0
		for i, a := range m.args {
			if a.index != want[i] {
				t.Errorf("%s: parsed %v, want buffers %v", id, m.args, want)
			}
			if a.space == "device" {
				writes++
			}
		}
		if m.args[0].space != "constant" || writes == 0 {
			t.Errorf("%s: parameter block %q, %d written buffers", id, m.args[0].space, writes)
		}
		if n, ok := tg[m.name]; ok && m.tgMem != n {
			t.Errorf("%s: %d bytes of threadgroup memory, want %d", id, m.tgMem, n)
		}
		if words := 4 * (kernels.ParamHeader + id.Info().Params); m.params != words && !id.Info().Program || m.params < words || m.params > 4<<10 {
			t.Errorf("%s: parameter struct of %d bytes, the kernel table gives %d bytes of words (program: %v)", id, m.params, words, id.Info().Program)
		}
		if m.tgMem > 32<<10 {
			t.Errorf("%s: %d bytes of threadgroup memory", id, m.tgMem)
		}
		t.Logf("%s: buffers %v, %d bytes of threadgroup memory, %d-byte parameter struct", id, m.args, m.tgMem, m.params)
	}
	if _, err := parseMSL("kernel void a(device float& x [[buffer(1)]])\nkernel void b()\n"); err == nil {
		t.Error("two kernels: want an error")
	}
}
