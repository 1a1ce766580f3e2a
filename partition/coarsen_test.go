package partition

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graphmill/graphmill/internal/rng"
)

// TestMatch checks matchings on graphs of one block and of several
// (matched inside blocks in parallel, then across), free and keeping a
// partition: the result is an involution, every pair is an edge, shares a
// neighbour or joins two isolated vertices, no pair exceeds the weight
// bound or joins two parts, the coarse count is right, most vertices of a
// connected graph find a partner, and the result is the same on 1, 2 and
// 4 workers.
func TestMatch(t *testing.T) {
	cases := []struct {
		name  string
		e     edgeSet
		maxvw int32
		most  float64 // coarse vertices at most this share of n
	}{
		{"grid-one-block", grid(60, 50), 2, 0.6},
		{"grid-blocks", grid(300, 250), 2, 0.6},
		{"messy-blocks", messy(3*matchBlock+77, 3), 2, 0.65},
		{"star-bound", star(40000), 2, 1},
		{"no-edges-blocks", edgeSet{n: 2*matchBlock + 5}, 2, 0.51},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.e.graph(t)
			n := g.NumNodes()
			vw := make([]int32, n)
			for i := range vw {
				vw[i] = 1
			}
			l := &level{n: n, xadj: g.Xadj, adj: g.Adjncy, vw: vw}
			// Three parts of consecutive vertices, which a V-cycle's
			// matching must keep.
			thirds := make([]int32, n)
			for v := range thirds {
				thirds[v] = int32(3 * v / n)
			}
			for _, part := range [][]int32{nil, thirds} {
				var first []int32
				for _, workers := range []int{1, 2, 4} {
					m, cn := l.match(rng.New(7), 1, []int32{tc.maxvw}, part, workers, &scratch{})
					coarse := 0
					for v := range m {
						u := m[v]
						if u < 0 || int(u) >= n || m[u] != int32(v) {
							t.Fatalf("match[%d] = %d, not an involution", v, u)
						}
						if int(u) >= v {
							coarse++
						}
						if int(u) == v {
							continue
						}
						if vw[u]+vw[v] > tc.maxvw {
							t.Fatalf("pair %d-%d over the weight bound", v, u)
						}
						if part != nil && part[u] != part[v] {
							t.Fatalf("pair %d-%d joins parts %d and %d", v, u, part[v], part[u])
						}
						nv, nu := g.Neighbors(int32(v)), g.Neighbors(u)
						shared := slices.ContainsFunc(nv, func(x int32) bool { return slices.Contains(nu, x) })
						if !slices.Contains(nv, u) && !shared && (len(nv) > 0 || len(nu) > 0) {
							t.Fatalf("pair %d-%d: not neighbours, no shared neighbour, not both isolated", v, u)
						}
					}
					if cn != coarse {
						t.Fatalf("returned %d coarse vertices, counted %d", cn, coarse)
					}
					// Keeping the parts costs at most the pairs across their
					// two boundaries.
					if most := tc.most + 0.02*float64(len(part)/n); float64(cn) > most*float64(n) {
						t.Errorf("%d coarse vertices of %d: the matching pairs too few", cn, n)
					}
					if first == nil {
						first = slices.Clone(m)
					} else if !slices.Equal(first, m) {
						t.Fatalf("%d workers: a different matching than 1 worker", workers)
					}
				}
			}
		})
	}
}

// TestWorkRanges checks that the ranges cover the vertices in order, and
// split dense graphs by adjacency rather than by vertex count.
func TestWorkRanges(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    edgeSet
		per  int64
	}{
		{"grid", grid(300, 200), 4096},
		{"star", star(50000), 4096},
		{"tiny", grid(3, 1), 4096},
		{"many", grid(1000, 1000), 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.e.graph(t)
			l := &level{n: g.NumNodes(), xadj: g.Xadj, adj: g.Adjncy}
			b := l.workRanges(tc.per)
			work := int64(l.n) + int64(len(l.adj))
			want := int(max(1, min(256, work/tc.per)))
			if len(b)-1 != want || b[0] != 0 || b[len(b)-1] != l.n || !slices.IsSorted(b) {
				t.Fatalf("bounds %v (want %d ranges over %d vertices)", b[:min(len(b), 8)], want, l.n)
			}
			// No range holds much more than its share, unless one vertex
			// alone does (the star's hub).
			share := work / int64(want)
			for c := 0; c+1 < len(b); c++ {
				lo, hi := b[c], b[c+1]
				w := int64(hi-lo) + l.xadj[hi] - l.xadj[lo]
				if hi-lo > 1 && w > 2*share+int64(g.Degree(int32(lo)))+1 {
					t.Errorf("range %d [%d,%d) has work %d, share %d", c, lo, hi, w, share)
				}
			}
		})
	}
}

