package layout

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/synth"
)

// generate writes a small synthetic dataset (edge weights added when
// weighted) and opens it.
func generate(t *testing.T, dtype string) *dataset.Dataset {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	cfg := synth.Config{Nodes: 3000, Edges: 30000, FeatureDim: 24, FeatureDType: dtype, Classes: 4, Seed: 3, TrainFrac: 0.2, ValFrac: 0.1, TestFrac: 0.1}
	if _, err := synth.Generate(context.Background(), dir, cfg, false); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func isPermutation(order []int32, n int) bool {
	s := slices.Clone(order)
	slices.Sort(s)
	for i, v := range s {
		if int(v) != i {
			return false
		}
	}
	return len(s) == n
}

func TestOrder(t *testing.T) {
	d := generate(t, "")
	n := d.Graph.NumNodes
	counts, err := Counts(context.Background(), d, Config{Fanouts: []int{5, 5}, BatchSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	deg := d.Graph.OutDegrees()
	for _, c := range []struct {
		m     Method
		score func(v int32) int64 // non-increasing along the order (within a part)
	}{
		{Sample, func(v int32) int64 { return int64(counts[v]) }},
		{Degree, func(v int32) int64 { return int64(deg[v]) }},
		{Partition, nil},
	} {
		t.Run(string(c.m), func(t *testing.T) {
			order, err := Order(context.Background(), d, Config{Method: c.m, Fanouts: []int{5, 5}, BatchSize: 64, Parts: 4})
			if err != nil {
				t.Fatal(err)
			}
			if !isPermutation(order, n) {
				t.Fatal("not a permutation of the nodes")
			}
			if slices.IsSorted(order) {
				t.Fatal("the original order")
			}
			for i := 1; c.score != nil && i < n; i++ {
				a, b := c.score(order[i-1]), c.score(order[i])
				if a < b || (a == b && order[i-1] > order[i]) {
					t.Fatalf("at %d: node %d (score %d) before node %d (score %d)", i, order[i-1], a, order[i], b)
				}
			}
		})
	}
	// Partition: every part's nodes are contiguous, most read first.
	order, err := Order(context.Background(), d, Config{Method: Partition, Fanouts: []int{5, 5}, BatchSize: 64, Parts: 4})
	if err != nil {
		t.Fatal(err)
	}
	runs := 1
	for i := 1; i < n; i++ {
		if counts[order[i]] > counts[order[i-1]] {
			runs++ // a new part starts
		}
	}
	if runs < 4 || runs > n/4 {
		t.Errorf("%d runs of non-increasing counts for 4 parts", runs)
	}
	if _, err := Order(context.Background(), d, Config{Method: "bogus"}); err == nil {
		t.Error("an unknown method was accepted")
	}
}

// checkPacked checks that p is d renumbered: every array follows, and ids
// map back to the original ones.
func checkPacked(t *testing.T, d, p *dataset.Dataset, orig []int32) {
	t.Helper()
	n := d.Graph.NumNodes
	if p.Meta.Packed == nil || !slices.Equal(p.OrigIDs, orig) {
		t.Fatalf("packed meta %+v, orig_ids differ", p.Meta.Packed)
	}
	if p.FeatureArray.DataOffset%dataset.FeatureAlign != 0 {
		t.Errorf("features start at %d, not on a page", p.FeatureArray.DataOffset)
	}
	rowB := len(d.FeatureArray.Data) / n
	for v := range n {
		o := orig[v]
		src := d.Graph.Indices[d.Graph.Indptr[o]:d.Graph.Indptr[o+1]]
		got := slices.Clone(p.Graph.Indices[p.Graph.Indptr[v]:p.Graph.Indptr[v+1]])
		p.ToOriginal(got)
		if !slices.Equal(got, src) {
			t.Fatalf("node %d (originally %d): in-neighbours %v, want %v", v, o, got, src)
		}
		if !bytes.Equal(p.FeatureArray.Data[v*rowB:(v+1)*rowB], d.FeatureArray.Data[int(o)*rowB:int(o+1)*rowB]) {
			t.Fatalf("node %d: feature row differs from node %d's", v, o)
		}
		if p.Labels[v] != d.Labels[o] {
			t.Fatalf("node %d: label %d, want %d", v, p.Labels[v], d.Labels[o])
		}
	}
	for _, s := range [][2][]int32{{d.Train, p.Train}, {d.Val, p.Val}, {d.Test, p.Test}} {
		got := slices.Clone(s[1])
		p.ToOriginal(got)
		if !slices.Equal(got, s[0]) {
			t.Fatal("a split's ids (in their order) do not map back to the original split")
		}
		back := slices.Clone(got)
		if err := p.FromOriginal(back); err != nil || !slices.Equal(back, s[1]) {
			t.Fatalf("FromOriginal does not invert ToOriginal: %v", err)
		}
	}
}

func TestWrite(t *testing.T) {
	for _, dtype := range []string{"float32", "float16"} {
		t.Run(dtype, func(t *testing.T) {
			d := generate(t, dtype)
			ctx := context.Background()
			order, err := Order(ctx, d, Config{Fanouts: []int{5, 5}, BatchSize: 64})
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "packed")
			if err := Write(ctx, d, out, order, WriteOptions{Method: Sample}); err != nil {
				t.Fatal(err)
			}
			p, err := dataset.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			checkPacked(t, d, p, order)

			// Packing a packed dataset composes the renumberings.
			deg, err := Order(ctx, p, Config{Method: Degree})
			if err != nil {
				t.Fatal(err)
			}
			out2 := filepath.Join(t.TempDir(), "twice")
			if err := Write(ctx, p, out2, deg, WriteOptions{Method: Degree}); err != nil {
				t.Fatal(err)
			}
			p2, err := dataset.Open(out2)
			if err != nil {
				t.Fatal(err)
			}
			defer p2.Close()
			checkPacked(t, d, p2, gather(order, deg))
		})
	}
}

func TestWriteRefuses(t *testing.T) {
	d := generate(t, "")
	ctx := context.Background()
	n := d.Graph.NumNodes
	ident := make([]int32, n)
	for i := range ident {
		ident[i] = int32(i)
	}
	dup := slices.Clone(ident)
	dup[1] = 0
	out := filepath.Join(t.TempDir(), "out")
	for _, c := range []struct {
		name  string
		order []int32
		want  string
	}{
		{"short", ident[:n-1], "an order of"},
		{"repeated node", dup, "not a permutation"},
	} {
		if err := Write(ctx, d, out, c.order, WriteOptions{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused pack left %s behind (%v)", out, err)
	}
	// An array packing cannot renumber is refused, not dropped.
	extra := filepath.Join(t.TempDir(), "extra")
	w, err := dataset.NewWriter(extra, false)
	if err != nil {
		t.Fatal(err)
	}
	m := d.Meta
	for name, am := range d.Meta.Arrays {
		a, err := npy.Open(filepath.Join(d.Dir, am.File))
		if err != nil {
			t.Fatal(err)
		}
		aw, err := w.Create(name, am.DType, am.Shape...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := aw.Write(a.Data); err != nil {
			t.Fatal(err)
		}
		if err := aw.Close(); err != nil {
			t.Fatal(err)
		}
		a.Close()
	}
	if err := dataset.Put(w, "node_year", make([]int32, n)); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(m); err != nil {
		t.Fatal(err)
	}
	e, err := dataset.Open(extra)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := Write(ctx, e, out, ident, WriteOptions{}); err == nil || !strings.Contains(err.Error(), "node_year") {
		t.Errorf("an unknown array: error %v", err)
	}
}
