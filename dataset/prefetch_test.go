package dataset

import (
	"slices"
	"testing"
)

func TestWillNeedMergesPages(t *testing.T) {
	for _, c := range []struct {
		name  string
		spans [][2]int64
		want  [][2]int64
	}{
		{"one byte", [][2]int64{{5, 6}}, [][2]int64{{0, 4096}}},
		{"same page twice", [][2]int64{{10, 20}, {100, 200}}, [][2]int64{{0, 4096}}},
		{"adjacent pages merge", [][2]int64{{4096, 4100}, {10, 20}}, [][2]int64{{0, 8192}}},
		{"a gap stays", [][2]int64{{0, 10}, {8192, 8200}}, [][2]int64{{0, 4096}, {8192, 12288}}},
		{"spanning and unsorted", [][2]int64{{20000, 20010}, {100, 9000}}, [][2]int64{{0, 12288}, {16384, 20480}}},
		{"none", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got [][2]int64
			willNeed(func(off, n int64) { got = append(got, [2]int64{off, off + n}) }, slices.Clone(c.spans))
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
