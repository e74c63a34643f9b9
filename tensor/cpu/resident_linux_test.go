package cpu

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"mlxchat/tensor"
)

// mapMatrices writes the tensors of ms into one file, each at a page
// boundary, maps the file read-only as a checkpoint loader does, and
// returns the mapping and matrices that view it.
func mapMatrices(t testing.TB, ms ...*tensor.Matrix) ([]byte, []*tensor.Matrix) {
	t.Helper()
	page := os.Getpagesize()
	var file []byte
	var offs [][3]int
	for _, m := range ms {
		var o [3]int
		for i, p := range []*tensor.Tensor{m.W, m.Scales, m.Biases} {
			file = append(file, make([]byte, (page-len(file)%page)%page)...)
			o[i] = len(file)
			file = append(file, p.Data...)
		}
		offs = append(offs, o)
	}
	path := filepath.Join(t.TempDir(), "weights.bin")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	region, err := unix.Mmap(int(f.Fd()), 0, len(file), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(region) })
	var out []*tensor.Matrix
	for k, m := range ms {
		cp := *m
		for i, p := range []**tensor.Tensor{&cp.W, &cp.Scales, &cp.Biases} {
			v := **p
			v.Data = region[offs[k][i] : offs[k][i]+len(v.Data) : offs[k][i]+len(v.Data)]
			*p = &v
		}
		out = append(out, &cp)
	}
	return region, out
}

// hugeAdvised reports whether the mapping holding p is advised for huge
// pages ("hg" in its VmFlags in /proc/self/smaps).
func hugeAdvised(t *testing.T, p uintptr) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	inside := false
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && !strings.HasSuffix(f[0], ":") {
			var lo, hi uintptr
			if n, _ := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); n == 2 {
				inside = p >= lo && p < hi
				continue
			}
		}
		if inside && strings.HasPrefix(line, "VmFlags:") {
			return strings.Contains(" "+strings.TrimPrefix(line, "VmFlags:")+" ", " hg ")
		}
	}
	return false
}

// TestResidentWeights checks the huge-page copies of mapped matrices: the
// products before, during and after the copy are bit-identical to those
// of the matrices in Go memory, the copy is byte-equal, lies outside the
// mapping and is advised for huge pages, Gather uses it, matrices outside
// the mapping are never copied, and UnmapWeights forgets the copies. On a
// kernel without transparent huge pages nothing is copied.
func TestResidentWeights(t *testing.T) {
	heap := []*tensor.Matrix{randomQuantMatrix(96, 256, 4, 64, 21), randomQuantMatrix(64, 512, 8, 32, 22)}
	region, mapped := mapMatrices(t, heap...)
	rng := rand.New(rand.NewPCG(3, 4))
	be := New(2)
	defer be.Close()
	be.resident.minSize = 0
	if err := be.MapWeights(region); err != nil {
		t.Fatal(err)
	}
	if got := be.resident.count.Load(); got != map[bool]int32{true: 1, false: 0}[be.resident.enabled] {
		t.Fatalf("MapWeights: %d regions with huge pages usable=%v", got, be.resident.enabled)
	}
	ref := New(2)
	defer ref.Close()
	for k, w := range heap {
		for _, rows := range []int{1, 5, 20} {
			x, _ := tensor.FromF32(randF32(rng, rows*w.In, 1), rows, w.In)
			want := tensor.New(tensor.F32, rows, w.Out)
			if err := ref.MatMul(want, x, w); err != nil {
				t.Fatal(err)
			}
			for pass := 0; pass < 2; pass++ { // first use (queues the copy), then the copy
				got := tensor.New(tensor.F32, rows, w.Out)
				if err := be.MatMul(got, x, mapped[k]); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Data, want.Data) {
					t.Fatalf("matrix %d, %d rows, pass %d: product differs from the one in Go memory", k, rows, pass)
				}
				be.WaitWeights()
			}
		}
	}
	for k, w := range mapped {
		cp := be.placed(w)
		if !be.resident.enabled {
			if cp != w {
				t.Fatalf("matrix %d copied without huge pages", k)
			}
			continue
		}
		if cp == w {
			t.Fatalf("matrix %d: no copy after WaitWeights", k)
		}
		if be.copied(w) != cp {
			t.Fatalf("matrix %d: copied() does not return the copy", k)
		}
		for i, pair := range [][2]*tensor.Tensor{{w.W, cp.W}, {w.Scales, cp.Scales}, {w.Biases, cp.Biases}} {
			orig, c := pair[0].Data, pair[1].Data
			if !bytes.Equal(orig, c) {
				t.Fatalf("matrix %d part %d: copy differs", k, i)
			}
			if p := dataPtr(c); p >= dataPtr(region) && p < dataPtr(region)+uintptr(len(region)) || p%64 != 0 {
				t.Fatalf("matrix %d part %d: copy at %#x (mapping %#x+%d), want outside it and 64-byte aligned", k, i, p, dataPtr(region), len(region))
			}
		}
		// qemu-user, which runs this package's arm64 tests, emulates
		// smaps with fixed VmFlags: the advice shows on a real kernel only.
		if runtime.GOARCH == "amd64" && !hugeAdvised(t, dataPtr(cp.W.Data)) {
			t.Fatalf("matrix %d: the copy's memory is not advised for huge pages", k)
		}
		ids := []int32{0, int32(w.Out - 1), 7}
		g1, g2 := tensor.New(tensor.F32, 3, w.In), tensor.New(tensor.F32, 3, w.In)
		if err := ref.Gather(g1, heap[k], ids); err != nil {
			t.Fatal(err)
		}
		if err := be.Gather(g2, w, ids); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g1.Data, g2.Data) {
			t.Fatalf("matrix %d: Gather differs", k)
		}
	}
	for k, w := range heap { // outside every mapping: never copied
		if be.placed(w) != w {
			t.Fatalf("Go-memory matrix %d was copied", k)
		}
	}
	be.WaitWeights()
	if err := be.UnmapWeights(region); err != nil {
		t.Fatal(err)
	}
	n := 0
	be.resident.entries.Range(func(k, v any) bool {
		if v.(*residentEntry).region != nil {
			n++
		}
		return true
	})
	if n != 0 || be.resident.count.Load() != 0 {
		t.Fatalf("after UnmapWeights: %d copies, %d regions kept", n, be.resident.count.Load())
	}
	for k, w := range mapped {
		if be.placed(w) != w {
			t.Fatalf("matrix %d: copy used after UnmapWeights", k)
		}
	}
}

