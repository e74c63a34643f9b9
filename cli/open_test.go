package cli

import (
	"errors"
	"strings"
	"testing"

	"mlxchat/tensor"
)

// TestBackendFallback: when the default GPU backend cannot start and no
// backend was asked for, the CPU backend takes over and one line on
// stderr says why; --backend metal given explicitly is an error instead,
// and a GPU backend that opens is used.
func TestBackendFallback(t *testing.T) {
	fail := func(name string) (tensor.Backend, error) {
		return nil, errors.New("--backend " + name + ": metal: Apple M1: compiling kernel attn: program_source:12: error:\nunknown type")
	}
	cases := []struct {
		name, asked, def string
		open             func(string) (tensor.Backend, error)
		wantBackend      string
		wantErr, wantOut string
	}{
		{"default fails", "", "metal", fail, "cpu", "", "mlxchat: the metal GPU backend is unavailable (metal: Apple M1: compiling kernel attn: program_source:12: error: unknown type); using the CPU backend\n"},
		{"explicit fails", "metal", "metal", fail, "", "--backend metal: metal: Apple M1: compiling kernel attn", ""},
		{"explicit cpu", "cpu", "metal", fail, "cpu", "", ""},
		{"default cpu", "", "cpu", fail, "cpu", "", ""},
		{"default opens", "", "metal", func(string) (tensor.Backend, error) { return fakeGPU{}, nil }, "fake", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			h, err := pickBackend(c.asked, c.def, 1, c.open, &out)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer h.close()
			if h.backend.Name() != c.wantBackend {
				t.Errorf("backend %s, want %s", h.backend.Name(), c.wantBackend)
			}
			if out.String() != c.wantOut {
				t.Errorf("stderr %q, want %q", out.String(), c.wantOut)
			}
		})
	}
}

type fakeGPU struct{ tensor.Backend }

func (fakeGPU) Name() string { return "fake" }
