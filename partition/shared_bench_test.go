package partition_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/cora"
	"github.com/graphmill/graphmill/importer"
	"github.com/graphmill/graphmill/internal/shareddata"
	"github.com/graphmill/graphmill/partition"
)

// sharedData locates the shared data directory ($GRAPHMILL_DATA, else
// the nearest shared/data above this package), or "".
func sharedData() string {
	d := shareddata.Dir()
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// benchGraph loads one of the benchmark's small graphs (as `bench
// partition` builds them), or skips.
func benchGraph(tb testing.TB, name string) *partition.Graph {
	tb.Helper()
	var r *dataset.Raw
	var err error
	data := sharedData()
	switch name {
	case "cora":
		r, err = cora.Raw()
	case "wave", "email-Enron":
		if data == "" {
			tb.Skip("no shared data")
		}
		if name == "wave" {
			r, err = importer.METIS(filepath.Join(data, "structure-only", "wave.graph.bz2"))
		} else {
			r, _, err = importer.EdgeList(filepath.Join(data, "structure-only", "email-Enron.txt.gz"), importer.EdgeListOptions{})
		}
	case "citeseer":
		if data == "" {
			tb.Skip("no shared data")
		}
		r, err = importer.Planetoid(filepath.Join(data, "planetoid"), "citeseer")
	}
	if err != nil {
		tb.Skip(err)
	}
	g, err := partition.FromEdges(context.Background(), r.NumNodes, r.Src, r.Dst, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// TestDenseCoreEmailEnron checks email-Enron at K = 4, whose coarsest
// graph is a dense core: all initial partitions but one start from the
// level before it, and the result is balanced, its cut reported right,
// and the same on one and two workers.
func TestDenseCoreEmailEnron(t *testing.T) {
	g := benchGraph(t, "email-Enron")
	res, err := partition.Partition(context.Background(), g, partition.Options{Parts: 4, Seed: 1, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	ph := res.Phases
	if ph.InitialRuns < 2 || ph.InitialFiner != ph.InitialRuns-1 || ph.InitialLevels != 2 {
		t.Fatalf("%d initial partitions over %d levels, %d from the level before the core; want all but one from there, over 2 levels", ph.InitialRuns, ph.InitialLevels, ph.InitialFiner)
	}
	if cut := partition.EdgeCut(g, res.Parts, 1); cut != res.Stats.EdgeCut {
		t.Errorf("reported cut %d, recounted %d", res.Stats.EdgeCut, cut)
	}
	if res.Stats.Imbalance > partition.DefaultImbalance {
		t.Errorf("imbalance %.4f over %.2f", res.Stats.Imbalance, partition.DefaultImbalance)
	}
	one, err := partition.Partition(context.Background(), g, partition.Options{Parts: 4, Seed: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one.Parts, res.Parts) {
		t.Error("different partitions on one and two workers")
	}
	// K = 16: its coarsest graph's level before is past METIS's target.
	res, err = partition.Partition(context.Background(), g, partition.Options{Parts: 16, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Phases.InitialFiner != 0 {
		t.Errorf("K = 16: %d initial partitions from below the core, want 0", res.Phases.InitialFiner)
	}
}

// BenchmarkShared partitions the small graphs of "graphmill bench
// partition" (run with -cpuprofile to profile them); it reports the cut.
func BenchmarkShared(b *testing.B) {
	for _, name := range []string{"cora", "citeseer", "email-Enron", "wave"} {
		for _, k := range []int{4, 16, 64} {
			b.Run(fmt.Sprintf("%s/k=%d", name, k), func(b *testing.B) {
				g := benchGraph(b, name)
				var cut int64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, err := partition.Partition(context.Background(), g, partition.Options{Parts: k, Seed: 1})
					if err != nil {
						b.Fatal(err)
					}
					cut = res.Stats.EdgeCut
				}
				b.ReportMetric(float64(cut), "cut")
			})
		}
	}
}
