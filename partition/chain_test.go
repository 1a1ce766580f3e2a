package partition

import (
	"math"
	"slices"
	"testing"

	"github.com/graphmill/graphmill/internal/rng"
)

// TestChainMoves checks each kind of chain on a graph built for it: three
// parts, each anchored by a 5-clique (vertices 0-4 in part 0, 5-9 in part
// 1, 10-14 in part 2), and x = 15, y = 16, z = 17, none of whose single
// moves gains, but a chain of their moves does. With the balance limit too
// tight for the whole chain, or no budget, nothing moves.
func TestChainMoves(t *testing.T) {
	const x, y, z = 15, 16, 17
	cases := []struct {
		name   string
		parts  [3]int32   // x's, y's and z's parts
		edges  [][2]int32 // besides the cliques
		imb    float64
		budget int64    // of adjacency entries scanned
		want   [3]int32 // their parts after
		gained int64
	}{
		{
			name: "one part to a third", parts: [3]int32{0, 0, 0},
			edges: [][2]int32{{x, y}, {x, 0}, {x, 10}, {x, 11}, {y, 1}, {y, 12}, {y, 13}},
			imb:   2, want: [3]int32{2, 2, 0}, gained: 2,
		},
		{
			name: "two parts to a third", parts: [3]int32{0, 1, 0},
			edges: [][2]int32{{x, y}, {x, 0}, {x, 10}, {y, 5}, {y, 11}},
			imb:   2, want: [3]int32{2, 2, 0}, gained: 1,
		},
		{
			name: "one part to two", parts: [3]int32{0, 0, 0},
			edges: [][2]int32{{x, y}, {x, 0}, {x, 5}, {x, 6}, {y, 1}, {y, 10}, {y, 11}},
			imb:   2, want: [3]int32{1, 2, 0}, gained: 1,
		},
		{
			name: "a leaf with its neighbour", parts: [3]int32{0, 0, 0},
			edges: [][2]int32{{x, y}, {x, 0}, {x, 5}, {x, 6}},
			imb:   2, want: [3]int32{1, 1, 0}, gained: 1,
		},
		{
			name: "a path of three", parts: [3]int32{0, 0, 0},
			// z's move gains 0, y's then 0, x's then 1.
			edges: [][2]int32{{x, y}, {y, z}, {z, 10}, {y, 1}, {y, 11}, {x, 2}, {x, 12}},
			imb:   2, want: [3]int32{2, 2, 2}, gained: 1,
		},
		{
			name: "no room for both", parts: [3]int32{0, 0, 0},
			edges: [][2]int32{{x, y}, {x, 0}, {x, 10}, {x, 11}, {y, 1}, {y, 12}, {y, 13}},
			imb:   1.1, want: [3]int32{0, 0, 0}, gained: 0,
		},
		{
			name: "no budget", parts: [3]int32{0, 0, 0},
			edges: [][2]int32{{x, y}, {x, 0}, {x, 10}, {x, 11}, {y, 1}, {y, 12}, {y, 13}},
			imb:   2, budget: -1, want: [3]int32{0, 0, 0}, gained: 0,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := edgeSet{n: 18, pairs: c.edges}
			where := make([]int32, e.n)
			for p := int32(0); p < 3; p++ {
				for i := 5 * p; i < 5*p+5; i++ {
					where[i] = p
					for j := i + 1; j < 5*p+5; j++ {
						e.pairs = append(e.pairs, [2]int32{i, j})
					}
				}
			}
			where[x], where[y], where[z] = c.parts[0], c.parts[1], c.parts[2]
			rf, l := refinerOn(t, e.graph(t), 3, c.imb, where)
			before := rf.cut()
			for v := int32(0); v < int32(e.n); v++ {
				rf.connect(v)
				for _, q := range rf.touched {
					if rf.conn[q] > int64(rf.id[v]) {
						t.Fatalf("vertex %d alone gains by moving to part %d: the case is not one for chains", v, q)
					}
				}
				rf.clearConn()
			}
			budget := int64(math.MaxInt64)
			if c.budget != 0 {
				budget = c.budget
			}
			gained := rf.chainMoves(l.hub(), budget)
			if got := [3]int32{where[x], where[y], where[z]}; got != c.want || gained != c.gained {
				t.Fatalf("x, y, z in parts %v, gained %d; want %v, %d", got, gained, c.want, c.gained)
			}
			checkRefiner(t, rf, l, before-gained)
		})
	}
}

