package partition

import (
	"math"
	"math/rand/v2"
	"slices"
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
			rf.setLevel(l, where, nil)
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
				{"pairFM", func() { rf.pairFM(1) }},
				{"chainMoves", func() { rf.chainMoves(l.hub(), math.MaxInt64) }},
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
				if s.name == "greedyBatch" {
					checkSettled(t, rf)
				}
				for v := 0; v < n; v++ {
					if rf.pst[2*v+1] != 0 {
						t.Fatalf("k=%d seed %d: %s left vertex %d with pairFM flags %b", k, seed, s.name, v, rf.pst[2*v+1])
					}
					if rf.q.pos[v] != -1 || rf.visited[v] || rf.exact[v] {
						t.Fatalf("k=%d seed %d: %s left vertex %d flagged (queue position %d, visited/locked %v, exact %v)",
							k, seed, s.name, v, rf.q.pos[v], rf.visited[v], rf.exact[v])
					}
				}
			}
		}
	}
}

// checkSettled checks greedyBatch's settled leads after its last round:
// every vertex it keeps settled has at least that much more edge weight
// in its own part than in any other.
func checkSettled(t *testing.T, rf *refiner) {
	t.Helper()
	l := rf.l
	for v := 0; v < l.n; v++ {
		lead := rf.settled[v]
		if lead <= 0 {
			continue
		}
		conn := map[int32]int64{}
		for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
			conn[rf.where[l.adj[j]]] += int64(l.ewAt(j))
		}
		own := conn[rf.where[v]]
		for q, c := range conn {
			if q != rf.where[v] && own-c < int64(lead) {
				t.Fatalf("vertex %d settled with a lead of %d, but its own part has %d and part %d has %d", v, lead, own, q, c)
			}
		}
	}
}

// TestSetLevelInterior checks setLevel's shortcut for the vertices of
// interior coarse vertices: given the refined coarser level's external
// degrees through project, every vertex's internal and external degree
// and the cut are those computed from the lists, on unit-weight and
// weighted levels, for partitions refined or left random.
func TestSetLevelInterior(t *testing.T) {
	g := grid(40, 30).graph(t)
	n := g.NumNodes()
	vw, ncon := vertexWeights(n, nil, nil)
	fine := &level{n: n, xadj: g.Xadj, adj: g.Adjncy, vw: vw}
	maxvw := []int32{int32(n)}
	for _, k := range []int{2, 4, 8} {
		for seed := uint64(1); seed <= 3; seed++ {
			// Two levels below the grid, so that the middle one is
			// weighted.
			l0 := &level{n: fine.n, xadj: fine.xadj, adj: fine.adj, vw: fine.vw}
			m, cn := l0.match(rng.New(seed), ncon, maxvw, nil, 1, nil)
			l1 := l0.contract(m, cn, ncon, 1, &scratch{})
			m, cn = l1.match(rng.New(seed+10), ncon, maxvw, nil, 1, nil)
			l2 := l1.contract(m, cn, ncon, 1, &scratch{})
			r := rand.New(rand.NewPCG(seed, uint64(k)))
			where := make([]int32, l2.n)
			for v := range where {
				where[v] = int32(r.IntN(k))
			}
			rf := newRefiner(k, ncon, []int64{int64(n)}, 1.03, rng.New(seed), 1, nil)
			rf.reserve(n)
			rf.setLevel(l2, where, nil)
			if seed != 1 {
				rf.greedyBatch(10) // seed 1 keeps the random partition
			}
			for _, l := range []*level{l1, l0} {
				var ed []int32
				where, ed = project(l, where, rf.ed, 1, nil)
				rf.setLevel(l, where, ed)
				gotID, gotED, gotCut := slices.Clone(rf.id), slices.Clone(rf.ed), rf.cut()
				ref := newRefiner(k, ncon, []int64{int64(n)}, 1.03, rng.New(seed), 1, nil)
				ref.reserve(n)
				ref.setLevel(l, where, nil)
				if !slices.Equal(gotID, ref.id) || !slices.Equal(gotED, ref.ed) || gotCut != ref.cut() {
					t.Fatalf("k=%d seed %d level of %d vertices: degrees or cut (%d) differ from the lists' (%d)", k, seed, l.n, gotCut, ref.cut())
				}
				interior := 0
				for _, e := range ed {
					if e == 0 {
						interior++
					}
				}
				if interior == 0 && seed != 1 {
					t.Fatalf("k=%d seed %d: no vertex took the shortcut", k, seed)
				}
				if seed != 1 {
					rf.greedyBatch(10)
				}
			}
		}
	}
}
