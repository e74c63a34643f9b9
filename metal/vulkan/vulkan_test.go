//go:build linux

package vulkan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"

	"mlxchat/metal/gpu"
	"mlxchat/tensor"
)

var (
	shared     *gpu.Backend
	sharedDrv  *Driver
	sharedErr  error
	sharedOnce sync.Once
)

// open returns the package's shared Vulkan backend. When no device opens,
// the test fails if lavapipe is installed (Open is broken) or under
// CI=true (scripts/test.sh installs it); otherwise it is skipped.
func open(t testing.TB) (*gpu.Backend, *Driver) {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedDrv, sharedErr = Open() })
	if sharedErr != nil {
		if ok, what := lavapipeInstalled(); ok {
			t.Fatalf("%s present, but no Vulkan device opens: %v", what, sharedErr)
		} else if os.Getenv("CI") == "true" {
			t.Fatalf("no Vulkan device under CI=true: %s (scripts/test.sh installs mesa-vulkan-drivers libvulkan1): %v", what, sharedErr)
		} else {
			t.Skipf("no Vulkan device: %s (scripts/test.sh installs mesa-vulkan-drivers libvulkan1): %v", what, sharedErr)
		}
	}
	return shared, sharedDrv
}

// openFresh opens a private backend (for tests that change its limits).
func openFresh(t *testing.T) *gpu.Backend {
	t.Helper()
	open(t)
	b, _, err := Open()
	if err != nil {
		t.Fatalf("second Vulkan backend: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing Vulkan backend:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// put returns an F32 tensor holding vals: from the backend's Alloc when
// onGPU, else a plain host tensor (which the backend stages).
func put(b *gpu.Backend, onGPU bool, vals []float32, shape ...int) *tensor.Tensor {
	if !onGPU {
		t, err := tensor.FromF32(vals, shape...)
		if err != nil {
			panic(err)
		}
		return t
	}
	t := b.Alloc(shape...)
	copy(t.F32(), vals)
	return t
}

// near fails unless |got-want| <= atol + rtol*|want| everywhere.
func near(t *testing.T, what string, got []float32, want []float64, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	worst, at := 0.0, -1
	for i := range got {
		g := float64(got[i])
		d := math.Abs(g - want[i])
		if math.IsNaN(g) || d > atol+rtol*math.Abs(want[i]) {
			t.Fatalf("%s: [%d] = %v, want %v (|diff| %.3g)", what, i, g, want[i], d)
		}
		if d > worst {
			worst, at = d, i
		}
	}
	t.Logf("%s: max |diff| %.3g at %d", what, worst, at)
}

func TestDeviceInfo(t *testing.T) {
	_, d := open(t)
	info := d.Info()
	t.Logf("device %q type %s api %s subgroup %d maxRange %d align %d shared %d memory %s activations %s",
		info.Name, info.Type, info.APIVersion, info.SubgroupSize, info.MaxRange, info.OffsetAlign, info.SharedMemory, info.Memory, info.Activations)
	if info.SubgroupSize <= 0 || info.MaxRange <= 0 || info.OffsetAlign < 16 {
		t.Fatalf("implausible device limits %+v", info)
	}
}

func TestMatMul(t *testing.T) {
	b, _ := open(t)
	cases := []struct {
		name       string
		n, out, in int
		bits, gs   int
		dt         tensor.DType
		onGPU      bool
	}{
		{"q4 bf16 decode ragged rows", 1, 37, 256, 4, 64, tensor.BF16, true},
		{"q4 f16 3 rows gs32", 3, 64, 128, 4, 32, tensor.F16, true},
		{"q4 bf16 decode host tensors", 1, 24, 512, 4, 64, tensor.BF16, false},
		{"q8 bf16 decode", 1, 20, 128, 8, 64, tensor.BF16, true},
		{"q8 f32 scales 2 rows", 2, 9, 64, 8, 32, tensor.F32, true},
		{"q4 prefill", 7, 70, 192, 4, 64, tensor.BF16, true},
		{"q8 prefill multi-tile", 65, 33, 64, 8, 32, tensor.F16, true},
		{"q4 gs16 falls back to tiled", 1, 10, 64, 4, 16, tensor.BF16, true},
		// The tiled kernel stages 32 inputs a step: inner sizes that end
		// inside a step, both widths, row and column tiles left over.
		{"q4 prefill inner size 80", 9, 130, 80, 4, 16, tensor.BF16, true},
		{"q8 prefill inner size 48", 70, 65, 48, 8, 16, tensor.F32, true},
		{"q4 prefill 2x3 tiles gs128", 129, 150, 256, 4, 128, tensor.F16, true},
		{"dense bf16 prefill ragged", 67, 66, 45, 0, 0, tensor.BF16, true},
		// Matrices of 2^23 values or more take the wide kernels (4 rows a
		// workgroup): ragged rows, 2 rows of x.
		{"q4 wide decode ragged rows", 1, 4099, 2048, 4, 64, tensor.BF16, true},
		{"q8 wide 2 rows", 2, 4097, 2048, 8, 64, tensor.F16, true},
		// More rows than one grid covers (65535 workgroups of QMVRows or
		// QMVWideRows rows), as Gemma 3n's 262400-row lm_head: the product
		// goes in chunks.
		{"q4 decode beyond one grid", 1, 140000, 32, 4, 32, tensor.BF16, true},
		{"q8 decode beyond one grid", 1, 140000, 32, 8, 32, tensor.BF16, true},
		{"q4 wide beyond one grid", 1, 270000, 32, 4, 32, tensor.BF16, true},
		{"dense f32", 5, 30, 40, 0, 0, tensor.F32, true},
		{"dense bf16 decode", 1, 17, 33, 0, 0, tensor.BF16, true},
		// Up to four rows of x against a dense W are dots per output (one
		// subgroup each): Gemma 3n's AltUp coefficients (4 inputs), a
		// long row, several workgroups of outputs, the last row tile of a
		// larger product.
		{"dense bf16 altup coefficients", 1, 16, 4, 0, 0, tensor.BF16, true},
		{"dense f32 4 rows long", 4, 70, 2100, 0, 0, tensor.F32, true},
		{"dense f16 3 rows", 3, 130, 64, 0, 0, tensor.F16, true},
		{"dense bf16 66 rows", 66, 20, 50, 0, 0, tensor.BF16, true},
		{"dense f16 odd", 2, 3, 7, 0, 0, tensor.F16, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			var w qmat
			if c.bits > 0 {
				w = newQuant(r, c.out, c.in, c.bits, c.gs, c.dt)
			} else {
				w = newDense(r, c.out, c.in, c.dt)
			}
			xv := randVals(r, c.n*c.in, 1)
			x := put(b, c.onGPU, xv, c.n, c.in)
			dst := put(b, c.onGPU, make([]float32, c.n*c.out), c.n, c.out)
			if err := b.MatMul(dst, x, w.m); err != nil {
				t.Fatal(err)
			}
			if err := b.Sync(); err != nil {
				t.Fatal(err)
			}
			near(t, "matmul", dst.F32(), refMatMul(xv, c.n, w), 1e-4, 1e-4)
		})
	}
}

// TestMatMulViews binds tensors that are views into larger GPU buffers at
// offsets, including one misaligned for vector loads (the decode kernel
// then falls back to the tiled one).
func TestMatMulViews(t *testing.T) {
	b, _ := open(t)
	r := rand.New(rand.NewPCG(3, 3))
	w := newQuant(r, 40, 128, 4, 64, tensor.BF16)
	for _, skip := range []int{0, 1, 4, 32} {
		big := b.Alloc(skip + 128 + 40 + 8)
		xv := randVals(r, 128, 1)
		copy(big.F32()[skip:], xv)
		x := &tensor.Tensor{DType: tensor.F32, Shape: []int{1, 128}, Data: big.Data[4*skip : 4*(skip+128)]}
		dst := &tensor.Tensor{DType: tensor.F32, Shape: []int{1, 40}, Data: big.Data[4*(skip+128) : 4*(skip+168)], Handle: big.Handle}
		if err := b.MatMul(dst, x, w.m); err != nil {
			t.Fatal(err)
		}
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		near(t, fmt.Sprintf("view at %d", skip), dst.F32(), refMatMul(xv, 1, w), 1e-4, 1e-4)
		runtime.KeepAlive(big)
	}
}

// TestStagedUploads uploads weights through a small staging buffer and
// copy commands (the discrete-GPU path, here in many chunks) and checks a
// matmul on them.
func TestStagedUploads(t *testing.T) {
	open(t)
	b, d, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d.SetStagedUploads(1024)
	r := rand.New(rand.NewPCG(9, 9))
	for _, out := range []int{3, 40} {
		w := newQuant(r, out, 256, 4, 64, tensor.F16)
		xv := randVals(r, 2*256, 1)
		x := put(b, true, xv, 2, 256)
		dst := b.Alloc(2, out)
		if err := b.MatMul(dst, x, w.m); err != nil {
			t.Fatal(err)
		}
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		near(t, "staged weights", dst.F32(), refMatMul(xv, 2, w), 1e-4, 1e-4)
	}
}

// TestRemoteActivations runs matmuls and attention with activations in
// "host" memory, the discrete-GPU layout: kernels bind the activations'
// device twins (uploaded before first use, copied back at Sync), and
// re-read operands that are plain host tensors go through device-only
// scratch copies first.
func TestRemoteActivations(t *testing.T) {
	open(t)
	t.Setenv("MLXCHAT_VULKAN_ACTIVATIONS", "host")
	b, d, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !d.ActivationsRemote() {
		t.Fatalf("activations %q: want remote", d.Info().Activations)
	}
	r := rand.New(rand.NewPCG(10, 10))
	w := newQuant(r, 70, 256, 4, 64, tensor.BF16)
	for _, n := range []int{1, 9} {
		xv := randVals(r, n*256, 1)
		x := put(b, n == 1, xv, n, 256)
		dst := b.Alloc(n, 70)
		before := b.Stats().Ops
		if err := b.MatMul(dst, x, w.m); err != nil {
			t.Fatal(err)
		}
		want := int64(2) // a host x is copied to device scratch first
		if n == 1 {
			want = 1 // an Alloc'd x is read from its device twin
		}
		if got := b.Stats().Ops - before; got != want {
			t.Errorf("matmul with remote activations, n=%d: %d launches, want %d", n, got, want)
		}
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		near(t, fmt.Sprintf("remote matmul n=%d", n), dst.F32(), refMatMul(xv, n, w), 1e-4, 1e-4)
	}
	for _, c := range []struct{ nq, nk int }{{3, 40}, {1, 700}} {
		mask, err := tensor.NewMask(c.nk-c.nq, c.nq, []tensor.Span{{Start: 0, Len: c.nk}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		qv, kv, vv := randVals(r, c.nq*4*32, 1), randVals(r, c.nk*2*32, 1), randVals(r, c.nk*2*32, 1)
		q, k, v := put(b, true, qv, c.nq, 4, 32), put(b, false, kv, c.nk, 2, 32), put(b, true, vv, c.nk, 2, 32)
		dst := b.Alloc(c.nq, 4, 32)
		if err := b.Attention(dst, q, k, v, mask, 0.2); err != nil {
			t.Fatal(err)
		}
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		near(t, fmt.Sprintf("remote attention nq=%d nk=%d", c.nq, c.nk), dst.F32(), refAttention(qv, kv, vv, c.nq, 4, c.nk, 2, 32, mask, 0.2), 2e-5, 1e-4)
	}
}

// TestChunkedWeights forces a tiny binding limit so matmul and gather take
// the row-chunked paths that huge tables (vocab x hidden) take on devices
// with a 128 MiB binding limit.
func TestChunkedWeights(t *testing.T) {
	b := openFresh(t)
	b.SetMaxRange(4096)
	r := rand.New(rand.NewPCG(5, 5))
	w := newQuant(r, 300, 256, 4, 64, tensor.BF16) // 128 bytes per row: 32 rows per chunk
	for _, n := range []int{1, 6} {
		xv := randVals(r, n*256, 1)
		x := put(b, true, xv, n, 256)
		dst := b.Alloc(n, 300)
		if err := b.MatMul(dst, x, w.m); err != nil {
			t.Fatal(err)
		}
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		near(t, fmt.Sprintf("chunked matmul n=%d", n), dst.F32(), refMatMul(xv, n, w), 1e-4, 1e-4)
	}
	big := newQuant(r, 64, 512, 4, 64, tensor.F16) // 16 KiB of weights > 4 KiB: per-id gather
	ids := []int32{63, 0, 17, 17}
	dst := b.Alloc(len(ids), 512)
	if err := b.Gather(dst, big.m, ids); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	near(t, "chunked gather", dst.F32(), gatherRef(big, ids), 1e-6, 1e-6)
}

func gatherRef(w qmat, ids []int32) []float64 {
	var want []float64
	for _, id := range ids {
		want = append(want, w.deq[id]...)
	}
	return want
}

func TestGather(t *testing.T) {
	b, _ := open(t)
	cases := []struct {
		name     string
		bits, gs int
		dt       tensor.DType
		ids      []int32
	}{
		{"q4 bf16", 4, 64, tensor.BF16, []int32{3, 0, 3, 9}},
		{"q8 f16", 8, 32, tensor.F16, []int32{1}},
		{"q2 bf16", 2, 64, tensor.BF16, []int32{5, 2}},
		{"dense bf16", 0, 0, tensor.BF16, []int32{7, 7, 1}},
		{"dense f32", 0, 0, tensor.F32, []int32{0, 9}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 11))
			var w qmat
			if c.bits > 0 {
				w = newQuant(r, 10, 128, c.bits, c.gs, c.dt)
			} else {
				w = newDense(r, 10, 96, c.dt)
			}
			dst := b.Alloc(len(c.ids), w.m.In)
			if err := b.Gather(dst, w.m, c.ids); err != nil {
				t.Fatal(err)
			}
			if err := b.Sync(); err != nil {
				t.Fatal(err)
			}
			near(t, "gather", dst.F32(), gatherRef(w, c.ids), 1e-6, 1e-6)
		})
	}
	w := newDense(rand.New(rand.NewPCG(1, 1)), 4, 8, tensor.F32)
	if err := b.Gather(b.Alloc(1, 8), w.m, []int32{4}); err == nil {
		t.Error("gather of id 4 from 4 rows: want an error")
	}
	if err := b.Sync(); err == nil {
		t.Error("Sync after a failed op: want its error")
	}
}

func TestRMSNorm(t *testing.T) {
	b, _ := open(t)
	cases := []struct {
		name    string
		rows, n int
		wdt     tensor.DType // Invalid = no weight
	}{
		{"no weight", 3, 100, tensor.Invalid},
		{"f32 weight", 2, 64, tensor.F32},
		{"bf16 weight", 4, 1000, tensor.BF16},
		{"f16 weight odd", 1, 7, tensor.F16},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 13))
			xv := randVals(r, c.rows*c.n, 3)
			var wt *tensor.Tensor
			var wref []float64
			if c.wdt != tensor.Invalid {
				wv := randVals(r, c.n, 1)
				for j := range wv {
					wv[j] = roundTo(c.wdt, wv[j])
					wref = append(wref, float64(wv[j]))
				}
				wt = encode(c.wdt, wv, c.n)
			}
			x := put(b, true, xv, c.rows, c.n)
			dst := b.Alloc(c.rows, c.n)
			if err := b.RMSNorm(dst, x, wt, 1e-6); err != nil {
				t.Fatal(err)
			}
			if err := b.Sync(); err != nil {
				t.Fatal(err)
			}
			near(t, "rmsnorm", dst.F32(), refRMSNorm(xv, c.n, wref, 1e-6), 1e-5, 1e-5)
		})
	}
}

