package graph

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

type refEdge struct {
	s, d int32
	w    float32
	id   int64
}

// reference builds the expected CSC naively, to compare with Build.
func reference(n int, src, dst []int32, weights []float32, o BuildOptions) *CSC {
	var es []refEdge
	e := len(src)
	add := func(s, d int32, k int) {
		if o.SelfLoops != KeepSelfLoops && s == d {
			return
		}
		w := float32(0)
		if weights != nil {
			w = weights[k%e]
		}
		es = append(es, refEdge{s, d, w, int64(k)})
	}
	for k := range src {
		add(src[k], dst[k], k)
	}
	if o.Symmetrize {
		for k := range src {
			if src[k] != dst[k] { // a self-loop is its own reverse
				add(dst[k], src[k], k+e)
			}
		}
	}
	if o.SelfLoops == AddSelfLoops {
		for v := 0; v < n; v++ {
			es = append(es, refEdge{int32(v), int32(v), 1, -1})
		}
	}
	// Sort by (dst, src, input id): added loops (id -1) come first, and
	// they never collide with input loops, which AddSelfLoops drops.
	slices.SortStableFunc(es, func(a, b refEdge) int {
		if a.d != b.d {
			return int(a.d - b.d)
		}
		if a.s != b.s {
			return int(a.s - b.s)
		}
		return int(a.id - b.id)
	})
	g := &CSC{NumNodes: n, Indptr: make([]int64, n+1)}
	for i, x := range es {
		if o.Dedup && i > 0 && es[i-1].s == x.s && es[i-1].d == x.d {
			continue
		}
		g.Indices = append(g.Indices, x.s)
		g.Weights = append(g.Weights, x.w)
		g.EdgeIDs = append(g.EdgeIDs, x.id)
		g.Indptr[x.d+1]++
	}
	for v := 0; v < n; v++ {
		g.Indptr[v+1] += g.Indptr[v]
	}
	if g.Indices == nil {
		g.Indices = []int32{}
	}
	return g
}

func randomEdges(r *rand.Rand, n, m int) (src, dst []int32, w []float32) {
	w = []float32{}
	for i := 0; i < m; i++ {
		src = append(src, int32(r.IntN(n)))
		dst = append(dst, int32(r.IntN(n)))
		w = append(w, float32(i))
	}
	return
}

// TestBuildMatchesReference compares every option with a sort-based
// reference, with the scatter's slots absolute (the usual case) and
// relative to Indptr (graphs of more than 4G positions).
func TestBuildMatchesReference(t *testing.T) {
	defer func(v int64) { absoluteSlots = v }(absoluteSlots)
	for _, slots := range []int64{math.MaxUint32, 0} {
		absoluteSlots = slots
		buildMatchesReference(t)
	}
}

func buildMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []struct{ n, m int }{{1, 3}, {5, 40}, {50, 400}, {300, 2000}, {7, 0}} {
		src, dst, w := randomEdges(r, size.n, size.m)
		for _, sym := range []bool{false, true} {
			for _, dedup := range []bool{false, true} {
				for _, loops := range []SelfLoopPolicy{KeepSelfLoops, RemoveSelfLoops, AddSelfLoops} {
					for _, withW := range []bool{false, true} {
						for _, workers := range []int{1, 2, 3} {
							o := BuildOptions{Symmetrize: sym, Dedup: dedup, SelfLoops: loops, EdgeIDs: withW, Workers: workers}
							name := fmt.Sprintf("n%d/m%d/%+v/w=%v", size.n, size.m, o, withW)
							var ws []float32
							if withW {
								ws = w
							}
							g, err := Build(context.Background(), size.n, src, dst, ws, o)
							if err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							if err := g.Validate(); err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							want := reference(size.n, src, dst, ws, o)
							if !reflect.DeepEqual(g.Indptr, want.Indptr) || !slices.Equal(g.Indices, want.Indices) {
								t.Fatalf("%s: structure differs\n got %v %v\nwant %v %v", name, g.Indptr, g.Indices, want.Indptr, want.Indices)
							}
							if withW {
								if !slices.Equal(g.Weights, want.Weights) || !slices.Equal(g.EdgeIDs, want.EdgeIDs) {
									t.Fatalf("%s: payload differs\n got %v %v\nwant %v %v", name, g.Weights, g.EdgeIDs, want.Weights, want.EdgeIDs)
								}
							} else if g.Weights != nil || g.EdgeIDs != nil {
								t.Fatalf("%s: unexpected payload", name)
							}
						}
					}
				}
			}
		}
	}
}

