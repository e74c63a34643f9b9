package bytesize

import "testing"

func TestFormat(t *testing.T) {
	const k = 1024
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{-5, "-5 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{1535, "1 KiB"},
		{1536, "2 KiB"},
		{512 * k, "512 KiB"}, // `run` said "512.0 KiB" where the chat said "512 KiB"
		{1023 * k, "1023 KiB"},
		{1023*k + 511, "1023 KiB"},
		{1023*k + 512, "1.0 MiB"}, // rounds to 1024 KiB
		{k * k, "1.0 MiB"},
		{3565158, "3.4 MiB"},
		{256 * k * k, "256.0 MiB"},
		{k*k*k - 52429, "1023.9 MiB"},
		{k*k*k - 52428, "1.0 GiB"}, // rounds to 1024.0 MiB
		{k * k * k, "1.0 GiB"},
		{1288490189, "1.2 GiB"},
		{k * k * k * k, "1.0 TiB"},
		{5000 * k * k * k * k, "5000.0 TiB"},
	} {
		if got := Format(tc.n); got != tc.want {
			t.Errorf("Format(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