func TestRoPE(t *testing.T) {
	b, _ := open(t)
	cases := []struct {
		name               string
		n, heads, hd, dims int
		pos0               int
		base               float64
		linear             float64 // divides the table (0: unscaled)
		interleaved        bool
		atol               float64
	}{
		{"full head", 3, 2, 16, 16, 0, 10000, 0, false, 1e-5},
		{"partial dims", 2, 3, 16, 8, 7, 10000, 0, false, 1e-5},
		{"far positions", 2, 2, 64, 64, 5000, 1000000, 0, false, 1e-5},
		{"very far positions", 1, 1, 32, 32, 1 << 20, 10000, 0, false, 1e-5},
		{"interleaved", 3, 2, 16, 16, 40, 50000, 0, true, 1e-5},
		{"interleaved partial", 2, 3, 32, 12, 1234, 10000, 0, true, 1e-5},
		{"scaled table", 2, 2, 32, 32, 9000, 1000000, 8, false, 1e-5},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inv := tensor.DefaultInvFreq(c.dims, c.base)
			if c.linear > 0 {
				for j := range inv {
					inv[j] /= float32(c.linear)
				}
			}
			rt, err := tensor.NewRotary(c.dims, inv, c.interleaved)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(i), 17))
			xv := randVals(r, c.n*c.heads*c.hd, 1)
			x := put(b, i%2 == 0, xv, c.n, c.heads, c.hd)
			if err := b.RoPE(x, c.pos0, rt); err != nil {
				t.Fatal(err)
			}
			if err := b.Sync(); err != nil {
				t.Fatal(err)
			}
			near(t, "rope", x.F32(), refRoPE(xv, c.n, c.heads, c.hd, c.pos0, rt), c.atol, 0)
		})
	}
	if err := b.RoPE(b.Alloc(1, 1, 8), 0, &tensor.Rotary{Dims: 9, InvFreq: tensor.New(tensor.F32, 4)}); err == nil {
		t.Error("odd dims: want an error")
	}
	b.Sync()
}

