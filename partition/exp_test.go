//go:build exp

package partition_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/graphmill/graphmill/importer"
	"github.com/graphmill/graphmill/partition"
	"github.com/graphmill/graphmill/partition/gpmetis"
	"github.com/graphmill/graphmill/graph"
)

func TestCompare(t *testing.T) {
	ctx := context.Background()
	type gsrc struct{ name string; load func() (*partition.Graph, error) }
	srcs := []gsrc{
		{"wave", func() (*partition.Graph, error) {
			r, err := importer.METIS("/work/shared/data/structure-only/wave.graph.bz2")
			if err != nil { return nil, err }
			return partition.FromEdges(ctx, r.NumNodes, r.Src, r.Dst, 0)
		}},
		{"enron", func() (*partition.Graph, error) {
			r, _, err := importer.EdgeList("/work/shared/data/structure-only/email-Enron.txt.gz", importer.EdgeListOptions{Build: graph.BuildOptions{Symmetrize: true}})
			if err != nil { return nil, err }
			return partition.FromEdges(ctx, r.NumNodes, r.Src, r.Dst, 0)
		}},
	}
	for _, s := range srcs {
		g, err := s.load()
		if err != nil { t.Fatal(err) }
		for _, k := range []int{4, 16, 64} {
			st := time.Now()
			res, err := partition.Partition(ctx, g, partition.Options{Parts: k, Seed: 1})
			if err != nil { t.Fatal(err) }
			el := time.Since(st)
			run, err := gpmetis.Partition(ctx, g, k, 1.03, 1, "")
			if err != nil { t.Fatal(err) }
			gs, _ := partition.ComputeStats(g, run.Parts, k, nil, 0)
			fmt.Printf("%s k=%d ours cut=%d imb=%.3f t=%v | metis cut=%d imb=%.3f t=%v (rep %v) | ratio %.3f %.2f\n", s.name, k, res.Stats.EdgeCut, res.Stats.Imbalance, el.Round(time.Millisecond), gs.EdgeCut, gs.Imbalance, run.Wall.Round(time.Millisecond), run.Reported, float64(res.Stats.EdgeCut)/float64(gs.EdgeCut), float64(el)/float64(run.Reported))
		}
	}
}
