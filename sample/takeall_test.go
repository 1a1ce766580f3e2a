package sample

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTakeAllKernels checks every takeAll kernel the CPU has against
// takeAllGo and against the graph: ranges, offsets, the copied lists and
// positions (the lanes of the destinations in todo are theirs to
// overwrite, so not compared) and todo.
func TestTakeAllKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// A graph of 1000 nodes of 0 to 70 neighbours (either side of 8, 16
	// and k), its last node's list ending the neighbour array.
	indptr := make([]int64, 1001)
	for v := range 1000 {
		indptr[v+1] = indptr[v] + int64(r.IntN(71))
	}
	indptr[1000] = max(indptr[1000], indptr[999]+40)
	ind := make([]int32, indptr[1000])
	for i := range ind {
		ind[i] = r.Int32N(1000)
	}
	for _, width := range takeAllWidths {
		for _, k := range []int{1, 5, 8, 9, 16, 25, 40, 100} {
			for _, nd := range []int{0, 1, 7, 300} {
				t.Run(fmt.Sprintf("width=%d/k=%d/nd=%d", width, k, nd), func(t *testing.T) {
					dst := make([]int32, nd)
					for i, v := range r.Perm(999)[:nd] {
						dst[i] = int32(v)
					}
					if nd > 0 {
						dst[nd-1] = 999
					}
					bound := 0
					for _, v := range dst {
						bound += min(int(indptr[v+1]-indptr[v]), k)
					}
					run := func(w int) ([]int64, []int32, []int64, []int64, []int32) {
						defer func(w int) { takeAllWidth = w }(takeAllWidth)
						takeAllWidth = w
						sp := make([]int64, 2*nd)
						out := make([]int32, bound+takeAllSlack)
						pos := make([]int64, bound+takeAllSlack)
						ip := make([]int64, nd+1)
						todo := make([]int32, nd)
						nt := takeAll(ind, indptr, dst, k, sp, out, pos, ip, todo)
						return sp, out[:bound], pos[:bound], ip, todo[:nt]
					}
					wsp, wo, wp, wip, wtodo := run(0)
					sp, out, pos, ip, todo := run(width)
					if !slices.Equal(sp, wsp) || !slices.Equal(ip, wip) || !slices.Equal(todo, wtodo) {
						t.Fatalf("ranges, offsets or todo differ: %v %v %v, want %v %v %v", sp, ip, todo, wsp, wip, wtodo)
					}
					if ip[nd] != int64(bound) {
						t.Fatalf("%d edges, want %d", ip[nd], bound)
					}
					for i, v := range dst {
						lo, hi := indptr[v], indptr[v+1]
						if sp[2*i] != lo || sp[2*i+1] != hi {
							t.Fatalf("destination %d: range %d-%d, want %d-%d", i, sp[2*i], sp[2*i+1], lo, hi)
						}
						if hi-lo > int64(k) {
							if !slices.Contains(todo, int32(i)) {
								t.Fatalf("destination %d of %d neighbours is not listed to draw", i, hi-lo)
							}
							continue
						}
						a, b := ip[i], ip[i+1]
						if !slices.Equal(out[a:b], wo[a:b]) || !slices.Equal(pos[a:b], wp[a:b]) {
							t.Fatalf("destination %d: %v %v, want %v %v", i, out[a:b], pos[a:b], wo[a:b], wp[a:b])
						}
						for j := a; j < b; j++ {
							if pos[j] != lo+j-a || out[j] != ind[pos[j]] {
								t.Fatalf("destination %d: edge %d is %d at %d", i, j, out[j], pos[j])
							}
						}
					}
				})
			}
		}
	}
}
