package metal_test

import (
	"testing"

	"mlxchat/metal"
	"mlxchat/tensor"
)

// metalBackend is the Metal backend on this Mac's GPU.
func metalBackend(t *testing.T) tensor.Backend {
	b, err := metal.Open("metal")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.(interface{ Close() error }).Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}
