package sample

import (
	"context"
	"fmt"
	"github.com/graphmill/graphmill/batch"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/racedetect"
	"github.com/graphmill/graphmill/internal/rng"
)

// randomGraph builds a graph of n nodes whose in-degrees are skewed
// (a few nodes of degree up to ~n/3, many of degree 0-5), with weights.
func randomGraph(t testing.TB, n int, seed uint64, opts graph.BuildOptions) (*graph.CSC, []int32, []int32) {
	t.Helper()
	r := rng.New(seed)
	var src, dst []int32
	var w []float32
	for v := 0; v < n; v++ {
		d := int(3 / (r.Float64() + 0.01)) // heavy-tailed, up to ~300
		if v%97 == 0 {
			d = r.IntN(n / 3)
		}
		d = min(d, n-1)
		for j := 0; j < d; j++ {
			src = append(src, int32(r.IntN(n)))
			dst = append(dst, int32(v))
			w = append(w, float32(r.IntN(4))) // includes zero weights
		}
	}
	opts.Dedup = true
	g, err := graph.Build(context.Background(), n, src, dst, w, opts)
	if err != nil {
		t.Fatal(err)
	}
	return g, src, dst
}

func cora(t testing.TB) *graph.CSC {
	t.Helper()
	d, err := builtin.Open(context.Background(), "cora")
	if err != nil {
		t.Skipf("cora unavailable: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d.Graph
}

// checkMiniBatch checks every invariant of a minibatch against the graph
// and the configuration.
func checkMiniBatch(t *testing.T, g *graph.CSC, cfg Config, seeds []int32, mb *batch.MiniBatch) {
	t.Helper()
	L := len(cfg.Fanouts)
	if len(mb.Blocks) != L {
		t.Fatalf("%d blocks, want %d", len(mb.Blocks), L)
	}
	if !slices.Equal(seeds32(mb), seeds) {
		t.Fatalf("Seeds = %v, want %v", mb.Seeds, seeds)
	}
	if err := mb.Validate(int64(g.NumNodes)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dstNodes(mb, mb.Blocks[L-1]), seeds) {
		t.Fatalf("last block's dst nodes are not the seeds")
	}
	if mb.Blocks[0].NumSrc != len(mb.InputNodes) {
		t.Fatalf("block 0 has %d sources for %d input nodes", mb.Blocks[0].NumSrc, len(mb.InputNodes))
	}
	seen := map[int64]bool{}
	for _, v := range mb.InputNodes {
		if seen[v] {
			t.Fatalf("node %d appears twice in InputNodes", v)
		}
		seen[v] = true
	}
	for li, b := range mb.Blocks {
		hop := L - 1 - li
		k := cfg.Fanouts[hop]
		if li+1 < L && !slices.Equal(srcNodes(mb, mb.Blocks[li+1]), dstNodes(mb, b)) {
			t.Fatalf("block %d: next block's src nodes != this block's dst nodes", li)
		}
		if b.NumDst > b.NumSrc {
			t.Fatalf("block %d: %d dst > %d src", li, b.NumDst, b.NumSrc)
		}
		if len(b.Indptr) != b.NumDst+1 || b.Indptr[0] != 0 || b.Indptr[b.NumDst] != int64(len(b.Indices)) || len(b.EdgeIDs) != len(b.Indices) {
			t.Fatalf("block %d: malformed (indptr %d for %d dst, %d indices, %d eids)", li, len(b.Indptr), b.NumDst, len(b.Indices), len(b.EdgeIDs))
		}
		reached := make([]bool, b.NumSrc)
		for i := 0; i < b.NumDst; i++ {
			v := srcNodes(mb, b)[i]
			lo, hi := b.Indptr[i], b.Indptr[i+1]
			if hi < lo {
				t.Fatalf("block %d: indptr decreases at %d", li, i)
			}
			deg := int(g.Indptr[v+1] - g.Indptr[v])
			cnt := int(hi - lo)
			positive := deg
			if cfg.Weighted {
				positive = 0
				for _, w := range g.Weights[g.Indptr[v]:g.Indptr[v+1]] {
					if w > 0 {
						positive++
					}
				}
			}
			switch {
			case k < 0:
				if cnt != deg {
					t.Fatalf("block %d node %d: %d edges with fanout -1, degree %d", li, v, cnt, deg)
				}
			case cfg.Replace:
				want := k
				if positive == 0 {
					want = 0
				}
				if cnt != want {
					t.Fatalf("block %d node %d: %d edges with replacement, want %d", li, v, cnt, want)
				}
			default:
				if cnt != min(k, positive) {
					t.Fatalf("block %d node %d: %d edges, want min(fanout %d, eligible degree %d)", li, v, cnt, k, positive)
				}
			}
			pos := map[int64]bool{}
			for e := lo; e < hi; e++ {
				l := b.Indices[e]
				if l < 0 || int(l) >= b.NumSrc {
					t.Fatalf("block %d: local index %d out of [0,%d)", li, l, b.NumSrc)
				}
				reached[l] = true
				p := b.EdgeIDs[e]
				if p < g.Indptr[v] || p >= g.Indptr[v+1] {
					t.Fatalf("block %d: edge position %d is not an in-edge of %d", li, p, v)
				}
				if g.Indices[p] != srcNodes(mb, b)[l] {
					t.Fatalf("block %d: edge %d has source %d, graph says %d", li, p, srcNodes(mb, b)[l], g.Indices[p])
				}
				if cfg.Weighted && k >= 0 && g.Weights[p] == 0 {
					t.Fatalf("block %d: drew edge %d of weight 0", li, p)
				}
				if !cfg.Replace && pos[p] {
					t.Fatalf("block %d node %d: edge %d drawn twice without replacement", li, v, p)
				}
				pos[p] = true
			}
		}
		for l := b.NumDst; l < b.NumSrc; l++ {
			if !reached[l] {
				t.Fatalf("block %d: source %d (node %d) is not the source of any edge", li, l, srcNodes(mb, b)[l])
			}
		}
	}
}

func TestSampleInvariants(t *testing.T) {
	g, _, _ := randomGraph(t, 3000, 1, graph.BuildOptions{})
	graphs := []struct {
		name string
		g    *graph.CSC
	}{{"random", g}, {"cora", cora(t)}}
	cfgs := []Config{
		{Fanouts: []int{25, 10}},
		{Fanouts: []int{15, 10, 5}},
		{Fanouts: []int{-1, 3}},
		{Fanouts: []int{200}},
		{Fanouts: []int{5, 5}, Replace: true},
		{Fanouts: []int{10, 4}, Weighted: true},
		{Fanouts: []int{10, -1}, Weighted: true, Replace: true},
		{Fanouts: []int{25, 10}, Relabel: RelabelDense},
		{Fanouts: []int{25, 10}, Relabel: RelabelHash},
		{Fanouts: []int{15, 10, 5}, Relabel: RelabelHash},
	}
	for _, gg := range graphs {
		for _, cfg := range cfgs {
			name := fmt.Sprintf("%s/%s/replace=%v/weighted=%v/%v", gg.name, FormatFanouts(cfg.Fanouts), cfg.Replace, cfg.Weighted, cfg.Relabel)
			t.Run(name, func(t *testing.T) {
				if cfg.Weighted && gg.g.Weights == nil {
					if _, err := New(gg.g, cfg); err == nil {
						t.Fatal("weighted sampler on a graph without weights: no error")
					}
					return
				}
				s, err := New(gg.g, cfg)
				if err != nil {
					t.Fatal(err)
				}
				all := make([]int32, gg.g.NumNodes)
				for i := range all {
					all[i] = int32(i)
				}
				batches, _ := Batches(all, 128, true, 7, false)
				mb := &batch.MiniBatch{}
				for i, seeds := range batches[:min(len(batches), 6)] {
					if err := s.SampleInto(mb, seeds, uint64(i)); err != nil {
						t.Fatal(err)
					}
					checkMiniBatch(t, gg.g, cfg, seeds, mb)
				}
			})
		}
	}
}

// chiSquared returns the statistic of observed counts against expected.
func chiSquared(obs []float64, exp []float64) float64 {
	x := 0.0
	for i := range obs {
		d := obs[i] - exp[i]
		x += d * d / exp[i]
	}
	return x
}

// chiCritical approximates the 0.999 quantile of chi-squared with df
// degrees of freedom (Wilson-Hilferty).
func chiCritical(df int) float64 {
	const z = 3.09 // 0.999 normal quantile
	k := float64(df)
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * c * c * c
}

// star returns a graph where node 0 has in-neighbours 1..deg with the
// given weights (nil for none).
func star(t *testing.T, deg int, w []float32) *graph.CSC {
	src := make([]int32, deg)
	dst := make([]int32, deg)
	for i := range src {
		src[i] = int32(i + 1)
	}
	g, err := graph.Build(context.Background(), deg+1, src, dst, w, graph.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestUniformChiSquared(t *testing.T) {
	for _, tc := range []struct {
		deg, k  int
		replace bool
	}{
		{50, 5, false},  // register-mask path
		{300, 7, false}, // bitset path
		{60, 59, false}, // nearly all
		{40, 5, true},
	} {
		t.Run(fmt.Sprintf("deg%d_k%d_replace%v", tc.deg, tc.k, tc.replace), func(t *testing.T) {
			g := star(t, tc.deg, nil)
			s, err := New(g, Config{Fanouts: []int{tc.k}, Replace: tc.replace})
			if err != nil {
				t.Fatal(err)
			}
			trials := 20000
			obs := make([]float64, tc.deg)
			mb := &batch.MiniBatch{}
			for i := 0; i < trials; i++ {
				if err := s.SampleInto(mb, []int32{0}, uint64(i)); err != nil {
					t.Fatal(err)
				}
				b := mb.Blocks[0]
				for _, l := range b.Indices {
					obs[srcNodes(mb, b)[l]-1]++
				}
			}
			exp := make([]float64, tc.deg)
			for i := range exp {
				exp[i] = float64(trials*tc.k) / float64(tc.deg)
			}
			x, crit := chiSquared(obs, exp), chiCritical(tc.deg-1)
			if tc.k == tc.deg-1 {
				// Counts are trials - (times left out): test the left-outs.
				for i := range obs {
					obs[i] = float64(trials) - obs[i]
					exp[i] = float64(trials) / float64(tc.deg)
				}
				x = chiSquared(obs, exp)
			}
			if x > crit {
				t.Fatalf("chi-squared %.1f > %.1f (df %d): not uniform", x, crit, tc.deg-1)
			}
		})
	}
}

func TestWeightedProportional(t *testing.T) {
	w := []float32{1, 2, 3, 4, 0, 5, 6, 7, 8, 0.5}
	g := star(t, len(w), w)
	total := 0.0
	for _, x := range w {
		total += float64(x)
	}
	for _, replace := range []bool{true, false} {
		t.Run(fmt.Sprintf("replace=%v", replace), func(t *testing.T) {
			k := 1
			if replace {
				k = 20
			}
			s, err := New(g, Config{Fanouts: []int{k}, Weighted: true, Replace: replace})
			if err != nil {
				t.Fatal(err)
			}
			trials := 20000
			obs := make([]float64, len(w))
			mb := &batch.MiniBatch{}
			for i := 0; i < trials; i++ {
				if err := s.SampleInto(mb, []int32{0}, uint64(i)); err != nil {
					t.Fatal(err)
				}
				for _, p := range mb.Blocks[0].EdgeIDs {
					obs[p]++
				}
			}
			var o, e []float64
			for i, x := range w {
				if x == 0 {
					if obs[i] != 0 {
						t.Fatalf("edge %d of weight 0 drawn %v times", i, obs[i])
					}
					continue
				}
				o = append(o, obs[i])
				e = append(e, float64(trials*k)*float64(x)/total)
			}
			if x, crit := chiSquared(o, e), chiCritical(len(o)-1); x > crit {
				t.Fatalf("chi-squared %.1f > %.1f: not proportional to weights (obs %v)", x, crit, obs)
			}
		})
	}
}

// TestWeightedWithoutReplacementSecondDraw checks the Efraimidis-Spirakis
// law on two draws: P(first a, then b) = w_a/W * w_b/(W-w_a), so the
// probability that an edge is in a 2-subset is computable exactly.
func TestWeightedWithoutReplacementInclusion(t *testing.T) {
	w := []float32{1, 2, 3, 4}
	g := star(t, len(w), w)
	s, err := New(g, Config{Fanouts: []int{2}, Weighted: true})
	if err != nil {
		t.Fatal(err)
	}
	W := 10.0
	exp := make([]float64, 4)
	for a := range w {
		for b := range w {
			if a != b {
				p := float64(w[a]) / W * float64(w[b]) / (W - float64(w[a]))
				exp[a] += p
				exp[b] += p
			}
		}
	}
	trials := 20000
	obs := make([]float64, 4)
	mb := &batch.MiniBatch{}
	for i := 0; i < trials; i++ {
		if err := s.SampleInto(mb, []int32{0}, uint64(i)); err != nil {
			t.Fatal(err)
		}
		for _, p := range mb.Blocks[0].EdgeIDs {
			obs[p]++
		}
	}
	for i := range exp {
		exp[i] *= float64(trials)
	}
	if x, crit := chiSquared(obs, exp), chiCritical(3); x > crit {
		t.Fatalf("chi-squared %.1f > %.1f: inclusion %v, expected %v", x, crit, obs, exp)
	}
}

func TestDeterministicAcrossWorkers(t *testing.T) {
	g, _, _ := randomGraph(t, 5000, 2, graph.BuildOptions{})
	all := make([]int32, g.NumNodes)
	for i := range all {
		all[i] = int32(i)
	}
	batches, _ := Batches(all, 100, true, 3, false)
	run := func(workers int, relabel Relabel) []*batch.MiniBatch {
		s, err := New(g, Config{Fanouts: []int{10, 5}, Relabel: relabel})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]*batch.MiniBatch, len(batches))
		var wg sync.WaitGroup
		next := make(chan int)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					mb, err := s.Sample(batches[i], rng.Derive(99, uint64(i)))
					if err != nil {
						t.Error(err)
						return
					}
					out[i] = mb
				}
			}()
		}
		for i := range batches {
			next <- i
		}
		close(next)
		wg.Wait()
		return out
	}
	for _, relabel := range []Relabel{RelabelHash, RelabelDense} {
		ref := run(1, relabel)
		for _, workers := range []int{2, 4} {
			got := run(workers, relabel)
			for i := range ref {
				if !reflect.DeepEqual(ref[i].Blocks, got[i].Blocks) {
					t.Fatalf("%d workers, %v relabel: batch %d differs from 1 worker", workers, relabel, i)
				}
			}
		}
	}
	ref := run(1, RelabelHash)
	// A different seed gives a different minibatch.
	s, _ := New(g, Config{Fanouts: []int{10, 5}})
	other, _ := s.Sample(batches[0], 12345)
	if reflect.DeepEqual(other.Blocks, ref[0].Blocks) {
		t.Fatal("different seeds gave the same minibatch")
	}
}