// TestByDegree checks the order of matching's pass across blocks:
// exactly the vertices not yet matched, by nondecreasing capped degree over
// the whole level, in the given order within a degree. (Taking the blocks'
// own orders one after the other instead made a 5M-node graph's cut 1.7x
// gpmetis's: hubs of one block were matched before the leaves of the
// next.)
func TestByDegree(t *testing.T) {
	g := messy(3*matchBlock, 5).graph(t)
	l := &level{n: g.NumNodes(), xadj: g.Xadj, adj: g.Adjncy}
	r := rand.New(rand.NewPCG(1, 2))
	order := make([]int32, l.n)
	for i, v := range r.Perm(l.n) {
		order[i] = int32(v)
	}
	match := make([]int32, l.n)
	want := 0
	for v := range match {
		match[v] = -1
		if r.IntN(3) == 0 {
			match[v] = int32(v)
		} else {
			want++
		}
	}
	dcap := l.degreeCap()
	got := l.byDegree(order, match, dcap, make([]int32, l.n))
	if len(got) != want {
		t.Fatalf("%d vertices, want the %d unmatched", len(got), want)
	}
	pos := make([]int, l.n)
	for i, v := range order {
		pos[v] = i
	}
	deg := func(v int32) int { return min(g.Degree(v), dcap) }
	for i, v := range got {
		if match[v] >= 0 {
			t.Fatalf("matched vertex %d listed", v)
		}
		if i > 0 {
			u := got[i-1]
			if deg(u) > deg(v) || deg(u) == deg(v) && pos[u] > pos[v] {
				t.Fatalf("%d (degree %d, at %d) before %d (degree %d, at %d)", u, deg(u), pos[u], v, deg(v), pos[v])
			}
		}
	}
}

// TestBlockLocal checks the locality estimate that decides whether a level
// is matched block by block: high on a grid numbered row by row, low on
// the same grid numbered at random.
func TestBlockLocal(t *testing.T) {
	e := grid(400, 300)
	l := func(e edgeSet) float64 {
		g := e.graph(t)
		return (&level{n: g.NumNodes(), xadj: g.Xadj, adj: g.Adjncy}).blockLocal(2)
	}
	if f := l(e); f < 0.9 {
		t.Fatalf("row-major grid: %.3f of edges inside blocks", f)
	}
	perm := rand.New(rand.NewPCG(7, 7)).Perm(e.n)
	for i, p := range e.pairs {
		e.pairs[i] = [2]int32{int32(perm[p[0]]), int32(perm[p[1]])}
	}
	if f := l(e); f > localMin/2 {
		t.Fatalf("grid numbered at random: %.3f of edges inside blocks", f)
	}
}

// TestMergeLoops checks that the masked merge loops, in Go and as
// contractRange runs them (maskedUnit, maskedWeighted: assembly on
// amd64), build the same coarse list as the branchy ones (entries in
// order of first sight, weights summed, the merge table pointing at each
// entry) from random lists with repeats, unit and weighted, starting
// empty or from a list in progress, with a merge table whose base is 0
// or past entries left by earlier lists (which must count as absent).
func TestMergeLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const cn = 50
	cmap := make([]int32, 200)
	for i := range cmap {
		cmap[i] = int32(r.IntN(cn))
	}
	for trial := 0; trial < 200; trial++ {
		lists := make([][]int32, 1+r.IntN(2))
		wts := make([][]int32, len(lists))
		total := 0
		// The table as earlier lists left it: -1 or slots below base.
		base := int32(0)
		stale := slices.Repeat([]int32{-1}, cn)
		if trial%2 == 1 {
			base = int32(r.IntN(1 << 30))
			for i := range stale {
				if r.IntN(2) == 0 {
					stale[i] = int32(r.IntN(int(base) + 1))
				}
			}
		}
		for i := range lists {
			lists[i] = make([]int32, r.IntN(40))
			wts[i] = make([]int32, len(lists[i]))
			for j := range lists[i] {
				lists[i][j] = int32(r.IntN(len(cmap)))
				wts[i][j] = int32(1 + r.IntN(9))
			}
			total += len(lists[i])
		}
		for _, weighted := range []bool{false, true} {
			type state struct {
				ht, out, outw []int32
				d             int
			}
			type loops struct {
				unit     func(lst, cmap, ht, out, outw []int32, d int, base int32) int
				weighted func(lst, wts, cmap, ht, out, outw []int32, d int, base int32) int
			}
			run := func(k loops) state {
				s := state{ht: slices.Clone(stale), out: make([]int32, total+1), outw: make([]int32, total+1)}
				for i, lst := range lists {
					if weighted {
						s.d = k.weighted(lst, wts[i], cmap, s.ht, s.out, s.outw, s.d, base)
					} else {
						s.d = k.unit(lst, cmap, s.ht, s.out, s.outw, s.d, base)
					}
				}
				return s
			}
			want := run(loops{mergeUnit, mergeWeighted})
			// The oracle: a map in order of first sight; the table points
			// at each entry and keeps what it held elsewhere.
			var order []int32
			sum := map[int32]int32{}
			for i, lst := range lists {
				for j, a := range lst {
					cu := cmap[a]
					if _, ok := sum[cu]; !ok {
						order = append(order, cu)
					}
					if weighted {
						sum[cu] += wts[i][j]
					} else {
						sum[cu]++
					}
				}
			}
			wantHT := slices.Clone(stale)
			for i, cu := range order {
				wantHT[cu] = base + int32(i)
				if want.out[i] != cu || want.outw[i] != sum[cu] {
					t.Fatalf("trial %d weighted %v: branchy list %v %v, want %v (sums %v)", trial, weighted, want.out[:want.d], want.outw[:want.d], order, sum)
				}
			}
			if want.d != len(order) || !slices.Equal(want.ht, wantHT) {
				t.Fatalf("trial %d weighted %v: branchy list of %d entries (ht %v), want %d (ht %v)", trial, weighted, want.d, want.ht, len(order), wantHT)
			}
			for name, k := range map[string]loops{"masked": {mergeUnitMasked, mergeWeightedMasked}, "kernel": {maskedUnit, maskedWeighted}} {
				got := run(k)
				if got.d != want.d || !slices.Equal(got.out[:got.d], want.out[:want.d]) || !slices.Equal(got.outw[:got.d], want.outw[:want.d]) || !slices.Equal(got.ht, want.ht) {
					t.Fatalf("trial %d weighted %v: %s list %v %v (ht %v), branchy %v %v (ht %v)", trial, weighted, name,
						got.out[:got.d], got.outw[:got.d], got.ht, want.out[:want.d], want.outw[:want.d], want.ht)
				}
				if slices.ContainsFunc(got.outw[got.d:], func(x int32) bool { return x != 0 }) {
					t.Fatalf("trial %d weighted %v: %s loops left weights past the list: %v", trial, weighted, name, got.outw[got.d:])
				}
			}
		}
	}
}

