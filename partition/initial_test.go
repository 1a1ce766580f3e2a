package partition

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/synth"
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

// TestOwnArenasSamePartition partitions a graph of 16 planted communities
// into 4 parts, where the initial partitions are the best of 4 runs on a
// dense level: with the runs in arenas of their own (ownArenaMin 0), the
// bisections giving back their temporaries as they go, on one worker (its
// arena reused run after run) and on two (side by side), the partition
// must be the one the shared arena gives.
func TestOwnArenasSamePartition(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and partitions a 100k-node graph three times")
	}
	dir := t.TempDir()
	if _, err := synth.Generate(context.Background(), dir, synth.Config{Name: "planted", Nodes: 100_000, Edges: 500_000, Classes: 16, Seed: 2}, true); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	g, err := FromCSC(context.Background(), d.Graph, 0)
	if err != nil {
		t.Fatal(err)
	}
	part := func(min int64, workers int) *Result {
		old := ownArenaMin
		ownArenaMin = min
		defer func() { ownArenaMin = old }()
		res, err := Partition(context.Background(), g, Options{Parts: 4, Seed: 3, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	want := part(math.MaxInt64, 2)
	if !want.Phases.InitialDense || want.Phases.InitialRuns != 4 {
		t.Fatalf("initial partitions: dense %v, %d runs; want the best of 4 on a dense level", want.Phases.InitialDense, want.Phases.InitialRuns)
	}
	for _, workers := range []int{1, 2} {
		if got := part(0, workers); !slices.Equal(got.Parts, want.Parts) {
			t.Errorf("%d workers, runs in arenas of their own: the partition differs (cut %d against %d)", workers, got.Stats.EdgeCut, want.Stats.EdgeCut)
		}
	}
}

// TestRunsAtOnce: initial runs go side by side as far as the memory the
// process may take holds them, one after another where it holds one or
// less, and without asking where they are small or the room is unknown.
func TestRunsAtOnce(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		name        string
		most        int
		perRun      int64
		room        int64
		known, asks bool
		want        int
	}{
		{"one run", 1, 1 << 30, 0, true, false, 1},
		{"small runs", 4, 8 * mb, 0, true, false, 4},
		{"room for all", 2, 400 * mb, 4000 * mb, true, true, 2},
		{"room for two of four", 4, 400 * mb, 1000 * mb, true, true, 2},
		{"room for one", 2, 400 * mb, 500 * mb, true, true, 1},
		{"no room", 2, 400 * mb, 0, true, true, 1},
		{"room unknown", 2, 400 * mb, 0, false, true, 2},
	} {
		asked := false
		got := runsAtOnce(c.most, c.perRun, func() (int64, bool) { asked = true; return c.room, c.known })
		if got != c.want || asked != c.asks {
			t.Errorf("%s: %d runs at once (asked for the room: %v), want %d (%v)", c.name, got, asked, c.want, c.asks)
		}
	}
}
