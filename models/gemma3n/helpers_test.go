package gemma3n

import (
	"math"
	"testing"

	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// newBackend returns a 2-thread CPU backend closed at the end of the test.
func newBackend(t testing.TB) *cpu.Backend {
	be := cpu.New(2)
	t.Cleanup(be.Close)
	return be
}

// load opens a model directory, failing the test on error.
func load(t testing.TB, dir string, be tensor.Backend) *Model {
	t.Helper()
	m, err := Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func allFinite(x []float32) bool {
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}