// TestChainMovesRandom checks what chainMoves keeps on grids and on their
// contracted (weighted) levels, partitioned at random (balanced) and
// refined by greedy rounds: the gain it returns is what the cut lost,
// every vertex's degrees are those of its lists, and no part is heavier
// than before or than its limit.
func TestChainMovesRandom(t *testing.T) {
	g := grid(40, 30).graph(t)
	n := g.NumNodes()
	vw, ncon := vertexWeights(n, nil, nil)
	fine := &level{n: n, xadj: g.Xadj, adj: g.Adjncy, vw: vw}
	maxvw := []int32{int32(n)}
	found := int64(0)
	for _, k := range []int{2, 3, 8} {
		for seed := uint64(1); seed <= 4; seed++ {
			m, cn := fine.match(rng.New(seed), ncon, maxvw, nil, 1, nil)
			coarse := fine.contract(m, cn, ncon, 1, &scratch{})
			for _, l := range []*level{fine, coarse} {
				rf := newRefiner(k, ncon, []int64{int64(n)}, 1.05, rng.New(seed), 1, nil)
				rf.reserve(n)
				rf.setLevel(l, randomParts(l.n, k, seed), nil)
				rf.greedyBatch(10)
				before, pw := rf.cut(), slices.Clone(rf.pw)
				gained := rf.chainMoves(l.hub(), math.MaxInt64)
				found += gained
				checkRefiner(t, rf, l, before-gained)
				for q := range pw {
					if rf.pw[q] > max(pw[q], rf.limit[0]) {
						t.Fatalf("k=%d seed %d: part %d weighs %d, over its limit %d", k, seed, q, rf.pw[q], rf.limit[0])
					}
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no chain gained on any grid or level: the check checked nothing")
	}
}

// refinerOn returns a refiner holding g's level partitioned by where.
func refinerOn(t *testing.T, g *Graph, k int, imb float64, where []int32) (*refiner, *level) {
	t.Helper()
	n := g.NumNodes()
	vw, ncon := vertexWeights(n, nil, nil)
	l := &level{n: n, xadj: g.Xadj, adj: g.Adjncy, vw: vw}
	rf := newRefiner(k, ncon, []int64{int64(n)}, imb, rng.New(1), 1, nil)
	rf.reserve(n)
	rf.setLevel(l, where, nil)
	return rf, l
}

// checkRefiner checks rf's running state against its partition: the cut
// (and that it is wantCut), every vertex's degrees and the part weights.
func checkRefiner(t *testing.T, rf *refiner, l *level, wantCut int64) {
	t.Helper()
	if got, lists := rf.cut(), cutOf(l, rf.where); got != lists || got != wantCut {
		t.Fatalf("the refiner's cut is %d, the partition's %d, want %d", got, lists, wantCut)
	}
	ref := newRefiner(rf.k, rf.ncon, []int64{1}, 1, rng.New(1), 1, nil)
	ref.reserve(l.n)
	ref.setLevel(l, slices.Clone(rf.where), nil)
	if !slices.Equal(rf.id[:l.n], ref.id[:l.n]) || !slices.Equal(rf.ed[:l.n], ref.ed[:l.n]) || !slices.Equal(rf.pw, ref.pw) {
		t.Fatal("degrees or part weights differ from the lists'")
	}
}
