package sample

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTakeAllKernels checks every takeAll kernel the CPU has against
// takeAllGo: offsets, the copied lists and positions (the lanes of the
// destinations in todo are theirs to overwrite, so not compared), todo,
// on lists of 0 to 70 neighbours (either side of 8, 16 and k) at every
// position in the neighbour array, including its last.
func TestTakeAllKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ind := make([]int32, 5000)
	for i := range ind {
		ind[i] = r.Int32()
	}
	for _, width := range takeAllWidths {
		for _, k := range []int{1, 5, 16, 17, 25, 40, 100} {
			for _, nd := range []int{0, 1, 7, 300} {
				t.Run(fmt.Sprintf("width=%d/k=%d/nd=%d", width, k, nd), func(t *testing.T) {
					sp := make([]int64, 2*nd)
					bound := 0
					for i := 0; i < nd; i++ {
						d := r.IntN(71)
						lo := r.IntN(len(ind) - d + 1)
						if i == nd-1 {
							lo = len(ind) - d // a list that ends the array
						}
						sp[2*i], sp[2*i+1] = int64(lo), int64(lo+d)
						bound += min(d, k)
					}
					run := func(w int) ([]int32, []int64, []int64, []int32) {
						defer func(w int) { takeAllWidth = w }(takeAllWidth)
						takeAllWidth = w
						out := make([]int32, bound+takeAllSlack)
						pos := make([]int64, bound+takeAllSlack)
						ip := make([]int64, nd+1)
						todo := make([]int32, nd)
						nt := takeAll(ind, sp, k, out, pos, ip, todo)
						return out[:bound], pos[:bound], ip, todo[:nt]
					}
					wo, wp, wip, wtodo := run(0)
					out, pos, ip, todo := run(width)
					if !slices.Equal(ip, wip) || !slices.Equal(todo, wtodo) {
						t.Fatalf("offsets or todo differ: %v %v, want %v %v", ip, todo, wip, wtodo)
					}
					if ip[nd] != int64(bound) {
						t.Fatalf("%d edges, want %d", ip[nd], bound)
					}
					for i := 0; i < nd; i++ {
						if sp[2*i+1]-sp[2*i] > int64(k) {
							continue
						}
						a, b := ip[i], ip[i+1]
						if !slices.Equal(out[a:b], wo[a:b]) || !slices.Equal(pos[a:b], wp[a:b]) {
							t.Fatalf("destination %d: %v %v, want %v %v", i, out[a:b], pos[a:b], wo[a:b], wp[a:b])
						}
						for j := a; j < b; j++ {
							if pos[j] != sp[2*i]+j-a || out[j] != ind[pos[j]] {
								t.Fatalf("destination %d: edge %d is %d at %d", i, j, out[j], pos[j])
							}
						}
					}
				})
			}
		}
	}
}