func TestLayerNorm(t *testing.T) {
	b, _ := open(t)
	cases := []struct {
		name         string
		rows, n      int
		dt           tensor.DType
		weight, bias bool
		offset       float32
	}{
		{"plain", 3, 40, tensor.F32, false, false, 0},
		{"weight bf16", 4, 96, tensor.BF16, true, false, 0},
		{"weight and bias f16", 2, 300, tensor.F16, true, true, 0},
		{"far from zero", 3, 128, tensor.F32, true, true, 200},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 29))
			xv := randVals(r, c.rows*c.n, 1)
			for j := range xv {
				xv[j] += c.offset
			}
			x := put(b, i%2 == 0, xv, c.rows, c.n)
			param := func(on bool) (*tensor.Tensor, []float64) {
				if !on {
					return nil, nil
				}
				vals := randVals(r, c.n, 1)
				t := encode(c.dt, vals, c.n)
				back, _ := t.ToF32()
				ref := make([]float64, c.n)
				for j := range ref {
					ref[j] = float64(back[j])
				}
				return t, ref
			}
			w, wref := param(c.weight)
			bs, bref := param(c.bias)
			dst := b.Alloc(c.rows, c.n)
			if err := b.LayerNorm(dst, x, w, bs, 1e-5); err != nil {
				t.Fatal(err)
			}
			if err := b.Sync(); err != nil {
				t.Fatal(err)
			}
			near(t, "layernorm", dst.F32(), refLayerNorm(xv, c.n, wref, bref, 1e-5), 2e-5, 2e-5)
		})
	}
	if err := b.LayerNorm(b.Alloc(2, 8), b.Alloc(2, 8), nil, b.Alloc(7), 1e-5); err == nil {
		t.Error("short bias: want an error")
	}
	b.Sync()
}

