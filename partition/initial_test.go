package partition

import (
	"context"
	"testing"
)

// TestMLBisectUnderBudget bisects a grid with mlBisect's memory budget
// down to twice its input's size, so that coarse levels are dropped once
// built and projected through instead of refined: the sides must still
// stay within the tolerance and cut the grid about as well as with every
// level kept (a 60 x 40 grid's best bisection cuts 40 edges).
func TestMLBisectUnderBudget(t *testing.T) {
	g := grid(60, 40).graph(t)
	n := g.NumNodes()
	vw, ncon := vertexWeights(n, nil, nil)
	input := func() *level { return &level{n: n, xadj: g.Xadj, adj: g.Adjncy, vw: vw} }

	// The budget bites on this grid: coarsening as mlBisect does at the
	// ratio's budget alone, some level is dropped.
	old := mlBisectBudget
	mlBisectBudget = 0
	cs := bisectCoarsening(input(), ncon, 1, 1, &scratch{})
	mlBisectBudget = old
	levels, _, err := cs.coarsen(context.Background(), input(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for _, c := range levels {
		if c.xadj == nil {
			dropped++
		}
	}
	if dropped == 0 {
		t.Fatalf("no level of %d dropped at twice the input's bytes: the test does not reach the projection", len(levels))
	}

	bisectWith := func(budget int64) int64 {
		old := mlBisectBudget
		mlBisectBudget = budget
		defer func() { mlBisectBudget = old }()
		l := input()
		side := mlBisect(l, ncon, 0.5, 1.03, 4, 1, 1, &scratch{})
		var w [2]int
		where := make([]int32, n)
		for v, s := range side {
			w[s]++
			where[v] = int32(s)
		}
		if float64(max(w[0], w[1])) > 1.03*float64(n)/2+1 {
			t.Errorf("budget %d: sides of %d and %d vertices", budget, w[0], w[1])
		}
		return cutOf(l, where)
	}
	full := bisectWith(1 << 40)
	tight := bisectWith(0) // the ratio's budget alone
	if full > 60 {
		t.Errorf("every level kept: cut %d, want at most 60", full)
	}
	if tight > full+full/2 {
		t.Errorf("%d levels dropped: cut %d against %d with every level kept", dropped, tight, full)
	}
	t.Logf("cut %d with every level kept, %d with %d of %d levels dropped", full, tight, dropped, len(levels))
}
