package tensor

import (
	"slices"
	"testing"
)

// TestAppendKeyPositions checks the positions of every key column, in
// storage order, against the spans written out by hand, appended to an
// empty slice and to a reused one whose old contents and prefix must not
// leak into the result.
func TestAppendKeyPositions(t *testing.T) {
	cases := []struct {
		name string
		keys []Span
		want []int
	}{
		{"one span", []Span{{Start: 0, Len: 4}}, []int{0, 1, 2, 3}},
		{"sink and recent", []Span{{Start: 0, Len: 2}, {Start: 10, Len: 3}}, []int{0, 1, 10, 11, 12}},
		{"wrapped ring", []Span{{Start: 7, Len: 2}, {Start: 4, Len: 3}}, []int{7, 8, 4, 5, 6}},
		{"empty span between", []Span{{Start: 3, Len: 1}, {Start: 9, Len: 0}, {Start: 20, Len: 2}}, []int{3, 20, 21}},
		{"no keys", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := Mask{QueryStart: 100, Rows: 1, Keys: c.keys}
			if got := m.AppendKeyPositions(nil); !slices.Equal(got, c.want) {
				t.Errorf("into nil: %v, want %v", got, c.want)
			}
			if got := m.KeyPositions(); !slices.Equal(got, c.want) {
				t.Errorf("KeyPositions: %v, want %v", got, c.want)
			}
			reused := []int{-5, 99, 98, 97, 96, 95, 94, 93}
			got := m.AppendKeyPositions(reused[:1])
			if got[0] != -5 || !slices.Equal(got[1:], c.want) {
				t.Errorf("after a prefix of a reused slice: %v, want [-5] + %v", got, c.want)
			}
		})
	}
}
