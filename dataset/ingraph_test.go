package dataset

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestGraphInMemory: the copy holds the same offsets, lists and weights
// as the mapping, in memory of its own, with and without weights.
func TestGraphInMemory(t *testing.T) {
	for _, weighted := range []bool{false, true} {
		raw := tiny()
		if weighted {
			raw.Build.Dedup = false
			raw.EdgeWeights = []float32{0.5, 1.5, 2.5, 3.5}
		}
		dir := filepath.Join(t.TempDir(), "tiny")
		if err := Write(context.Background(), dir, raw, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		d, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if (d.Graph.Weights != nil) != weighted {
			t.Fatalf("weighted %v, weights %v", weighted, d.Graph.Weights)
		}
		g, free := d.GraphInMemory()
		if g.NumNodes != d.Graph.NumNodes || !slices.Equal(g.Indptr, d.Graph.Indptr) || !slices.Equal(g.Indices, d.Graph.Indices) ||
			!slices.Equal(g.Weights, d.Graph.Weights) || (g.Weights != nil) != weighted {
			t.Fatalf("copy %+v, mapping %+v", g, d.Graph)
		}
		if &g.Indices[0] == &d.Graph.Indices[0] || &g.Indptr[0] == &d.Graph.Indptr[0] {
			t.Fatal("the copy aliases the mapping")
		}
		free()
		// The mapping is still readable after its resident pages were dropped.
		if n := d.Graph.InNeighbors(1); len(n) == 0 {
			t.Fatal("mapping unreadable")
		}
		d.Close()
	}
}
