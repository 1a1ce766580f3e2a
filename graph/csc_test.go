package graph

import (
	"slices"
	"testing"
)

// TestOutDegreesParallel: the parallel count of a large graph equals the
// serial one.
func TestOutDegreesParallel(t *testing.T) {
	const n, m = 1000, 5 << 20
	g := &CSC{NumNodes: n, Indptr: make([]int64, n+1), Indices: make([]int32, m)}
	want := make([]int32, n)
	x := uint32(1)
	for i := range g.Indices {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		g.Indices[i] = int32(x % n)
		want[x%n]++
	}
	for v := 1; v <= n; v++ {
		g.Indptr[v] = int64(m) * int64(v) / n
	}
	if got := g.OutDegrees(); !slices.Equal(got, want) {
		t.Fatal("parallel out-degrees differ from the serial count")
	}
}
