package gpu

import (
	"runtime"
	"testing"
	"unsafe"
	"weak"

	"mlxchat/metal/kernels"
	"mlxchat/tensor"
)

// hostDriver is a Driver over Go memory that records what NewWeights was
// given, as a driver aliasing weights (no-copy buffers) would keep it.
type hostDriver struct {
	given    []weak.Pointer[byte]
	released int
	mapped   [][]byte
}

type hostBuf struct{ mem []byte }

func (d *hostDriver) Name() string   { return "host" }
func (d *hostDriver) Limits() Limits { return Limits{OffsetAlign: 16, MaxRange: 1 << 30} }
func (d *hostDriver) NewBuffer(size int) (Buf, []byte, error) {
	m := make([]byte, size)
	return &hostBuf{m}, m, nil
}
func (d *hostDriver) NewWeights(data []byte) (Buf, error) {
	d.given = append(d.given, weak.Make(&data[0]))
	return &hostBuf{}, nil
}
func (d *hostDriver) Release(Buf) { d.released++ }
func (d *hostDriver) Dispatch(kernels.ID, []byte, *[8]Binding, [3]int) error {
	return nil
}
func (d *hostDriver) Flush() error { return nil }
func (d *hostDriver) Close() error { return nil }

// mappedDriver also wraps mapped regions in place.
type mappedDriver struct {
	hostDriver
	regionBuf *hostBuf
}

func (d *mappedDriver) MapWeights(r []byte) error { d.mapped = append(d.mapped, r); return nil }
func (d *mappedDriver) WeightRange(p uintptr, n int64) (Buf, int64, int64, bool) {
	for _, r := range d.mapped {
		base := uintptr(unsafe.Pointer(&r[0]))
		if p >= base && p+uintptr(n) <= base+uintptr(len(r)) {
			return d.regionBuf, int64(p - base), int64(len(r)), true
		}
	}
	return nil, 0, 0, false
}
func (d *mappedDriver) UnmapWeights(r []byte) error {
	for i, m := range d.mapped {
		if &m[0] == &r[0] {
			d.mapped = append(d.mapped[:i], d.mapped[i+1:]...)
			return nil
		}
	}
	return nil
}

// TestPaddedWeightStaysAlive: a weight whose length is not a multiple of
// 16 is handed to the driver as a padded copy; a driver may alias that copy
// (Metal no-copy buffers), so the backend must keep it reachable for as
// long as the weight buffer lives, not just the original bytes.
func TestPaddedWeightStaysAlive(t *testing.T) {
	d := &hostDriver{}
	b := New(d)
	w := tensor.New(tensor.F32, 5) // 20 bytes: padded to 32
	if _, err := b.resolve(weight(w)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		runtime.GC()
	}
	if len(d.given) != 1 {
		t.Fatalf("%d weight uploads, want 1", len(d.given))
	}
	if d.given[0].Value() == nil {
		t.Fatal("the padded weight copy handed to the driver was garbage collected while its buffer is in use")
	}
	runtime.KeepAlive(w)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMappedWeightsBindInPlace: weights inside a region given to MapWeights
// bind by offset into the driver's region buffer (no upload, no padding),
// sub-ranges included; UnmapWeights drops uploaded copies of weights inside
// the region so its addresses can be reused.
func TestMappedWeightsBindInPlace(t *testing.T) {
	d := &mappedDriver{regionBuf: &hostBuf{}}
	b := New(d)
	region := make([]byte, 4096)
	if err := b.MapWeights(region); err != nil {
		t.Fatal(err)
	}
	w, err := tensor.FromBytes(tensor.F32, []int{5}, region[100:120]) // 20 bytes, not 16-aligned in length
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.resolve(weight(w))
	if err != nil {
		t.Fatal(err)
	}
	if r.buf != Buf(d.regionBuf) || r.off != 100 || r.size != 4096 {
		t.Errorf("resolve = %v, %d, %d; want the region buffer at offset 100 of 4096", r.buf, r.off, r.size)
	}
	if r, _ := b.resolve(weight(w).sub(8, 4)); r.off != 108 {
		t.Errorf("sub-range offset %d, want 108", r.off)
	}
	if len(d.given) != 0 || b.Stats().WeightBytes != 0 {
		t.Errorf("%d uploads, %d weight bytes: want none for mapped weights", len(d.given), b.Stats().WeightBytes)
	}
	if err := b.UnmapWeights(region); err != nil {
		t.Fatal(err)
	}
	if len(d.mapped) != 0 {
		t.Fatal("UnmapWeights did not reach the driver")
	}
	// Now outside any region: uploaded, then forgotten by UnmapWeights.
	if _, err := b.resolve(weight(w)); err != nil {
		t.Fatal(err)
	}
	if len(d.given) != 1 {
		t.Fatalf("%d uploads after unmapping, want 1", len(d.given))
	}
	if err := b.UnmapWeights(region); err != nil {
		t.Fatal(err)
	}
	if d.released != 1 || len(b.weights) != 0 {
		t.Errorf("released %d, %d cached weights left: want the upload inside the region dropped", d.released, len(b.weights))
	}
}
