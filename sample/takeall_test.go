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
					wsp, wo, wp, wip, wtodo := runTakeAll(0, ind, indptr, dst, k)
					sp, out, pos, ip, todo := runTakeAll(width, ind, indptr, dst, k)
					bound := len(out)
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

// FuzzTakeAll compares every takeAll kernel with takeAllGo on a graph
// whose degrees come from the input, destinations from it too, and a
// fanout from 1 to 32.
func FuzzTakeAll(f *testing.F) {
	f.Add([]byte{3, 0, 9, 17, 1, 8, 40, 2}, []byte{0, 1, 2, 3, 4, 5, 6, 7}, uint8(8))
	f.Add([]byte{70, 0, 0, 16}, []byte{3, 2, 0}, uint8(16))
	f.Fuzz(func(t *testing.T, degrees, dsts []byte, k8 uint8) {
		if len(degrees) == 0 || len(degrees) > 256 {
			return
		}
		n := len(degrees)
		indptr := make([]int64, n+1)
		for v, d := range degrees {
			indptr[v+1] = indptr[v] + int64(d%80)
		}
		ind := make([]int32, indptr[n])
		for i := range ind {
			ind[i] = int32((i * 7) % n)
		}
		k := 1 + int(k8)%32
		seen := make([]bool, n)
		var dst []int32
		for _, b := range dsts {
			if v := int(b) % n; !seen[v] { // a hop's destinations are distinct
				seen[v] = true
				dst = append(dst, int32(v))
			}
		}
		wsp, wo, wp, wip, wtodo := runTakeAll(0, ind, indptr, dst, k)
		for _, w := range takeAllWidths {
			sp, out, pos, ip, todo := runTakeAll(w, ind, indptr, dst, k)
			if !slices.Equal(sp, wsp) || !slices.Equal(out, wo) || !slices.Equal(pos, wp) || !slices.Equal(ip, wip) || !slices.Equal(todo, wtodo) {
				t.Fatalf("width %d differs from the Go loop (k %d, dst %v)", w, k, dst)
			}
		}
	})
}

// runTakeAll runs takeAll with the kernel of width lanes on dst and
// returns the ranges, the edges (those of the destinations in todo, the
// draws' to write, cleared) and positions, the offsets and todo.
func runTakeAll(width int, ind []int32, indptr []int64, dst []int32, k int) (sp []int64, out []int32, pos, ip []int64, todo []int32) {
	defer func(w int) { takeAllWidth = w }(takeAllWidth)
	takeAllWidth = width
	nd := len(dst)
	bound := 0
	for _, v := range dst {
		bound += min(int(indptr[v+1]-indptr[v]), k)
	}
	sp = make([]int64, 2*nd)
	out = make([]int32, bound+takeAllSlack)
	pos = make([]int64, bound+takeAllSlack)
	ip = make([]int64, nd+1)
	todo = make([]int32, nd)
	nt := takeAll(ind, indptr, dst, k, sp, out, pos, ip, todo)
	for _, i := range todo[:nt] {
		clear(out[ip[i]:ip[i+1]])
		clear(pos[ip[i]:ip[i+1]])
	}
	return sp, out[:bound], pos[:bound], ip, todo[:nt]
}
