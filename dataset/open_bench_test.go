package dataset

import (
	"context"
	"os"
	"testing"
)

// BenchmarkOpenCheck measures the per-edge range check Open runs, on the
// dataset named by $GRAPHMILL_BENCH_DATASET (skipped when unset), e.g. a
// 200M-edge graph from 'graphmill data generate --nodes 10M --edges 200M'.
func BenchmarkOpenCheck(b *testing.B) {
	dir := os.Getenv("GRAPHMILL_BENCH_DATASET")
	if dir == "" {
		b.Skip("set GRAPHMILL_BENCH_DATASET to a dataset directory")
	}
	d, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	g := d.Graph
	b.SetBytes(int64(len(g.Indices)) * 4)
	b.Run("indices", func(b *testing.B) {
		for b.Loop() {
			if err := checkIndices(context.Background(), dir, g.Indptr, g.Indices, g.NumNodes); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(g.Indices)), "ns/edge")
	})
	b.Run("indptr", func(b *testing.B) {
		for b.Loop() {
			if err := checkIndptr(dir, g.Indptr, d.Meta.NumEdges); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			d, err := Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
	})
}
