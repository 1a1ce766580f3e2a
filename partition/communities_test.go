package partition_test

import (
	"context"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/partition"
	"github.com/graphmill/graphmill/synth"
)

// TestPlantedCommunitiesFound partitions a synthetic graph of 16 planted
// communities (edges random inside and between them, 80 % inside) into
// 4 parts: coarsening mixes the communities until its coarse levels are
// nearly complete graphs, so the initial partitions are made on a finer
// level (Phases.InitialDense; the best of 4 at K <= 4, where they decide
// which communities go together), and every community must end in one
// part (all but a few of its nodes), four communities a part. Before, 2
// seeds of 5 grouped them 5, 4, 4, 3 and split one (cut 1.19-1.20x).
func TestPlantedCommunitiesFound(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and partitions a 200k-node graph five times")
	}
	dir := t.TempDir()
	const classes, k = 16, 4
	if _, err := synth.Generate(context.Background(), dir, synth.Config{Name: "planted", Nodes: 200_000, Edges: 1_000_000, Classes: classes, Seed: 0}, true); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	g, err := partition.FromCSC(context.Background(), d.Graph, 0)
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 5; seed++ {
		res, err := partition.Partition(context.Background(), g, partition.Options{Parts: k, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Phases.InitialDense {
			t.Errorf("seed %d: initial partitions at the coarse levels, want them below the dense ones", seed)
		}
		if res.Phases.InitialRuns != 4 {
			t.Errorf("seed %d: the best of %d initial partitions, want of 4 at K = 4", seed, res.Phases.InitialRuns)
		}
		count := make([][k]int, classes)
		size := make([]int, classes)
		for v, p := range res.Parts {
			count[d.Labels[v]][p]++
			size[d.Labels[v]]++
		}
		var perPart [k]int
		for c := range count {
			best := 0
			for p := range count[c] {
				if count[c][p] > count[c][best] {
					best = p
				}
			}
			// A node whose edges mostly leave its community belongs
			// elsewhere: about 2 % of each community's nodes.
			if share := float64(count[c][best]) / float64(size[c]); share < 0.95 {
				t.Errorf("seed %d: community %d split, %.1f %% in its largest part (%v)", seed, c, 100*share, count[c])
			}
			perPart[best]++
		}
		if perPart != [k]int{4, 4, 4, 4} {
			t.Errorf("seed %d: communities per part %v, want 4 each", seed, perPart)
		}
		if res.Stats.Imbalance > partition.DefaultImbalance {
			t.Errorf("seed %d: imbalance %.4f", seed, res.Stats.Imbalance)
		}
	}
}
