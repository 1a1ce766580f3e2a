package partition

import (
	"math/rand/v2"
	"testing"

	"github.com/graphmill/graphmill/internal/rng"
)

// TestRefinerLeavesNoFlags checks what refiner.reserve relies on: after
// each refinement step on a level, the per-vertex flags (greedy's visited,
// FM's locks and exact-gain marks) are all clear and the queue is empty,
// so the next, finer level can reuse the arrays without clearing them;
// and that the cut the refiner keeps move by move is the partition's.
// Random partitions of a grid, over- and under-loaded, exercise FM's
// drops, requeues and rollbacks and the rebalancing.
func TestRefinerLeavesNoFlags(t *testing.T) {
	g := grid(40, 30).graph(t)
	n := g.NumNodes()
	vw, ncon := vertexWeights(n, nil, nil)
	l := &level{n: n, xadj: g.Xadj, adj: g.Adjncy, vw: vw}
	for _, k := range []int{2, 4, 8} {
		for seed := uint64(1); seed <= 4; seed++ {
			r := rand.New(rand.NewPCG(seed, uint64(k)))
			where := make([]int32, n)
			for v := range where {
				where[v] = int32(r.IntN(k))
				if seed%2 == 0 && v%3 == 0 {
					where[v] = 0 // part 0 overloaded
				}
			}
			rf := newRefiner(k, ncon, []int64{int64(n)}, 1.03, rng.New(seed), 2, nil)
			rf.reserve(n)
			rf.setLevel(l, where)
			steps := []struct {
				name string
				run  func()
			}{
				{"balance", func() {
					if rf.overloaded() {
						rf.balance()
					}
				}},
				{"greedyBatch", func() { rf.greedyBatch(10) }},
				{"fm", func() { rf.fm(2, fmLimitKWay) }},
				{"greedy", func() { rf.greedy(2) }},
			}
			for _, s := range steps {
				s.run()
				if got, want := rf.cut(), cutOf(l, where); got != want {
					t.Fatalf("k=%d seed %d: after %s the refiner's cut is %d, the partition's %d", k, seed, s.name, got, want)
				}
				if rf.q.len() != 0 {
					t.Fatalf("k=%d seed %d: %s left %d vertices queued", k, seed, s.name, rf.q.len())
				}
				for v := 0; v < n; v++ {
					if rf.q.pos[v] != -1 || rf.visited[v] || rf.exact[v] {
						t.Fatalf("k=%d seed %d: %s left vertex %d flagged (queue position %d, visited/locked %v, exact %v)",
							k, seed, s.name, v, rf.q.pos[v], rf.visited[v], rf.exact[v])
					}
				}
			}
		}
	}
}
