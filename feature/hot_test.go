package feature

import (
	"fmt"
	"testing"

	"github.com/graphmill/graphmill/internal/rng"
)

// TestHotSet checks every node's slot against a count of the set nodes
// below it, on sizes around the word and block boundaries and densities
// from empty to full.
func TestHotSet(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 511, 512, 513, 1023, 5000} {
		for _, density := range []float64{0, 0.01, 0.5, 0.97, 1} {
			t.Run(fmt.Sprintf("n=%d/density=%g", n, density), func(t *testing.T) {
				r := rng.New(uint64(n))
				set := make([]uint64, (n+63)/64)
				for v := range n {
					if r.Float64() < density {
						set[v/64] |= 1 << (v % 64)
					}
				}
				h := newHotSet(set)
				if want := int64(8*len(set) + 4*((len(set)+7)/8)); h.bytes() != want {
					t.Fatalf("bytes %d, want %d", h.bytes(), want)
				}
				k := 0
				for v := range n {
					in := set[v/64]>>(v%64)&1 != 0
					sl, ok := h.slot(int32(v))
					if ok != in || (in && sl != k) {
						t.Fatalf("node %d: slot %d, %v; want %d, %v", v, sl, ok, k, in)
					}
					if in {
						k++
					}
				}
			})
		}
	}
	var none *hotSet
	if none.bytes() != 0 {
		t.Fatal("a nil set takes memory")
	}
}