// TestMergeTableRoom checks that a merge table whose base would pass
// MaxInt32 starts over: cleared, base 0; and that short of it nothing
// changes.
func TestMergeTableRoom(t *testing.T) {
	sc := &scratch{}
	mt := sc.table(0, 8)
	if !slices.Equal(mt.ht, slices.Repeat([]int32{-1}, 8)) || mt.base != 0 {
		t.Fatalf("new table %v base %d", mt.ht, mt.base)
	}
	for i := range mt.ht {
		mt.ht[i] = math.MaxInt32 - 20 + int32(i)
	}
	if b := mt.room(math.MaxInt32-12, 11); b != math.MaxInt32-12 || mt.ht[0] != math.MaxInt32-20 {
		t.Fatalf("room short of MaxInt32: base %d, table %v", b, mt.ht)
	}
	if b := mt.room(math.MaxInt32-12, 12); b != 0 || !slices.Equal(mt.ht, slices.Repeat([]int32{-1}, 8)) {
		t.Fatalf("room past MaxInt32: base %d, table %v", b, mt.ht)
	}
}

// TestHeaviestFast checks matcher.heaviestFast (assembly on amd64)
// against heaviest on random weighted lists: neighbours inside and
// outside [lo, hi), matched or not, of weights that fit or not (zero
// weights among them), ties of rating included.
func TestHeaviestFast(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 300; trial++ {
		n := 2 + r.IntN(60)
		l := &level{n: n, xadj: make([]int64, n+1), vw: make([]int32, n)}
		for v := 0; v < n; v++ {
			deg := r.IntN(12)
			if trial%10 == 0 {
				deg = 0
			}
			for j := 0; j < deg; j++ {
				l.adj = append(l.adj, int32(r.IntN(n)))
				l.ew = append(l.ew, int32(r.IntN(5))) // repeats make ties
			}
			l.xadj[v+1] = int64(len(l.adj))
			l.vw[v] = int32(r.IntN(6)) // 0 rates as 1
		}
		match := make([]int32, n)
		for v := range match {
			match[v] = -1
			if r.IntN(3) == 0 {
				match[v] = int32(r.IntN(n))
			}
		}
		m := matcher{l: l, ncon: 1, maxvw: []int32{int32(2 + r.IntN(8))}, match: match}
		lo := int32(r.IntN(n))
		hi := lo + int32(r.IntN(n-int(lo)+1))
		if trial%3 == 0 {
			lo, hi = 0, int32(n)
		}
		for v := int32(0); v < int32(n); v++ {
			if got, want := m.heaviestFast(v, lo, hi), m.heaviest(v, lo, hi); got != want {
				t.Fatalf("trial %d vertex %d, range [%d, %d): heaviestFast %d, heaviest %d (list %v weights %v, vw %v, match %v, maxvw %d)",
					trial, v, lo, hi, got, want, l.adj[l.xadj[v]:l.xadj[v+1]], l.ew[l.xadj[v]:l.xadj[v+1]], l.vw, match, m.maxvw[0])
			}
		}
	}
}