func TestAttention(t *testing.T) {
	b, _ := open(t)
	cases := []struct {
		name         string
		hq, hkv, d   int
		qstart, rows int
		spans        []tensor.Span
		window       int
	}{
		{"decode causal 2 chunks", 4, 2, 32, 199, 1, []tensor.Span{{Start: 0, Len: 200}}, 0},
		{"prefill causal", 2, 2, 16, 0, 9, []tensor.Span{{Start: 0, Len: 9}}, 0},
		{"trimmed sink + recent, window", 4, 1, 16, 12, 5, []tensor.Span{{Start: 0, Len: 2}, {Start: 10, Len: 7}}, 3},
		{"gemma head 256, window", 2, 1, 256, 129, 2, []tensor.Span{{Start: 0, Len: 131}}, 100},
		{"window masks whole chunks", 2, 2, 8, 299, 1, []tensor.Span{{Start: 0, Len: 300}}, 10},
		{"prefill chunk over long cache", 8, 2, 64, 300, 4, []tensor.Span{{Start: 0, Len: 4}, {Start: 100, Len: 204}}, 0},
		{"decode split keys", 4, 2, 32, 999, 1, []tensor.Span{{Start: 0, Len: 1000}}, 0},
		{"decode split keys, window leaves one split", 2, 1, 16, 1299, 1, []tensor.Span{{Start: 0, Len: 1300}}, 100},
		{"split keys, sink + recent, 2 rows", 2, 2, 32, 2000, 2, []tensor.Span{{Start: 0, Len: 4}, {Start: 1300, Len: 702}}, 0},
		{"split keys, head 256", 2, 1, 256, 599, 1, []tensor.Span{{Start: 0, Len: 600}}, 0},
		{"decode 8 heads a KV head, head 256", 8, 1, 256, 700, 1, []tensor.Span{{Start: 0, Len: 701}}, 0},
		{"decode E2B shape, window", 8, 2, 256, 530, 1, []tensor.Span{{Start: 19, Len: 512}}, 512},
		{"decode 8 heads a KV head, head 512 (attn)", 8, 1, 512, 599, 1, []tensor.Span{{Start: 0, Len: 600}}, 0},
		// attnd with heads of 320 (4 of them a KV head: each invocation
		// owns three output dimensions, the parts' key slices are 80
		// long), and a cache beyond 4096 keys: splits of two chunks, the
		// last partly filled.
		{"decode head 320, 4 heads a KV head", 4, 1, 320, 300, 1, []tensor.Span{{Start: 0, Len: 301}}, 0},
		{"decode 5000 keys, sink + recent, window", 4, 2, 64, 5200, 1, []tensor.Span{{Start: 0, Len: 4}, {Start: 205, Len: 4996}}, 4500},
		{"prefill 64 rows (attn)", 4, 2, 32, 0, 64, []tensor.Span{{Start: 0, Len: 64}}, 0},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 19))
			mask, err := tensor.NewMask(c.qstart, c.rows, c.spans, c.window)
			if err != nil {
				t.Fatal(err)
			}
			nk := mask.KeyLen()
			qv := randVals(r, c.rows*c.hq*c.d, 1)
			kv := randVals(r, nk*c.hkv*c.d, 1)
			vv := randVals(r, nk*c.hkv*c.d, 1)
			q := put(b, true, qv, c.rows, c.hq, c.d)
			k := put(b, i%2 == 0, kv, nk, c.hkv, c.d)
			v := put(b, true, vv, nk, c.hkv, c.d)
			dst := b.Alloc(c.rows, c.hq, c.d)
			scale := float32(1 / math.Sqrt(float64(c.d)))
			before := b.Stats().Ops
			if err := b.Attention(dst, q, k, v, mask, scale); err != nil {
				t.Fatal(err)
			}
			launches := b.Stats().Ops - before
			// Decode-sized shapes run attnd, split over every 32 keys
			// (long caches: fewer, longer splits); others attn, split
			// beyond 512 keys when few workgroups would stream many.
			// Splits add attnmerge.
			want := int64(1)
			if g := c.hq / c.hkv; c.rows*c.hq < 256 && g <= 8 && g*c.d <= 2048 {
				if nk > 32 {
					want = 2
				}
			} else if c.rows*c.hq < 256 && nk > 512 {
				want = 2
			}
			if sharedDrv.ActivationsRemote() && c.rows*(c.hq/c.hkv) > 1 && i%2 != 0 {
				want++ // K, a host tensor, copied to device scratch
			}
			if launches != want {
				t.Errorf("%d launches, want %d", launches, want)
			}
			if err := b.Sync(); err != nil {
				t.Fatal(err)
			}
			near(t, "attention", dst.F32(), refAttention(qv, kv, vv, c.rows, c.hq, nk, c.hkv, c.d, mask, float64(scale)), 2e-5, 1e-4)
		})
	}
	mask, _ := tensor.NewMask(0, 1, []tensor.Span{{Start: 0, Len: 3}}, 0)
	q, k := b.Alloc(1, 1, 8), b.Alloc(2, 1, 8)
	if err := b.Attention(b.Alloc(1, 1, 8), q, k, k, mask, 1); err == nil {
		t.Error("mask of 3 keys with 2 keys: want an error")
	}
	b.Sync()
}

