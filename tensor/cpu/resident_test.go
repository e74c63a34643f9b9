package cpu

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"mlxchat/tensor"
)

// mappedCopy writes the tensors of ms into one file and returns the file's
// read-only mapping and matrices equal to ms whose data lie in it, as a
// checkpoint's do.
func mappedCopy(t *testing.T, ms ...*tensor.Matrix) ([]byte, []*tensor.Matrix) {
	t.Helper()
	var buf []byte
	var offs [][3]int
	for _, m := range ms {
		var o [3]int
		for i, tt := range []*tensor.Tensor{m.W, m.Scales, m.Biases} {
			o[i] = len(buf)
			if tt != nil {
				buf = append(buf, tt.Data...)
				buf = append(buf, make([]byte, 24)...) // unaligned, as in a file
			}
		}
		offs = append(offs, o)
	}
	path := filepath.Join(t.TempDir(), "weights.bin")
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	region, err := unix.Mmap(int(f.Fd()), 0, len(buf), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(region) })
	out := make([]*tensor.Matrix, len(ms))
	for k, m := range ms {
		c := *m
		in := func(tt *tensor.Tensor, off int) *tensor.Tensor {
			if tt == nil {
				return nil
			}
			return &tensor.Tensor{DType: tt.DType, Shape: tt.Shape, Data: region[off : off+len(tt.Data) : off+len(tt.Data)]}
		}
		c.W, c.Scales, c.Biases = in(m.W, offs[k][0]), in(m.Scales, offs[k][1]), in(m.Biases, offs[k][2])
		out[k] = &c
	}
	return region, out
}

// inside reports whether every byte of data lies in region.
func inside(data, region []byte) bool {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	return p >= lo && p+uintptr(len(data)) <= lo+uintptr(len(region))
}