func TestExclusion(t *testing.T) {
	g, _, _ := randomGraph(t, 2000, 4, graph.BuildOptions{})
	s, err := New(g, Config{Fanouts: []int{-1, 5}})
	if err != nil {
		t.Fatal(err)
	}
	seeds := []int32{0, 97, 194, 5}
	// Exclude every other in-edge of the seeds, and one whole list.
	excluded := map[int64]bool{}
	var ex []int64
	for i, v := range seeds {
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			if i == 3 || p%2 == 0 {
				excluded[p] = true
				ex = append(ex, p)
			}
		}
	}
	mb := &batch.MiniBatch{}
	if err := s.SampleExcluding(mb, seeds, 1, ex); err != nil {
		t.Fatal(err)
	}
	b := mb.Blocks[1]
	for i, v := range seeds {
		want := 0
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			if !excluded[p] {
				want++
			}
		}
		if got := int(b.Indptr[i+1] - b.Indptr[i]); got != want {
			t.Fatalf("seed %d: %d edges, want the %d not excluded", v, got, want)
		}
	}
	for _, blk := range mb.Blocks {
		for _, p := range blk.EdgeIDs {
			if excluded[p] {
				t.Fatalf("excluded edge %d was sampled", p)
			}
		}
	}
	if err := s.SampleExcluding(mb, seeds, 1, []int64{g.NumEdges()}); err == nil {
		t.Fatal("out-of-range excluded edge: no error")
	}
}

