package partition

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/graphmill/graphmill/internal/rng"
)

// TestPairFM checks the localized searches on pairs of parts on unit and
// weighted levels, from random partitions and from partitions the greedy
// refinement left: the cut never grows and is the one the refiner keeps,
// every vertex's degrees are those of the lists, no part goes over its
// limit, no flag is left set, and the partition is the same on one worker
// and on four (the pairs run concurrently there). The searches must find
// something in most of these cases.
func TestPairFM(t *testing.T) {
	g := grid(60, 50).graph(t)
	n := g.NumNodes()
	vw, ncon := vertexWeights(n, nil, nil)
	fine := &level{n: n, xadj: g.Xadj, adj: g.Adjncy, vw: vw}
	m, cn := fine.match(rng.New(3), ncon, []int32{int32(n)}, nil, 1, nil)
	weighted := fine.contract(m, cn, ncon, 1, &scratch{})
	cases, gained := 0, 0
	for _, l := range []*level{fine, weighted} {
		for _, k := range []int{2, 4, 16} {
			for _, greedy := range []bool{false, true} {
				r := rand.New(rand.NewPCG(uint64(k), uint64(l.n)))
				start := make([]int32, l.n)
				for v := range start {
					start[v] = int32(r.IntN(k))
				}
				var ref []int32
				for _, workers := range []int{1, 4} {
					where := slices.Clone(start)
					rf := newRefiner(k, ncon, []int64{int64(n)}, 1.03, rng.New(7), workers, nil)
					rf.reserve(l.n)
					rf.setLevel(l, where, nil)
					if rf.overloaded() {
						rf.balance()
					}
					if greedy {
						rf.greedyBatch(10)
					}
					before := rf.cut()
					over := rf.overloaded()
					gain := rf.pairFM(1)
					name := func() string {
						return fmt.Sprintf("level of %d vertices, k=%d, greedy %v, workers %d", l.n, k, greedy, workers)
					}
					if gain < 0 || rf.cut() != before-gain || rf.cut() != cutOf(l, where) {
						t.Fatalf("%s: cut %d -> %d (gain %d), from the lists %d", name(), before, rf.cut(), gain, cutOf(l, where))
					}
					if !over && rf.overloaded() {
						t.Fatalf("%s: a part went over its limit", name())
					}
					check := newRefiner(k, ncon, []int64{int64(n)}, 1.03, rng.New(1), 1, nil)
					check.reserve(l.n)
					check.setLevel(l, where, nil)
					if !slices.Equal(rf.id, check.id) || !slices.Equal(rf.ed, check.ed) || !slices.Equal(rf.pw, check.pw) {
						t.Fatalf("%s: degrees or part weights differ from the lists'", name())
					}
					for v := 0; v < l.n; v++ {
						if rf.pst[2*v+1] != 0 {
							t.Fatalf("%s: vertex %d left with flags %b", name(), v, rf.pst[2*v+1])
						}
					}
					if ref == nil {
						ref = where
						cases++
						if gain > 0 {
							gained++
						}
					} else if !slices.Equal(where, ref) {
						t.Fatalf("%s: the partition differs from one worker's", name())
					}
				}
			}
		}
	}
	if gained*2 < cases {
		t.Fatalf("the searches lowered the cut in %d of %d cases", gained, cases)
	}
}

// TestRunPairs checks runPairs' schedule: every task runs once, never at
// the same time as a task on one of its parts, and after every earlier
// task on its parts (so the result is that of running them in order).
func TestRunPairs(t *testing.T) {
	for _, tc := range []struct{ n, k, workers int }{
		{1, 2, 4}, {6, 4, 2}, {40, 8, 4}, {300, 64, 3}, {50, 3, 8},
	} {
		r := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.k)))
		type pr struct{ a, b int32 }
		tasks := make([]pr, tc.n)
		for i := range tasks {
			a := int32(r.IntN(tc.k))
			b := int32(r.IntN(tc.k - 1))
			if b >= a {
				b++
			}
			tasks[i] = pr{min(a, b), max(a, b)}
		}
		busy := make([]atomic.Int32, tc.k)
		var mu sync.Mutex
		lastOn := make([]int, tc.k) // the last task finished on each part
		for p := range lastOn {
			lastOn[p] = -1
		}
		ran := make([]int, tc.n)
		runPairs(tc.n, tc.k, tc.workers, func(i int) (int32, int32) { return tasks[i].a, tasks[i].b }, func(w, i int) {
			a, b := tasks[i].a, tasks[i].b
			if busy[a].Add(1) != 1 || busy[b].Add(1) != 1 {
				t.Errorf("n=%d: task %d started while a task on part %d or %d ran", tc.n, i, a, b)
			}
			mu.Lock()
			for _, p := range []int32{a, b} {
				for j := lastOn[p] + 1; j < i; j++ {
					if tasks[j].a == p || tasks[j].b == p {
						t.Errorf("n=%d: task %d ran before task %d on part %d", tc.n, i, j, p)
					}
				}
			}
			ran[i]++
			lastOn[a], lastOn[b] = i, i
			mu.Unlock()
			busy[a].Add(-1)
			busy[b].Add(-1)
		})
		for i, c := range ran {
			if c != 1 {
				t.Fatalf("n=%d: task %d ran %d times", tc.n, i, c)
			}
		}
	}
}