func TestElementwise(t *testing.T) {
	b, _ := open(t)
	r := rand.New(rand.NewPCG(23, 23))
	const rows, n = 3, 70
	av := randVals(r, rows*n, 4)
	av[0], av[1] = 30, -30 // tanh saturation
	bv := randVals(r, rows*n, 1)
	rowv := randVals(r, n, 1)
	type opf func(dst, a *tensor.Tensor) error
	cases := []struct {
		name string
		run  opf
		ref  func(i int) float64
	}{
		{"add", func(d, a *tensor.Tensor) error { return b.Add(d, a, put(b, true, bv, rows, n)) }, func(i int) float64 { return float64(av[i]) + float64(bv[i]) }},
		{"add row broadcast", func(d, a *tensor.Tensor) error { return b.Add(d, a, put(b, false, rowv, n)) }, func(i int) float64 { return float64(av[i]) + float64(rowv[i%n]) }},
		{"mul", func(d, a *tensor.Tensor) error { return b.Mul(d, a, put(b, false, bv, rows, n)) }, func(i int) float64 { return float64(av[i]) * float64(bv[i]) }},
		{"mul row broadcast", func(d, a *tensor.Tensor) error { return b.Mul(d, a, put(b, true, rowv, 1, n)) }, func(i int) float64 { return float64(av[i]) * float64(rowv[i%n]) }},
		{"scale", func(d, a *tensor.Tensor) error { return b.Scale(d, a, 0.125) }, func(i int) float64 { return float64(av[i]) * 0.125 }},
		{"softcap", func(d, a *tensor.Tensor) error { return b.Softcap(d, a, 5) }, func(i int) float64 { return math.Tanh(float64(av[i])/5) * 5 }},
		{"gelu tanh", func(d, a *tensor.Tensor) error { return b.GeluTanh(d, a) }, func(i int) float64 { return refGelu(float64(av[i])) }},
		{"silu", func(d, a *tensor.Tensor) error { return b.SiLU(d, a) }, func(i int) float64 { v := float64(av[i]); return v / (1 + math.Exp(-v)) }},
		{"copy", func(d, a *tensor.Tensor) error { return b.Copy(d, a) }, func(i int) float64 { return float64(av[i]) }},
	}
	for _, c := range cases {
		for _, inPlace := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s in place %v", c.name, inPlace), func(t *testing.T) {
				a := put(b, true, av, rows, n)
				dst := a
				if !inPlace {
					dst = b.Alloc(rows, n)
				}
				if err := c.run(dst, a); err != nil {
					t.Fatal(err)
				}
				if err := b.Sync(); err != nil {
					t.Fatal(err)
				}
				want := make([]float64, rows*n)
				for i := range want {
					want[i] = c.ref(i)
				}
				near(t, c.name, dst.F32(), want, 1e-5, 1e-5)
			})
		}
	}
	if err := b.Add(b.Alloc(rows, n), b.Alloc(rows, n), b.Alloc(2, n)); err == nil {
		t.Error("add with 2 rows of b for 3 rows of a: want an error")
	}
	b.Sync()
}

