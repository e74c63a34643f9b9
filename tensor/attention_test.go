package tensor

import (
	"math"
	"strings"
	"testing"
)

func TestCheckAttention(t *testing.T) {
	mask := func(rows, keys int) Mask {
		return Mask{QueryStart: keys - rows, Rows: rows, Keys: []Span{{Start: 0, Len: keys}}}
	}
	q, k, v, dst := New(F32, 3, 4, 8), New(F32, 5, 2, 8), New(F32, 5, 2, 8), New(F32, 3, 4, 8)
	tests := []struct {
		name          string
		dst, q, k, v  *Tensor
		mask          Mask
		wantErrSubstr string
	}{
		{"ok", dst, q, k, v, mask(3, 5), ""},
		{"nil k", dst, q, nil, v, mask(3, 5), "k is nil"},
		{"rank", dst, New(F32, 3, 32), k, v, mask(3, 5), "want 3 axes"},
		{"v rows", dst, q, k, New(F32, 4, 2, 8), mask(3, 5), "disagree"},
		{"head dim", dst, q, New(F32, 5, 2, 4), New(F32, 5, 2, 4), mask(3, 5), "disagree"},
		{"gqa", New(F32, 3, 3, 8), New(F32, 3, 3, 8), k, v, mask(3, 5), "not a multiple"},
		{"dst", New(F32, 2, 4, 8), q, k, v, mask(3, 5), "dst"},
		{"mask rows", dst, q, k, v, mask(2, 5), "mask has 2 rows"},
		{"mask keys from offset, not the live window", dst, q, k, v, Mask{QueryStart: 9, Rows: 3, Keys: []Span{{Start: 0, Len: 12}}}, "mask covers 12 keys, k has 5"},
		{"row sees nothing", dst, q, k, v, Mask{QueryStart: 0, Rows: 3, Keys: []Span{{Start: 10, Len: 5}}}, "sees no key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := CheckAttention(tc.dst, tc.q, tc.k, tc.v, tc.mask)
			if tc.wantErrSubstr == "" {
				if err != nil || s != (AttentionShape{Rows: 3, Heads: 4, Keys: 5, KVHeads: 2, HeadDim: 8}) {
					t.Fatalf("got %+v, %v", s, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErrSubstr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErrSubstr)
			}
		})
	}
}

func TestCheckRoPE(t *testing.T) {
	x := New(F32, 3, 2, 8)
	table := func(dims, n int) *Rotary { return &Rotary{Dims: dims, InvFreq: New(F32, n)} }
	tests := []struct {
		name          string
		x             *Tensor
		pos0          int
		r             *Rotary
		wantErrSubstr string
	}{
		{"ok", x, 5, table(8, 4), ""},
		{"partial rotation", x, 0, table(4, 2), ""},
		{"nil", nil, 0, table(8, 4), "x is nil"},
		{"rank", New(F32, 3, 16), 0, table(8, 4), "want [n, heads, headDim]"},
		{"no table", x, 0, nil, "no table"},
		{"odd dims", x, 0, table(7, 3), "must be even"},
		{"dims past head", x, 0, table(10, 5), "must be even and in (0, 8]"},
		{"short table", x, 0, table(8, 3), "inverse frequencies"},
		{"table dtype", x, 0, &Rotary{Dims: 8, InvFreq: New(BF16, 4)}, "inverse frequencies"},
		{"negative position", x, -1, table(8, 4), "negative position -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, heads, hd, err := CheckRoPE(tc.x, tc.pos0, tc.r)
			if tc.wantErrSubstr == "" {
				if err != nil || n != 3 || heads != 2 || hd != 8 {
					t.Fatalf("got %d %d %d, %v", n, heads, hd, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErrSubstr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErrSubstr)
			}
		})
	}
}

func TestRotaryTables(t *testing.T) {
	if _, err := DefaultRotary(8, 0); err == nil || !strings.Contains(err.Error(), "base 0") {
		t.Errorf("zero base: %v", err)
	}
	if _, err := NewRotary(8, []float32{1, 2, 3}, false); err == nil {
		t.Error("a 3-entry table for 8 dims was accepted")
	}
	if _, err := NewRotary(4, []float32{1, float32(math.NaN())}, false); err == nil {
		t.Error("a NaN frequency was accepted")
	}
	r, err := DefaultRotary(128, 500000)
	if err != nil {
		t.Fatal(err)
	}
	inv := r.InvFreq.F32()
	for i, f := range inv {
		want := math.Pow(500000, -float64(2*i)/128)
		if math.Abs(float64(f)-want) > 1e-7*want {
			t.Fatalf("inv[%d] = %g, want %g", i, f, want)
		}
	}
}