// TestResidentWeightsConcurrent multiplies mapped matrices from several
// goroutines while the copier copies them (for -race), and checks every
// product against the Go-memory matrices; then Close with copies still
// queued must not leave WaitWeights blocked.
func TestResidentWeightsConcurrent(t *testing.T) {
	var heap []*tensor.Matrix
	for i := range 6 {
		heap = append(heap, randomQuantMatrix(128, 512, 4, 64, uint64(40+i)))
	}
	region, mapped := mapMatrices(t, heap...)
	be := New(2)
	be.resident.minSize = 0
	if err := be.MapWeights(region); err != nil {
		t.Fatal(err)
	}
	ref := New(1)
	defer ref.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	x, _ := tensor.FromF32(randF32(rng, 512, 1), 1, 512)
	want := make([][]byte, len(heap))
	for k, w := range heap {
		out := tensor.New(tensor.F32, 1, w.Out)
		if err := ref.MatMul(out, x, w); err != nil {
			t.Fatal(err)
		}
		want[k] = out.Data
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				k := (g + i) % len(mapped)
				out := tensor.New(tensor.F32, 1, mapped[k].Out)
				if err := be.MatMul(out, x, mapped[k]); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(out.Data, want[k]) {
					errs <- fmt.Errorf("goroutine %d step %d: matrix %d product differs", g, i, k)
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
	be.WaitWeights()
	be.Close()
	if err := be.UnmapWeights(region); err != nil {
		t.Fatal(err)
	}
	// A closed backend queues nothing: WaitWeights returns, products hold.
	closed := New(2)
	closed.resident.minSize = 0
	if err := closed.MapWeights(region); err != nil {
		t.Fatal(err)
	}
	closed.Close()
	out := tensor.New(tensor.F32, 1, mapped[0].Out)
	if err := closed.MatMul(out, x, mapped[0]); err != nil {
		t.Fatal(err)
	}
	closed.WaitWeights()
	if !bytes.Equal(out.Data, want[0]) || closed.placed(mapped[0]) != mapped[0] {
		t.Fatal("closed backend: product differs or a copy was made")
	}
	if err := closed.UnmapWeights(region); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkResidentMatVec is decode's product on E2B's 2048->8192 4-bit
// matrix from a file mapping (4 KiB pages) and from the backend's huge-page
// copies of the same matrices, interleaved call by call, with weights from
// memory (coldSet, 192 MiB): medians of GB/s of weight bytes.
func BenchmarkResidentMatVec(b *testing.B) {
	for _, sh := range []struct{ out, in int }{{8192, 2048}, {2048, 8192}} {
		set := coldSet(sh.out, sh.in, 4, 64, 192<<20)
		// Two mappings of equal files: the copies drop the pages of the
		// first, so the second keeps its own for the baseline.
		region, mapped := mapMatrices(b, set...)
		_, plainSet := mapMatrices(b, set...)
		x := tensor.New(tensor.F32, 1, sh.in)
		for i := range x.F32() {
			x.F32()[i] = float32(i%7) - 3
		}
		dst := tensor.New(tensor.F32, 1, sh.out)
		b.Run(fmt.Sprintf("%dx%d/threads=%d", sh.in, sh.out, runtime.NumCPU()), func(b *testing.B) {
			huge, plain := New(0), New(0)
			defer huge.Close()
			defer plain.Close()
			if !huge.resident.enabled {
				b.Skip("no transparent huge pages on this machine")
			}
			huge.resident.minSize = 0
			if err := huge.MapWeights(region); err != nil {
				b.Fatal(err)
			}
			defer huge.UnmapWeights(region)
			for _, w := range mapped {
				if err := huge.MatMul(dst, x, w); err != nil {
					b.Fatal(err)
				}
			}
			huge.WaitWeights()
			bytes := float64(set[0].Bytes())
			var rates [2][]float64
			i := 0
			for b.Loop() {
				k := i / len(set) % 2
				be, w := plain, plainSet[i%len(set)]
				if k == 1 {
					be, w = huge, mapped[i%len(set)]
				}
				st := time.Now()
				if err := be.MatMul(dst, x, w); err != nil {
					b.Fatal(err)
				}
				rates[k] = append(rates[k], bytes/time.Since(st).Seconds()/1e9)
				i++
			}
			for k, name := range []string{"mapped-GB/s", "huge-GB/s"} {
				if len(rates[k]) > 0 {
					slices.Sort(rates[k])
					b.ReportMetric(rates[k][len(rates[k])/2], name)
				}
			}
		})
	}
}