func TestSoftmaxArgmax(t *testing.T) {
	b, _ := open(t)
	r := rand.New(rand.NewPCG(29, 29))
	const rows, n = 4, 1000
	xv := randVals(r, rows*n, 10)
	xv[0*n+500] = 200
	xv[1*n+7], xv[1*n+900] = 300, 300 // tie: the first index wins
	xv[2*n+999] = 100
	xv[3*n+0] = 150
	x := put(b, true, xv, rows, n)
	sm := b.Alloc(rows, n)
	if err := b.Softmax(sm, x); err != nil {
		t.Fatal(err)
	}
	idx := tensor.New(tensor.I32, rows)
	if err := b.Argmax(idx, x); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	near(t, "softmax", sm.F32(), refSoftmax(xv, n), 1e-6, 1e-4)
	got, _ := idx.ToF32()
	want := []float32{500, 7, 999, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("argmax row %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// TestArgmaxRows checks Argmax against tensor.ArgmaxF32 (the host's
// greedy choice) on rows short enough for one workgroup and long enough to
// be split into parts and merged (a ragged last part, ties across parts,
// NaN, infinities, signed zeros, subnormals only the exact comparison
// tells apart), reading GPU and host tensors.
func TestArgmaxRows(t *testing.T) {
	b, _ := open(t)
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	sub := math.Float32frombits(1) // the smallest subnormal
	for _, n := range []int{1000, 8191, 8192, 2048*9 + 77} {
		for _, onGPU := range []bool{false, true} {
			r := rand.New(rand.NewPCG(uint64(n), 7))
			rows := make([][]float32, 0, 12)
			row := func(f func(v []float32)) {
				v := randVals(r, n, 10)
				f(v)
				rows = append(rows, v)
			}
			row(func(v []float32) { v[n-1] = 100 })                        // in the last (ragged) part
			row(func(v []float32) { v[n/3], v[n-2] = 100, 100 })           // a tie across parts: the first
			row(func(v []float32) { v[5], v[6] = 100, 100 })               // a tie in one invocation's neighbours
			row(func(v []float32) { v[0], v[n/2] = nan, 100; v[1] = nan }) // NaN never wins
			row(func(v []float32) {
				for i := range v {
					v[i] = float32(math.Inf(-1))
				}
			}) // nothing above -Inf: 0
			row(func(v []float32) {
				for i := range v {
					v[i] = nan
				}
				v[n-5] = -inf
			}) // only NaN and -Inf: 0
			row(func(v []float32) { v[n/2], v[n/4] = inf, inf }) // +Inf ties: the first
			row(func(v []float32) {
				for i := range v {
					v[i] = -1 - float32(i%7)
				}
				v[n-3], v[n/5] = 0, float32(math.Copysign(0, -1))
			}) // -0 equals +0: the first
			row(func(v []float32) {
				for i := range v {
					v[i] = -float32(i%5 + 1)
				}
				v[7], v[n-9] = 0, sub
			}) // a subnormal above 0
			row(func(v []float32) {
				for i := range v {
					v[i] = -float32(i%5+1) * 1e-3
				}
				v[n-9], v[8] = -sub, 0
			}) // 0 above a negative subnormal
			flat := make([]float32, 0, len(rows)*n)
			for _, v := range rows {
				flat = append(flat, v...)
			}
			x := put(b, onGPU, flat, len(rows), n)
			idx := tensor.New(tensor.U32, len(rows))
			if err := b.Argmax(idx, x); err != nil {
				t.Fatal(err)
			}
			if err := b.Sync(); err != nil {
				t.Fatal(err)
			}
			for i, v := range rows {
				if got, want := idx.U32()[i], tensor.ArgmaxF32(v); int(got) != want {
					t.Errorf("n %d, GPU tensor %v, row %d: argmax %d, want %d", n, onGPU, i, got, want)
				}
			}
		}
	}
}

// TestOneStep records a small layer (gather, norm, matmul, gelu, residual
// add, softcap, argmax) through host and GPU tensors in one command buffer
// and checks every intermediate after the single Sync.
func TestOneStep(t *testing.T) {
	b, _ := open(t)
	if os.Getenv("NOFUSE") != "" {
		b.SetFusion(false)
		defer b.SetFusionMode(gpu.DefaultFusion)
	}
	r := rand.New(rand.NewPCG(31, 31))
	const d, hidden, vocab = 128, 256, 50
	emb := newQuant(r, vocab, d, 4, 64, tensor.BF16)
	up := newQuant(r, hidden, d, 4, 64, tensor.BF16)
	down := newQuant(r, d, hidden, 8, 64, tensor.BF16)
	head := newDense(r, vocab, d, tensor.BF16)
	ids := []int32{4, 49}
	h := tensor.New(tensor.F32, len(ids), d) // host tensor, staged and written back
	if err := b.Gather(h, emb.m, ids); err != nil {
		t.Fatal(err)
	}
	nrm := b.Alloc(len(ids), d)
	if err := b.RMSNorm(nrm, h, nil, 1e-6); err != nil {
		t.Fatal(err)
	}
	u := b.Alloc(len(ids), hidden)
	if err := b.MatMul(u, nrm, up.m); err != nil {
		t.Fatal(err)
	}
	if err := b.GeluTanh(u, u); err != nil {
		t.Fatal(err)
	}
	o := b.Alloc(len(ids), d)
	if err := b.MatMul(o, u, down.m); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(h, h, o); err != nil { // host tensor read and written twice in one step
		t.Fatal(err)
	}
	logits := b.Alloc(len(ids), vocab)
	if err := b.MatMul(logits, h, head.m); err != nil {
		t.Fatal(err)
	}
	if err := b.Softcap(logits, logits, 30); err != nil {
		t.Fatal(err)
	}
	best := tensor.New(tensor.I32, len(ids))
	if err := b.Argmax(best, logits); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}

	hv := make([]float32, 0, len(ids)*d)
	for _, id := range ids {
		for _, v := range emb.deq[id] {
			hv = append(hv, float32(v))
		}
	}
	nv := toF32(refRMSNorm(hv, d, nil, 1e-6))
	uv := toF32(refMatMul(nv, len(ids), up))
	for i := range uv {
		uv[i] = float32(refGelu(float64(uv[i])))
	}
	ov := refMatMul(uv, len(ids), down)
	want := make([]float64, len(hv))
	for i := range hv {
		want[i] = float64(hv[i]) + ov[i]
	}
	near(t, "residual", h.F32(), want, 1e-3, 1e-3)
	lv := refMatMul(h.F32(), len(ids), head)
	for i := range lv {
		lv[i] = math.Tanh(lv[i]/30) * 30
	}
	near(t, "logits", logits.F32(), lv, 1e-4, 1e-4)
	got, _ := best.ToF32()
	for i := range ids {
		bi := 0
		for j := range vocab {
			if logits.F32()[i*vocab+j] > logits.F32()[i*vocab+bi] {
				bi = j
			}
		}
		if int(got[i]) != bi {
			t.Errorf("argmax row %d = %v, want %d", i, got[i], bi)
		}
	}
}

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// TestBufferReuse drops many tensors and checks recycled buffers come back
// zeroed and distinct from live ones.
func TestBufferReuse(t *testing.T) {
	b, _ := open(t)
	keep := b.Alloc(256)
	for i := range keep.F32() {
		keep.F32()[i] = 1
	}
	for round := 0; round < 3; round++ {
		for range 50 {
			x := b.Alloc(256)
			for i := range x.F32() {
				x.F32()[i] = 7
			}
		}
		runtime.GC()
		runtime.GC()
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		y := b.Alloc(256)
		for i, v := range y.F32() {
			if v != 0 {
				t.Fatalf("round %d: recycled buffer not zeroed at %d: %v", round, i, v)
			}
		}
	}
	for i, v := range keep.F32() {
		if v != 1 {
			t.Fatalf("live buffer overwritten at %d: %v", i, v)
		}
	}
}

// TestLongChain records a chain of dependent ops several command-buffer
// batches long in one step; each must see the previous one's result.
func TestLongChain(t *testing.T) {
	b, _ := open(t)
	x := b.Alloc(3, 100)
	for i := range x.F32() {
		x.F32()[i] = float32(i%7) - 3
	}
	want := make([]float64, x.Len())
	for i, v := range x.F32() {
		want[i] = float64(v)
	}
	tmp := b.Alloc(3, 100)
	for step := range 250 {
		if step%2 == 0 {
			if err := b.Scale(tmp, x, 0.505); err != nil {
				t.Fatal(err)
			}
		} else if err := b.Add(x, tmp, tmp); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		for range 125 {
			want[i] = float64(float32(float32(want[i]*0.505)) * 2)
		}
	}
	near(t, "chain", x.F32(), want, 1e-6, 1e-5)
}
