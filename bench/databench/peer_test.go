package databench

import (
	"context"
	"testing"

	"github.com/graphmill/graphmill/graph"
)

// TestPeerDoesTheSameWork: scipy's builds store as many edges as ours on
// the same edge list, so the ratio compares like with like.
func TestPeerDoesTheSameWork(t *testing.T) {
	ctx := context.Background()
	peer, err := findPeer(ctx, "")
	if err != nil {
		t.Skip(err)
	}
	o := Options{BuildNodes: 2000, BuildEdges: 30000, Rounds: 1}
	for _, c := range []struct {
		name string
		opts graph.BuildOptions
	}{
		{"as-is", graph.BuildOptions{}},
		{"symmetrize+dedup", graph.BuildOptions{Symmetrize: true, Dedup: true, SelfLoops: graph.RemoveSelfLoops}},
	} {
		b, err := measureBuild(ctx, o, c.name, c.opts, peer)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if b.PeerOutputEdges != b.OutputEdges || b.VsPeer == nil || *b.VsPeer <= 0 {
			t.Errorf("%s: ours stored %d edges, scipy %d (ratio %v)", c.name, b.OutputEdges, b.PeerOutputEdges, b.VsPeer)
		}
	}
}

// TestPeerMissing: no interpreter, or one without scipy, is a reason, not
// a failure of the benchmark.
func TestPeerMissing(t *testing.T) {
	for _, py := range []string{"none", "/nonexistent/python3"} {
		if p, err := findPeer(context.Background(), py); err == nil || p != nil {
			t.Errorf("%s: peer %v, error %v", py, p, err)
		}
	}
	b, err := measureBuild(context.Background(), Options{BuildNodes: 10, BuildEdges: 50}, "as-is", graph.BuildOptions{}, nil)
	if err != nil || b.VsPeer != nil || b.OutputEdges != 50 {
		t.Errorf("without a peer: %+v, %v", b, err)
	}
}
