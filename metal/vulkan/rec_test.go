//go:build linux

package vulkan

import "testing"

// BenchmarkRecord measures the host cost of recording one small op (the
// per-op overhead a decode step pays ~1000 times), without running it.
func BenchmarkRecord(b *testing.B) {
	g, _ := open(b)
	x := g.Alloc(256)
	for i := 0; i < b.N; i++ {
		if err := g.Scale(x, x, 1); err != nil {
			b.Fatal(err)
		}
		if i%4096 == 4095 {
			if err := g.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if err := g.Sync(); err != nil {
		b.Fatal(err)
	}
}
