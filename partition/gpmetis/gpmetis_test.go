package gpmetis

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/graphmill/graphmill/importer"
	"github.com/graphmill/graphmill/partition"
)

func ring(n int, weights bool) *partition.Graph {
	g := &partition.Graph{Xadj: make([]int64, n+1)}
	for v := 0; v < n; v++ {
		a, b := int32((v+n-1)%n), int32((v+1)%n)
		g.Adjncy = append(g.Adjncy, min(a, b), max(a, b))
		g.Xadj[v+1] = int64(len(g.Adjncy))
		if weights {
			g.EdgeWeights = append(g.EdgeWeights, 2, 2)
		}
	}
	return g
}

func TestWriteGraphRoundTrip(t *testing.T) {
	for _, weighted := range []bool{false, true} {
		g := ring(10, weighted)
		var buf bytes.Buffer
		if err := WriteGraph(&buf, g); err != nil {
			t.Fatal(err)
		}
		r, err := importer.ReadMETIS(&buf, "ring")
		if err != nil {
			t.Fatalf("weighted=%v: %v\n%s", weighted, err, buf.String())
		}
		h, err := partition.FromEdges(context.Background(), r.NumNodes, r.Src, r.Dst, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r.NumNodes != 10 || !slices.Equal(h.Adjncy, g.Adjncy) {
			t.Errorf("weighted=%v: round trip differs", weighted)
		}
		if weighted && (len(r.EdgeWeights) != 20 || r.EdgeWeights[0] != 2) {
			t.Errorf("weights lost: %v", r.EdgeWeights)
		}
	}
}

func TestPartitionWithGpmetis(t *testing.T) {
	if !Available() {
		t.Skip("gpmetis not on PATH (apt-get install metis)")
	}
	g := ring(100, false)
	run, err := Partition(context.Background(), g, 4, 1.03, 1, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st, err := partition.ComputeStats(g, run.Parts, 4, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.EdgeCut < 4 || st.EdgeCut > 8 {
		t.Errorf("gpmetis cut a ring into 4 with %d edges", st.EdgeCut)
	}
}