// TestResidentCopies multiplies matrices that lie in a mapped file
// registered with MapWeights (4- and 8-bit, dense BF16; one row, as
// decode, and 16, as prefill) and checks that the products read a copy
// outside the mapping, made once, with results bit for bit those of the
// same matrices in ordinary memory; a view of the same bytes with another
// shape is not given the copy; after UnmapWeights the products read the
// mapping again, still right.
func TestResidentCopies(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	dense := &tensor.Matrix{Out: 96, In: 128, W: tensor.New(tensor.BF16, 96, 128)}
	_ = tensor.EncodeF32(dense.W.Data, tensor.BF16, randF32(rng, 96*128, 1))
	heap := []*tensor.Matrix{
		randomQuantMatrix(300, 256, 4, 64, 1),
		randomQuantMatrix(64, 512, 8, 32, 2),
		dense,
	}
	region, mapped := mappedCopy(t, heap...)
	b := New(2)
	defer b.Close()
	if err := b.MapWeights(region); err != nil {
		t.Fatal(err)
	}
	if err := b.MapWeights(region[100:200]); err == nil || !strings.Contains(err.Error(), "overlaps") {
		t.Fatalf("mapping an overlapping region: %v, want an overlap error", err)
	}
	ref := New(2)
	defer ref.Close()
	product := func(be *Backend, w *tensor.Matrix, x *tensor.Tensor) []float32 {
		t.Helper()
		dst := tensor.New(tensor.F32, x.Shape[0], w.Out)
		if err := be.MatMul(dst, x, w); err != nil {
			t.Fatal(err)
		}
		return dst.F32()
	}
	for round := range 2 {
		for k, w := range mapped {
			for _, n := range []int{1, 16} {
				x := mustT(t, randF32(rng, n*w.In, 1), n, w.In)
				if got, want := product(b, w, x), product(ref, heap[k], x); !slices.Equal(got, want) {
					t.Fatalf("round %d matrix %d, %d rows: product differs from the same matrix in ordinary memory", round, k, n)
				}
			}
			r, keep := b.resident(w)
			if keep == nil || inside(r.W.Data, region) || !slices.Equal(r.W.Data, w.W.Data) {
				t.Fatalf("matrix %d: no resident copy of its weights", k)
			}
			if w.Scales != nil && (inside(r.Scales.Data, region) || !slices.Equal(r.Scales.Data, w.Scales.Data) || !slices.Equal(r.Biases.Data, w.Biases.Data)) {
				t.Fatalf("matrix %d: scales or biases not copied", k)
			}
		}
	}
	b.res.mu.Lock()
	copies := len(b.res.regions[0].copies)
	b.res.mu.Unlock()
	if copies != len(mapped) {
		t.Fatalf("%d copies for %d matrices", copies, len(mapped))
	}
	if b.res.mapped.Load() == 0 {
		t.Fatal("copies made, but no memory counted as mapped for them")
	}

	// The first 100 rows of the 4-bit matrix, over the same bytes.
	view := *mapped[0]
	view.Out = 100
	view.W = &tensor.Tensor{DType: view.W.DType, Shape: []int{100, view.W.Shape[1]}, Data: view.W.Data[:len(view.W.Data)/3]}
	view.Scales = &tensor.Tensor{DType: view.Scales.DType, Shape: []int{100, view.Scales.Shape[1]}, Data: view.Scales.Data[:len(view.Scales.Data)/3]}
	view.Biases = &tensor.Tensor{DType: view.Biases.DType, Shape: []int{100, view.Biases.Shape[1]}, Data: view.Biases.Data[:len(view.Biases.Data)/3]}
	if r, _ := b.resident(&view); r != &view {
		t.Fatal("a view of a copied matrix's bytes with another shape got the copy")
	}
	x := mustT(t, randF32(rng, view.In, 1), 1, view.In)
	if got, want := product(b, &view, x), product(ref, heap[0], x)[:100]; !slices.Equal(got, want) {
		t.Fatal("the view's product differs")
	}

	if err := b.UnmapWeights(region); err != nil {
		t.Fatal(err)
	}
	if err := b.UnmapWeights(region); err == nil {
		t.Fatal("unmapping a region twice: no error")
	}
	// UnmapWeights collected the copies: their memory is unmapped by the
	// chunks' cleanups, which run on their own goroutine.
	for i := 0; b.res.mapped.Load() != 0; i++ {
		if i == 500 {
			t.Fatalf("%d bytes of copies still mapped 5 s after UnmapWeights", b.res.mapped.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for k, w := range mapped {
		if r, keep := b.resident(w); r != w || keep != nil {
			t.Fatalf("matrix %d: a copy is still used after UnmapWeights", k)
		}
		x := mustT(t, randF32(rng, w.In, 1), 1, w.In)
		if got, want := product(b, w, x), product(ref, heap[k], x); !slices.Equal(got, want) {
			t.Fatalf("matrix %d after UnmapWeights: product differs", k)
		}
	}
}

// TestResidentConcurrent has goroutines multiply the same mapped matrices
// at once on one backend while the first copies are being made (run it
// with -race): every product must be right and each matrix copied once.
func TestResidentConcurrent(t *testing.T) {
	heap := []*tensor.Matrix{randomQuantMatrix(512, 256, 4, 64, 5), randomQuantMatrix(256, 256, 4, 32, 6)}
	region, mapped := mappedCopy(t, heap...)
	b := New(2)
	defer b.Close()
	if err := b.MapWeights(region); err != nil {
		t.Fatal(err)
	}
	ref := New(1)
	defer ref.Close()
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range 10 {
				k := (g + i) % len(mapped)
				w := mapped[k]
				x := mustT(t, randF32(rng, w.In, 1), 1, w.In)
				got, want := tensor.New(tensor.F32, 1, w.Out), tensor.New(tensor.F32, 1, w.Out)
				if err := b.MatMul(got, x, w); err != nil {
					errs <- err.Error()
					return
				}
				if err := ref.MatMul(want, x, heap[k]); err != nil {
					errs <- err.Error()
					return
				}
				if !slices.Equal(got.F32(), want.F32()) {
					errs <- "a product differs"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	b.res.mu.Lock()
	defer b.res.mu.Unlock()
	if n := len(b.res.regions[0].copies); n != len(mapped) {
		t.Fatalf("%d copies for %d matrices", n, len(mapped))
	}
}
