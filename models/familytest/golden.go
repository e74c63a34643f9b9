package familytest

import (
	"path/filepath"
	"slices"
	"testing"

	"mlxchat/models/blocks"
	"mlxchat/tensor"
)

// Case is one fixture folder under the calling package's testdata and what
// its config must resolve to.
type Case struct {
	Name  string  // folder under testdata
	Stops []int32 // stop ids (generation_config.json, else config.json)
	BOS   int32
	Trim  bool // the folder also holds golden_trim.safetensors
}

// Model is a family's loaded model as the golden checks use it.
type Model interface {
	LM
	Close() error
}

// RunGolden runs every case as a subtest on be: the model loaded with load
// from the case's folder, then Check, CheckLayout on the decoder that
// decoder returns, the stop ids and BOS, and CheckTrim where the case has a
// trimmed scenario.
func RunGolden[M Model](t *testing.T, be tensor.Backend, load func(string, tensor.Backend) (M, error), decoder func(M) *blocks.Decoder, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			dir := Dir(tc.Name)
			Need(t, filepath.Join(dir, "golden.safetensors"))
			m, err := load(dir, be)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			g := Check(t, m, filepath.Join(dir, "golden.safetensors"))
			CheckLayout(t, g, decoder(m))
			if info := m.Config(); !slices.Equal(info.StopIDs, tc.Stops) || info.BOSID != tc.BOS {
				t.Errorf("stop ids %v, bos %d; want %v, %d", info.StopIDs, info.BOSID, tc.Stops, tc.BOS)
			}
			if tc.Trim {
				CheckTrim(t, m, filepath.Join(dir, "golden_trim.safetensors"))
			}
		})
	}
}

// Loads turns a family's Load on be into the loader CheckBad takes: it
// returns Load's error and closes what loads.
func Loads[M Model](load func(string, tensor.Backend) (M, error), be tensor.Backend) func(string) error {
	return func(dir string) error {
		m, err := load(dir, be)
		if err == nil {
			m.Close()
		}
		return err
	}
}
