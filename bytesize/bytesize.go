package bytesize

import (
	"fmt"
	"math"
)

// Format gives a short human size in binary units: whole bytes and KiB
// ("512 B", "11 KiB"), then MiB, GiB and TiB with one decimal ("3.4 MiB",
// "1.2 GiB"). A count that rounds to 1024 of a unit is written in the next
// one ("1.0 MiB", not "1024 KiB").
func Format(n int64) string {
	const k = 1024
	if n < k {
		return fmt.Sprintf("%d B", n)
	}
	if kib := (n + k/2) / k; kib < k {
		return fmt.Sprintf("%d KiB", kib)
	}
	v := float64(n) / (k * k)
	units := []string{"MiB", "GiB", "TiB"}
	for i, u := range units {
		if math.Round(v*10) < k*10 || i == len(units)-1 {
			return fmt.Sprintf("%.1f %s", v, u)
		}
		v /= k
	}
	panic("unreachable")
}