func TestEdgeIDs(t *testing.T) {
	g, src, dst := randomGraph(t, 1500, 5, graph.BuildOptions{EdgeIDs: true, Symmetrize: true})
	s, err := New(g, Config{Fanouts: []int{6, 3}})
	if err != nil {
		t.Fatal(err)
	}
	seeds := []int32{1, 2, 3, 500, 1000}
	mb, err := s.Sample(seeds, 3)
	if err != nil {
		t.Fatal(err)
	}
	e := int64(len(src))
	var drawn []int64
	for _, b := range mb.Blocks {
		for i := 0; i < b.NumDst; i++ {
			for q := b.Indptr[i]; q < b.Indptr[i+1]; q++ {
				id := b.EdgeIDs[q]
				s, d := src[id%e], dst[id%e]
				if id >= e {
					s, d = d, s
				}
				if s != srcNodes(mb, b)[b.Indices[q]] || d != srcNodes(mb, b)[i] {
					t.Fatalf("edge id %d is %d->%d, block says %d->%d", id, s, d, srcNodes(mb, b)[b.Indices[q]], srcNodes(mb, b)[i])
				}
				drawn = append(drawn, id)
			}
		}
	}
	// Excluding by edge id removes those edges.
	if err := s.SampleExcluding(mb, seeds, 3, drawn); err != nil {
		t.Fatal(err)
	}
	for _, b := range mb.Blocks {
		for _, id := range b.EdgeIDs {
			if slices.Contains(drawn, id) {
				t.Fatalf("excluded edge id %d drawn", id)
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	g, _, _ := randomGraph(t, 100, 6, graph.BuildOptions{})
	noW := star(t, 5, nil)
	for _, tc := range []struct {
		name  string
		g     *graph.CSC
		cfg   Config
		seeds []int32
		want  string
	}{
		{"no fanouts", g, Config{}, []int32{1}, "no fanouts"},
		{"fanout 0", g, Config{Fanouts: []int{10, 0}}, []int32{1}, "fanout 0"},
		{"fanout -2", g, Config{Fanouts: []int{-2}}, []int32{1}, "fanout -2"},
		{"weighted without weights", noW, Config{Fanouts: []int{2}, Weighted: true}, []int32{0}, "no"},
		{"nil graph", nil, Config{Fanouts: []int{2}}, []int32{0}, "nil graph"},
		{"empty seeds", g, Config{Fanouts: []int{2}}, []int32{}, "empty seed"},
		{"seed too large", g, Config{Fanouts: []int{2}}, []int32{1, 100}, "not a node"},
		{"negative seed", g, Config{Fanouts: []int{2}}, []int32{-1}, "not a node"},
		{"duplicate seed", g, Config{Fanouts: []int{2}}, []int32{3, 4, 3}, "more than once"},
		{"duplicate seed dense", g, Config{Fanouts: []int{2}, Relabel: RelabelDense}, []int32{3, 3}, "more than once"},
		{"bad weights", star(t, 3, []float32{1, float32(math.NaN()), 2}), Config{Fanouts: []int{2}, Weighted: true}, []int32{0}, "NaN"},
		{"negative weight", star(t, 3, []float32{1, -1, 2}), Config{Fanouts: []int{2}, Weighted: true}, []int32{0}, "-1"},
		{"huge fanout with replacement", g, Config{Fanouts: []int{2, 1 << 40}, Replace: true}, []int32{0}, "with replacement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.g, tc.cfg)
			if err == nil {
				_, err = s.Sample(tc.seeds, 1)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	// After an error, the sampler still works (scratch state was reset).
	s, _ := New(g, Config{Fanouts: []int{3}})
	_, _ = s.Sample([]int32{5, 5}, 1)
	mb, err := s.Sample([]int32{5, 6}, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkMiniBatch(t, g, Config{Fanouts: []int{3}}, []int32{5, 6}, mb)
}

func TestSteadyStateDoesNotAllocate(t *testing.T) {
	if testing.Short() || racedetect.Enabled {
		t.Skip("allocation counting (sync.Pool drops items under -race)")
	}
	g, _, _ := randomGraph(t, 3000, 8, graph.BuildOptions{})
	s, _ := New(g, Config{Fanouts: []int{10, 5}})
	all := make([]int32, 3000)
	for i := range all {
		all[i] = int32(i)
	}
	batches, _ := Batches(all, 64, true, 1, true)
	mb := &batch.MiniBatch{}
	for i, b := range batches { // warm up buffers
		_ = s.SampleInto(mb, b, uint64(i))
	}
	i := 0
	allocs := testing.AllocsPerRun(50, func() {
		_ = s.SampleInto(mb, batches[i%len(batches)], uint64(i))
		i++
	})
	if allocs > 0.1 {
		t.Fatalf("%.1f allocations per SampleInto in steady state", allocs)
	}
}

func TestBatches(t *testing.T) {
	seeds := []int32{0, 1, 2, 3, 4, 5, 6}
	for _, tc := range []struct {
		bs       int
		dropLast bool
		sizes    []int
	}{{3, false, []int{3, 3, 1}}, {3, true, []int{3, 3}}, {7, true, []int{7}}, {10, true, nil}, {10, false, []int{7}}} {
		b, err := Batches(seeds, tc.bs, true, 5, tc.dropLast)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		var got []int32
		for _, x := range b {
			sizes = append(sizes, len(x))
			got = append(got, x...)
		}
		if !slices.Equal(sizes, tc.sizes) {
			t.Fatalf("bs %d drop %v: sizes %v want %v", tc.bs, tc.dropLast, sizes, tc.sizes)
		}
		if !tc.dropLast {
			slices.Sort(got)
			if !slices.Equal(got, seeds) {
				t.Fatalf("batches are not a permutation: %v", got)
			}
		}
	}
	if _, err := Batches(seeds, 0, false, 0, false); err == nil {
		t.Fatal("batch size 0: no error")
	}
}

func TestCountInputs(t *testing.T) {
	g, _, _ := randomGraph(t, 1000, 9, graph.BuildOptions{})
	s, _ := New(g, Config{Fanouts: []int{5, 5}})
	all := make([]int32, 1000)
	for i := range all {
		all[i] = int32(i)
	}
	batches, _ := Batches(all, 50, true, 2, false)
	c1, err := s.CountInputs(context.Background(), batches, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := s.CountInputs(context.Background(), batches, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c1, c2) {
		t.Fatal("counts depend on the number of workers")
	}
	total := uint64(0)
	for _, c := range c1 {
		total += uint64(c)
	}
	want := 0
	for _, b := range batches {
		mb, _ := s.Sample(b, 4)
		want += len(mb.InputNodes)
	}
	if total != uint64(want) {
		t.Fatalf("counts sum to %d, want %d input nodes", total, want)
	}
}

func TestParseFanouts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"25,10", []int{25, 10}, false},
		{" 15, 10 ,5 ", []int{15, 10, 5}, false},
		{"-1", []int{-1}, false},
		{"all,3", []int{-1, 3}, false},
		{"ALL, 10", []int{-1, 10}, false},
		{"10,all", []int{10, -1}, false},
		{"all", []int{-1}, false},
		{"alll", nil, true},
		{"25,10,", nil, true},
		{"1.5", nil, true},
		{"", nil, true},
		{"25,,10", nil, true},
		{"0", nil, true},
		{"-2", nil, true},
		{"x", nil, true},
		{"99999999999999999999", nil, true},
	} {
		got, err := ParseFanouts(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("ParseFanouts(%q) = %v, %v; want %v, err %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func FuzzParseFanouts(f *testing.F) {
	for _, s := range []string{"25,10", "15,10,5", "-1", "all", "", ",", "0", "1,-1,all"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fan, err := ParseFanouts(s)
		if err != nil {
			return
		}
		if CheckFanouts(fan) != nil {
			t.Fatalf("ParseFanouts(%q) = %v, which CheckFanouts rejects", s, fan)
		}
		back, err := ParseFanouts(FormatFanouts(fan))
		if err != nil || !slices.Equal(back, fan) {
			t.Fatalf("round trip of %v: %v, %v", fan, back, err)
		}
	})
}

// srcNodes returns the local ids of b's sources: the first NumSrc input
// nodes of mb.
func srcNodes(mb *batch.MiniBatch, b graph.Block) []int32 {
	l, err := mb.Local()
	if err != nil {
		panic(err)
	}
	return l[:b.NumSrc]
}

// dstNodes returns the local ids of b's destinations.
func dstNodes(mb *batch.MiniBatch, b graph.Block) []int32 { return srcNodes(mb, b)[:b.NumDst] }

func seeds32(mb *batch.MiniBatch) []int32 {
	out := make([]int32, len(mb.Seeds))
	for i, v := range mb.Seeds {
		out[i] = int32(v)
	}
	return out
}

// TestFusedMatchesGeneric checks that the fused loop of uniform sampling
// (drawFused: ranges read, neighbours drawn and sources loaded in one
// prefetching pass) draws exactly the minibatches of the separate passes
// (spans, then draw with pick), on a skewed graph (degrees up to ~1000,
// so every draw path: all neighbours, the register Floyd, the bitset
// Floyd) and on Cora, with both relabellings and with edge ids, with and
// without the fused loop's prefetches; and so do the passes (drawCached),
// with and without their prefetches, alone or hop by hop with the fused
// loop.
func TestFusedMatchesGeneric(t *testing.T) {
	g, _, _ := randomGraph(t, 3000, 2, graph.BuildOptions{})
	withIDs := *g
	withIDs.EdgeIDs = make([]int64, len(g.Indices))
	for i := range withIDs.EdgeIDs {
		withIDs.EdgeIDs[i] = int64(len(g.Indices) - i)
	}
	graphs := []struct {
		name string
		g    *graph.CSC
	}{{"random", g}, {"random+edge ids", &withIDs}, {"cora", cora(t)}}
	for _, gg := range graphs {
		for _, cfg := range []Config{
			{Fanouts: []int{25, 10}},
			{Fanouts: []int{15, 10, 5}},
			{Fanouts: []int{3, 70}},
			{Fanouts: []int{500}},        // edge arrays grown while drawing
			{Fanouts: []int{1 << 40, 2}}, // more than any degree: all neighbours
			{Fanouts: []int{1, 1, 1, 1}},
			{Fanouts: []int{10, 5}, Relabel: RelabelDense},
		} {
			t.Run(fmt.Sprintf("%s/%s/%v", gg.name, FormatFanouts(cfg.Fanouts), cfg.Relabel), func(t *testing.T) {
				fused, err := New(gg.g, cfg)
				if err != nil {
					t.Fatal(err)
				}
				generic, _ := New(gg.g, cfg)
				generic.generic = true
				// As a graph larger than the cache: hops in passes (with
				// the draws' prefetches) or fused by their fanout against
				// the mean degree; and the fused loop alone, with and
				// without its prefetches (hops of few draws then drawn
				// ahead, drawAhead, their positions streamed where New
				// would on a large graph), and with them and Config.Prefetch
				// (drawFused for every hop).
				// Masks drawn the other way (eight at a time or
				// one at a time).
				other, _ := New(gg.g, cfg)
				other.prefetch = !fused.prefetch
				other.cachedVector = !fused.cachedVector
				loop, _ := New(gg.g, cfg)
				loop.passOK = false
				loopPF, _ := New(gg.g, cfg)
				loopPF.passOK, loopPF.prefetch = false, true
				loopPF.streamPos = gg.g.Weights == nil && gg.g.EdgeIDs == nil // as on a graph far larger than the cache
				// drawAhead with its masks drawn the other way.
				loopPFv, _ := New(gg.g, cfg)
				loopPFv.passOK, loopPFv.prefetch, loopPFv.streamPos = false, true, loopPF.streamPos
				loopPFv.floydVector = !loopPF.floydVector
				// drawAhead with its loops the other way (Go or assembly).
				loopPFa, _ := New(gg.g, cfg)
				loopPFa.passOK, loopPFa.prefetch, loopPFa.streamPos = false, true, loopPF.streamPos
				loopPFa.aheadAsm = !loopPF.aheadAsm
				// drawAhead as on CPUs that run 256-bit vectors in
				// halves, or as on the others (whichever this one is not).
				loopPFd, _ := New(gg.g, cfg)
				loopPFd.passOK, loopPFd.prefetch, loopPFd.streamPos = false, true, loopPF.streamPos
				loopPFd.halfWidth = !loopPF.halfWidth
				withFetch := cfg
				withFetch.Prefetch = func([]int32) {}
				loopFetch, _ := New(gg.g, withFetch)
				loopFetch.passOK, loopFetch.prefetch = false, true
				all := make([]int32, gg.g.NumNodes)
				for i := range all {
					all[i] = int32(i)
				}
				batches, _ := Batches(all, 200, true, 3, false)
				a, b, c := &batch.MiniBatch{}, &batch.MiniBatch{}, &batch.MiniBatch{}
				d, f2, f3, f4, f5, f6 := &batch.MiniBatch{}, &batch.MiniBatch{}, &batch.MiniBatch{}, &batch.MiniBatch{}, &batch.MiniBatch{}, &batch.MiniBatch{}
				for i, seeds := range batches[:min(len(batches), 5)] {
					if err := fused.SampleInto(a, seeds, uint64(i)); err != nil {
						t.Fatal(err)
					}
					if err := generic.SampleInto(b, seeds, uint64(i)); err != nil {
						t.Fatal(err)
					}
					if err := other.SampleInto(c, seeds, uint64(i)); err != nil {
						t.Fatal(err)
					}
					if err := loop.SampleInto(d, seeds, uint64(i)); err != nil {
						t.Fatal(err)
					}
					if err := loopPF.SampleInto(f2, seeds, uint64(i)); err != nil {
						t.Fatal(err)
					}
					if err := loopFetch.SampleInto(f3, seeds, uint64(i)); err != nil {
						t.Fatal(err)
					}
					if err := loopPFv.SampleInto(f4, seeds, uint64(i)); err != nil {
						t.Fatal(err)
					}
					if err := loopPFa.SampleInto(f5, seeds, uint64(i)); err != nil {
						t.Fatal(err)
					}
					if err := loopPFd.SampleInto(f6, seeds, uint64(i)); err != nil {
						t.Fatal(err)
					}
					if gg.g.EdgeIDs == nil { // checkMiniBatch takes edge ids for positions
						checkMiniBatch(t, gg.g, cfg, seeds, a)
					}
					for _, f := range []*batch.MiniBatch{a, c, d, f2, f3, f4, f5, f6} {
						if !slices.Equal(f.InputNodes, b.InputNodes) {
							t.Fatalf("batch %d: input nodes differ", i)
						}
						for l := range b.Blocks {
							x, y := f.Blocks[l], b.Blocks[l]
							if x.NumDst != y.NumDst || x.NumSrc != y.NumSrc || !slices.Equal(x.Indptr, y.Indptr) ||
								!slices.Equal(x.Indices, y.Indices) || !slices.Equal(x.EdgeIDs, y.EdgeIDs) {
								t.Fatalf("batch %d block %d differs", i, l)
							}
						}
					}
				}
			})
		}
	}
}

// TestBlocksCarryWeights: every sampled edge carries its weight in the
// graph (for nn.AggWeighted), in the fused, replacement and weighted draws;
// a graph without weights gives blocks without.
func TestBlocksCarryWeights(t *testing.T) {
	g, _, _ := randomGraph(t, 1500, 9, graph.BuildOptions{Symmetrize: true})
	for i := range g.Weights {
		g.Weights[i] = float32(i%13) + 0.5 // distinct enough to catch a misplaced weight
	}
	seeds := []int32{1, 2, 3, 500, 1000, 1499}
	for _, cfg := range []Config{{Fanouts: []int{6, 3}}, {Fanouts: []int{6, 3}, Replace: true}, {Fanouts: []int{6, -1}, Weighted: true}} {
		s, err := New(g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mb, err := s.Sample(seeds, 3)
		if err != nil {
			t.Fatal(err)
		}
		for l, b := range mb.Blocks {
			if len(b.Weights) != len(b.Indices) {
				t.Fatalf("%+v: block %d has %d weights for %d edges", cfg, l, len(b.Weights), len(b.Indices))
			}
			for q, p := range b.EdgeIDs { // CSC positions: the graph has no edge ids
				if b.Weights[q] != g.Weights[p] {
					t.Fatalf("%+v: block %d edge %d has weight %v, the graph's is %v", cfg, l, q, b.Weights[q], g.Weights[p])
				}
			}
		}
	}
	g.Weights = nil
	s, _ := New(g, Config{Fanouts: []int{6, 3}})
	mb, err := s.Sample(seeds, 3)
	if err != nil {
		t.Fatal(err)
	}
	for l, b := range mb.Blocks {
		if b.Weights != nil {
			t.Fatalf("block %d of an unweighted graph has weights", l)
		}
	}
}

// TestFrontier: with Config.Frontier each hop draws only for the nodes the
// hop before reached first (PyG's NeighborLoader), and, draws being keyed,
// exactly the neighbours the default mode draws for them at that hop.
func TestFrontier(t *testing.T) {
	g, _, _ := randomGraph(t, 2000, 11, graph.BuildOptions{Symmetrize: true})
	seeds := []int32{5, 17, 400, 1999, 1000}
	for _, c := range []Config{{Fanouts: []int{5, 4, 3}}, {Fanouts: []int{5, -1}, Replace: true}} {
		fc := c
		fc.Frontier = true
		all, _ := New(g, c)
		fr, _ := New(g, fc)
		want, err := all.Sample(seeds, 9)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fr.Sample(seeds, 9)
		if err != nil {
			t.Fatal(err)
		}
		L := len(c.Fanouts)
		// Each node's drawn in-neighbours (global ids) per hop.
		edges := func(mb *batch.MiniBatch, h int) map[int32][]int32 {
			b := mb.Blocks[L-1-h]
			src := srcNodes(mb, b)
			m := map[int32][]int32{}
			for i := 0; i < b.NumDst; i++ {
				for q := b.Indptr[i]; q < b.Indptr[i+1]; q++ {
					m[src[i]] = append(m[src[i]], src[b.Indices[q]])
				}
			}
			return m
		}
		first := 0
		for h := 0; h < L; h++ {
			b := got.Blocks[L-1-h]
			if b.Indptr[first] != 0 {
				t.Fatalf("%+v hop %d: the %d nodes reached before the hop have %d in-edges, want none", c, h, first, b.Indptr[first])
			}
			ge, we := edges(got, h), edges(want, h)
			for v, srcs := range ge {
				if !slices.Equal(srcs, we[v]) {
					t.Fatalf("%+v hop %d node %d: drew %v, the default mode %v", c, h, v, srcs, we[v])
				}
			}
			for _, v := range srcNodes(got, b)[first:b.NumDst] {
				if len(we[v]) > 0 && len(ge[v]) == 0 {
					t.Fatalf("%+v hop %d: node %d, first reached at the hop before, drew nothing", c, h, v)
				}
			}
			first = b.NumDst
		}
		if got.Blocks[0].NumSrc > want.Blocks[0].NumSrc {
			t.Fatalf("%+v: frontier batch has %d nodes, the default %d", c, got.Blocks[0].NumSrc, want.Blocks[0].NumSrc)
		}
	}
}

// TestPrefetch checks that Config.Prefetch sees every node whose
// in-neighbours a hop reads, in chunks of at most PrefetchChunk (plus the
// look-ahead), before the draws, and changes nothing drawn: in the fused
// path, the generic one (replacement) and frontier mode.
func TestPrefetch(t *testing.T) {
	g, _, _ := randomGraph(t, 3000, 5, graph.BuildOptions{Symmetrize: true})
	seeds := make([]int32, 300)
	for i := range seeds {
		seeds[i] = int32(i * 7)
	}
	for _, c := range []Config{{Fanouts: []int{10, 5}}, {Fanouts: []int{10, 5}, Replace: true}, {Fanouts: []int{10, 5}, Frontier: true}} {
		plain, _ := New(g, c)
		want, err := plain.Sample(seeds, 3)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		seen := map[int32]bool{}
		most := 0
		pc := c
		pc.Prefetch = func(nodes []int32) {
			mu.Lock()
			defer mu.Unlock()
			most = max(most, len(nodes))
			for _, v := range nodes {
				seen[v] = true
			}
		}
		pf, _ := New(g, pc)
		got, err := pf.Sample(seeds, 3)
		if err != nil {
			t.Fatal(err)
		}
		gl, err := got.Local()
		if err != nil {
			t.Fatal(err)
		}
		wl, _ := want.Local()
		if !slices.Equal(gl, wl) || !slices.Equal(got.Blocks[0].Indices, want.Blocks[0].Indices) {
			t.Fatalf("%+v: Prefetch changed what is drawn", c)
		}
		for h := range c.Fanouts {
			b := got.Blocks[len(c.Fanouts)-1-h]
			for _, v := range gl[:b.NumDst] {
				if !seen[v] {
					t.Fatalf("%+v: hop %d read node %d's neighbours, never prefetched", c, h, v)
				}
			}
		}
		if most == 0 || most > 2*PrefetchChunk {
			t.Errorf("%+v: chunks of up to %d nodes", c, most)
		}
	}
}

// TestFanoutsFlag checks the flag value every command's --fanouts uses.
func TestFanoutsFlag(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"25,10", []int{25, 10}, true}, {"all, 5", []int{-1, 5}, true}, {"-1", []int{-1}, true},
		{"25,0", nil, false}, {"x", nil, false}, {"", nil, false}, {"-2", nil, false},
	} {
		f := Fanouts{7}
		err := f.Set(c.in)
		if (err == nil) != c.ok || c.ok && !slices.Equal(f, c.want) || !c.ok && !slices.Equal(f, Fanouts{7}) {
			t.Errorf("Set(%q): %v, %v; want %v (ok %v)", c.in, f, err, c.want, c.ok)
		}
		if c.ok && f.String() != FormatFanouts(c.want) {
			t.Errorf("String after Set(%q) = %q", c.in, f.String())
		}
	}
}

// TestTiming checks Config.Timing: each hop's edge count is the sum of
// its blocks' edges over the minibatches sampled, its times are counted,
// ResetTiming zeroes them, the minibatches are those drawn without it, and
// a sampler without it reports nothing.
func TestTiming(t *testing.T) {
	g, _, _ := randomGraph(t, 3000, 7, graph.BuildOptions{})
	for _, cfg := range []Config{
		{Fanouts: []int{10, 5}},
		{Fanouts: []int{4, 3, 2}, Relabel: RelabelHash},
		{Fanouts: []int{5, 5}, Weighted: true, Frontier: true},
	} {
		plain, err := New(g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if plain.Timing() != nil {
			t.Fatalf("%+v: timing without Config.Timing", cfg)
		}
		cfg.Timing = true
		timed, err := New(g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		L := len(cfg.Fanouts)
		want := make([]int64, L)
		for i := 0; i < 6; i++ {
			seeds := []int32{int32(i), int32(100 + i), int32(2000 + i)}
			a, err := plain.Sample(seeds, uint64(i))
			if err != nil {
				t.Fatal(err)
			}
			b, err := timed.Sample(seeds, uint64(i))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%+v: minibatch %d differs with timing", cfg, i)
			}
			for h := 0; h < L; h++ {
				want[h] += int64(b.Blocks[L-1-h].NumEdges())
			}
		}
		got := timed.Timing()
		if len(got) != L {
			t.Fatalf("%+v: %d hops timed, want %d", cfg, len(got), L)
		}
		for h, ht := range got {
			if ht.Edges != want[h] || ht.Draw <= 0 || ht.Relabel <= 0 {
				t.Errorf("%+v: hop %d: %+v, want %d edges and both times > 0", cfg, h, ht, want[h])
			}
		}
		timed.ResetTiming()
		for h, ht := range timed.Timing() {
			if ht != (HopTiming{}) {
				t.Errorf("%+v: hop %d after reset: %+v", cfg, h, ht)
			}
		}
	}
}

// TestPosStream: positions staged through posStream, streamed or not,
// land in their array as written, whatever the array's alignment and the
// runs' lengths (0 to aheadMaxDraws), and nothing is written past the
// last.
func TestPosStream(t *testing.T) {
	for _, on := range []bool{false, true} {
		for shift := range 8 {
			t.Run(fmt.Sprintf("on=%v/shift=%d", on, shift), func(t *testing.T) {
				const n = 3000
				buf := make([]int64, n+16)
				for i := range buf {
					buf[i] = -1
				}
				dst := buf[shift : shift+n]
				var ps posStream
				ps.begin(dst, on)
				p, run := int64(0), 0
				for {
					q := min(p+int64(run%(aheadMaxDraws+1)), n-5)
					w := ps.stage(p, q)
					for x := range w {
						w[x] = (p + int64(x)) * 3
					}
					ps.wrote(q)
					p = q
					run = (run*7 + 3) % 1000003
					if q == n-5 {
						break
					}
				}
				ps.finish(p)
				for i := range buf {
					want := int64(-1)
					if i >= shift && i < shift+n-5 {
						want = int64(i-shift) * 3
					}
					if buf[i] != want {
						t.Fatalf("buf[%d] = %d, want %d", i, buf[i], want)
					}
				}
			})
		}
	}
}
