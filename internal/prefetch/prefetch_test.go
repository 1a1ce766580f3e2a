package prefetch

import (
	"fmt"
	"testing"

	"github.com/graphmill/graphmill/internal/rng"
)

// TestBounds calls the prefetches at the edges of their arrays: empty
// ranges, ranges that end at the last element, ranges longer than the
// eight lines prefetched, empty inputs. A prefetch never faults, but the
// address arithmetic must not read past the offsets it is given.
func TestBounds(t *testing.T) {
	base := make([]int32, 1000)
	Spans32(base, []int64{0, 0, 999, 1000, 0, 1000, 500, 501})
	Spans32(base, []int64{3}) // no whole pair
	Spans32(nil, []int64{0, 1})
	Spans32(base, nil)
	indptr := make([]int64, 11)
	Rows64(indptr, []int32{0, 9, 5})
	Rows32(make([]uint32, 10), []int32{0, 9, 5})
	Rows32(nil, []int32{1})
	Rows64(nil, []int32{1})
	Rows64(indptr, nil)
	At32(base, []int64{0, 999, 500})
	At32(base, nil)
	At32(nil, []int64{1})
	// Masks32 reads only as many masks as there are pairs, and the other
	// way round.
	Masks32(base, []int64{0, 0, 936, 1000, 3, 5}, []uint64{0, 1<<63 | 1, 3, 1 << 62})
	Masks32(base, []int64{0, 1000, 5, 6}, []uint64{^uint64(0)})
	Masks32(base, []int64{3}, []uint64{1})
	Masks32(nil, []int64{0, 1}, []uint64{1})
	Floats(make([]float32, 1000)[999:]) // the last element only
	Floats(nil)
}

func work(n int) int64 {
	x := int64(1)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

var sink int64

// BenchmarkAhead measures items that each load three lines of a random
// range of a large array and do some arithmetic: with no prefetch, with
// the ranges prefetched a few items ahead in small groups (as the
// sampler does), and in bursts of 32 items.
func BenchmarkAhead(b *testing.B) {
	base := make([]int32, 20<<20)
	for i := range base {
		base[i] = int32(i)
	}
	r := rng.New(1)
	const n = 1 << 18
	offs := make([]int64, 2*n)
	for i := 0; i < n; i++ {
		lo := int64(r.IntN(len(base) - 64))
		offs[2*i], offs[2*i+1] = lo, lo+40
	}
	for _, w := range []int{5, 20} {
		for _, mode := range []string{"none", "ahead", "burst"} {
			b.Run(fmt.Sprintf("work=%d/%s", w, mode), func(b *testing.B) {
				var s int64
				for it := 0; it < b.N; it++ {
					i := it % n
					switch {
					case mode == "ahead" && i%4 == 0 && i+12 <= n:
						Spans32(base, offs[2*(i+8):2*(i+12)])
					case mode == "burst" && i%32 == 0 && i+64 <= n:
						Spans32(base, offs[2*(i+32):2*(i+64)])
					}
					s += work(w)
					lo := offs[2*i]
					s += int64(base[lo]) + int64(base[lo+17]) + int64(base[lo+33])
				}
				sink += s
			})
		}
	}
}
