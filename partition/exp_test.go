//go:build exp

package partition_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/graphmill/graphmill/importer"
	"github.com/graphmill/graphmill/partition"
	"github.com/graphmill/graphmill/partition/gpmetis"
)

var metisCut = map[string]int64{}

func TestCompare(t *testing.T) {
	ctx := context.Background()
	div, _ := strconv.ParseFloat(os.Getenv("DIV"), 64)
	tries, _ := strconv.Atoi(os.Getenv("TRIES"))
	if tries == 0 {
		tries = 8
	}
	partition.SetExp(div, tries, os.Getenv("RATING") != "")
	type gsrc struct {
		name string
		load func() (*partition.Graph, error)
	}
	srcs := []gsrc{
		{"wave", func() (*partition.Graph, error) {
			r, err := importer.METIS("/work/shared/data/structure-only/wave.graph.bz2")
			if err != nil {
				return nil, err
			}
			return partition.FromEdges(ctx, r.NumNodes, r.Src, r.Dst, 0)
		}},
		{"enron", func() (*partition.Graph, error) {
			r, _, err := importer.EdgeList("/work/shared/data/structure-only/email-Enron.txt.gz", importer.EdgeListOptions{})
			if err != nil {
				return nil, err
			}
			return partition.FromEdges(ctx, r.NumNodes, r.Src, r.Dst, 0)
		}},
	}
	for _, s := range srcs {
		g, err := s.load()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{4, 16, 64} {
			var best time.Duration
			var sum float64
			var cut int64
			for seed := 1; seed <= 3; seed++ {
				st := time.Now()
				res, err := partition.Partition(ctx, g, partition.Options{Parts: k, Seed: uint64(seed)})
				if err != nil {
					t.Fatal(err)
				}
				el := time.Since(st)
				if best == 0 || el < best {
					best = el
				}
				sum += float64(res.Stats.EdgeCut)
				cut = res.Stats.EdgeCut
				_ = cut
			}
			avg := sum / 3
			run, err := gpmetis.Partition(ctx, g, k, 1.03, 1, "")
			if err != nil {
				t.Fatal(err)
			}
			gs, _ := partition.ComputeStats(g, run.Parts, k, nil, 0)
			fmt.Printf("%s k=%d ours avgcut=%.0f t=%v | metis cut=%d t=%v | ratio %.3f %.2f\n", s.name, k, avg, best.Round(time.Millisecond), gs.EdgeCut, run.Reported, avg/float64(gs.EdgeCut), float64(best)/float64(run.Reported))
		}
	}
}