func TestBuildRejectsBadIDs(t *testing.T) {
	cases := []struct {
		name     string
		n        int
		src, dst []int32
		w        []float32
		want     string
	}{
		{"negative", 3, []int32{0, -1}, []int32{1, 2}, nil, "edge 1 (-1 -> 2)"},
		{"too large", 3, []int32{0, 1}, []int32{1, 3}, nil, "edge 1 (1 -> 3)"},
		{"length", 3, []int32{0}, []int32{1, 2}, nil, "1 sources but 2 destinations"},
		{"weights", 3, []int32{0}, []int32{1}, []float32{1, 2}, "2 weights for 1 edges"},
		{"nodes", -1, nil, nil, nil, "outside"},
	}
	for _, c := range cases {
		_, err := Build(context.Background(), c.n, c.src, c.dst, c.w, BuildOptions{Workers: 2})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want error containing %q", c.name, err, c.want)
		}
	}
}

func TestBuildCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src, dst, _ := randomEdges(rand.New(rand.NewPCG(1, 1)), 100, 1000)
	if _, err := Build(ctx, 100, src, dst, nil, BuildOptions{}); err == nil {
		t.Fatal("cancelled build succeeded")
	}
}

func TestReverse(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	src, dst, w := randomEdges(r, 200, 3000)
	for _, workers := range []int{1, 2, 5} {
		g, _ := Build(context.Background(), 200, src, dst, w, BuildOptions{EdgeIDs: true})
		rev := g.Reverse(workers)
		want, _ := Build(context.Background(), 200, dst, src, w, BuildOptions{EdgeIDs: true})
		if !reflect.DeepEqual(rev, want) {
			t.Fatalf("workers=%d: reverse differs from building the reversed edge list", workers)
		}
		if !reflect.DeepEqual(rev.Reverse(workers), g) {
			t.Fatalf("workers=%d: reverse twice is not the identity", workers)
		}
		if !slices.Equal(rev.InDegrees(), g.OutDegrees()) {
			t.Fatal("in-degrees of the reverse differ from out-degrees")
		}
	}
}

func TestValidate(t *testing.T) {
	good := func() *CSC {
		return &CSC{NumNodes: 2, Indptr: []int64{0, 1, 2}, Indices: []int32{1, 0}}
	}
	cases := []struct {
		name string
		mod  func(*CSC)
		want string
	}{
		{"ok", func(*CSC) {}, ""},
		{"start", func(g *CSC) { g.Indptr[0] = 1 }, "indptr[0]"},
		{"decrease", func(g *CSC) { g.Indptr[1] = 3 }, "decreases"},
		{"end", func(g *CSC) { g.Indptr[2] = 1; g.Indptr[1] = 1 }, "ends at"},
		{"range", func(g *CSC) { g.Indices[1] = 2 }, "indices[1] = 2"},
		{"len", func(g *CSC) { g.Indptr = g.Indptr[:2] }, "num_nodes+1"},
		{"weights", func(g *CSC) { g.Weights = []float32{1} }, "1 weights"},
	}
	for _, c := range cases {
		g := good()
		c.mod(g)
		err := g.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestStats(t *testing.T) {
	s := Stats([]int32{3, 0, 1, 7, 1})
	if s.Min != 0 || s.Max != 7 || s.Median != 1 || s.Zero != 1 || s.Mean != 12.0/5 {
		t.Fatalf("got %+v", s)
	}
}

// BenchmarkBuild measures the builder on a 50M-edge random graph (the
// throughput the README reports); -benchtime=1x keeps it to one build.
func BenchmarkBuild(b *testing.B) {
	for _, c := range []struct {
		name string
		n, m int
		o    BuildOptions
	}{
		{"5M-nodes-50M-edges", 5_000_000, 50_000_000, BuildOptions{}},
		{"5M-nodes-50M-edges-sym-dedup", 5_000_000, 50_000_000, BuildOptions{Symmetrize: true, Dedup: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			src := make([]int32, c.m)
			dst := make([]int32, c.m)
			for i := range src {
				src[i], dst[i] = int32(r.IntN(c.n)), int32(r.IntN(c.n))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Build(context.Background(), c.n, src, dst, nil, c.o); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.m)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Medges/s")
		})
	}
}

// TestSymmetrizeKeepsSelfLoopsOnce: the reverse of a self-loop is the same
// edge; symmetrizing without Dedup stored it twice (doubling its weight in
// GCN's degree normalisation).
func TestSymmetrizeKeepsSelfLoopsOnce(t *testing.T) {
	g, err := Build(context.Background(), 2, []int32{0, 1}, []int32{1, 1}, nil, BuildOptions{Symmetrize: true, SelfLoops: KeepSelfLoops})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.InNeighbors(1); g.NumEdges() != 3 || !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("%d edges, node 1's in-neighbours %v; want 3 and [0 1]", g.NumEdges(), got)
	}
}
