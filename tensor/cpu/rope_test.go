package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"mlxchat/tensor"
)

// ropeOnce rotates a copy of xv ([n, heads, hd]) at pos0 on a fresh
// backend of level l: nothing cached, the reference for the tests below.
func ropeOnce(t *testing.T, l kernelLevel, xv []float32, n, heads, hd, pos0 int, r *tensor.Rotary) []float32 {
	t.Helper()
	b := newBackendLevel(1, l)
	defer b.Close()
	x := mustT(t, slices.Clone(xv), n, heads, hd)
	if err := b.RoPE(x, pos0, r); err != nil {
		t.Fatal(err)
	}
	return x.F32()
}

func geometricRotary(t *testing.T, dims int, base float64, interleaved bool) *tensor.Rotary {
	t.Helper()
	inv := make([]float32, dims/2)
	for i := range inv {
		inv[i] = float32(math.Pow(base, -2*float64(i)/float64(dims)))
	}
	r, err := tensor.NewRotary(dims, inv, interleaved)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRoPELevelsAgree checks that every kernel level rotates Gemma-sized
// heads (and a partial rotation whose half is not a multiple of eight)
// bit for bit like the portable loop.
func TestRoPELevelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, tc := range []struct{ n, heads, hd, dims, pos0 int }{
		{1, 8, 256, 256, 511},
		{5, 2, 256, 256, 37},
		{3, 4, 64, 52, 9000}, // half 26: eight-wide blocks and a tail
	} {
		r := geometricRotary(t, tc.dims, 10000, false)
		xv := randF32(rng, tc.n*tc.heads*tc.hd, 1)
		want := ropeOnce(t, levelPortable, xv, tc.n, tc.heads, tc.hd, tc.pos0, r)
		for _, l := range availableLevels()[1:] {
			got := ropeOnce(t, l, xv, tc.n, tc.heads, tc.hd, tc.pos0, r)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%+v %s: value %d is %v, portable %v", tc, l, i, got[i], want[i])
				}
			}
		}
	}
}

// TestRoPETablesReuse runs a sequence of calls on one backend, as the
// layers of prefill and decode steps make them (two tables, positions
// inside an earlier call's, the next position, many goroutines at once),
// and checks each against a fresh backend: a reused table must never be
// another table's or another position's.
func TestRoPETablesReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const heads, hd = 2, 32
	local := geometricRotary(t, hd, 10000, false)
	global := geometricRotary(t, hd, 1e6, false)
	inter := geometricRotary(t, hd, 10000, true)
	b := newBackendLevel(2, bestLevel())
	defer b.Close()
	check := func(rng *rand.Rand, name string, r *tensor.Rotary, n, pos0 int) error {
		xv := randF32(rng, n*heads*hd, 1)
		want := ropeOnce(t, bestLevel(), xv, n, heads, hd, pos0, r)
		x := mustT(t, slices.Clone(xv), n, heads, hd)
		if err := b.RoPE(x, pos0, r); err != nil {
			return err
		}
		if !slices.Equal(x.F32(), want) {
			return fmt.Errorf("%s (n %d at %d): differs from a fresh backend", name, n, pos0)
		}
		return nil
	}
	steps := []struct {
		name    string
		r       *tensor.Rotary
		n, pos0 int
	}{
		{"prefill local", local, 16, 0},
		{"prefill global", global, 16, 0},
		{"inside the local chunk", local, 4, 6},
		{"inside the global chunk", global, 1, 15},
		{"interleaved at the same positions", inter, 16, 0},
		{"first decode step, local", local, 1, 16},
		{"first decode step, global", global, 1, 16},
		{"again local", local, 1, 16},
		{"next step", local, 1, 17},
		{"straddling a cached chunk", global, 4, 14},
	}
	for _, s := range steps {
		if err := check(rng, s.name, s.r, s.n, s.pos0); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 10))
			for i := range 20 {
				r := []*tensor.Rotary{local, global, inter}[(g+i)%3]
				if err := check(rng, "concurrent", r, 1+i%3, (g*7+i)%40); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
