package sample

import (
	"context"
	"fmt"
	"github.com/graphmill/graphmill/batch"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graphmill/graphmill/bench/membench"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/hugemem"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/synth"
)

var (
	benchOnce  sync.Once
	benchG     *graph.CSC
	benchTrain []int32
	benchCeil  = map[int]float64{}
	benchErr   error
)

// benchGraph returns the graph named by $GRAPHMILL_BENCH_DATA (a native
// dataset directory), or a synthetic 1M-node, 20M-edge power-law graph,
// copied into huge-page memory, and its training nodes.
func benchGraph(b *testing.B) (*graph.CSC, []int32) {
	benchOnce.Do(func() {
		dir := os.Getenv("GRAPHMILL_BENCH_DATA")
		if dir == "" {
			dir, benchErr = os.MkdirTemp("", "graphmill-sample-bench-")
			if benchErr != nil {
				return
			}
			defer os.RemoveAll(dir)
			dir += "/g"
			_, benchErr = synth.Generate(context.Background(), dir, synth.Config{Nodes: 1_000_000, Edges: 20_000_000, FeatureDim: 0, Classes: 8, Seed: 1}, false)
			if benchErr != nil {
				return
			}
		}
		d, err := dataset.Open(dir)
		if err != nil {
			benchErr = err
			return
		}
		defer d.Close()
		g := d.Graph
		indptr, _ := hugemem.Alloc[int64](len(g.Indptr))
		indices, _ := hugemem.Alloc[int32](len(g.Indices))
		copy(indptr, g.Indptr)
		copy(indices, g.Indices)
		benchG = &graph.CSC{NumNodes: g.NumNodes, Indptr: indptr, Indices: indices}
		benchTrain = append([]int32(nil), d.Train...)
		arr, free := hugemem.Alloc[uint32](int(benchG.Bytes() / 4))
		for i := range arr {
			arr[i] = uint32(i)
		}
		for _, w := range []int{1, 2} {
			benchCeil[w] = membench.RandomReads(arr, w, 300*time.Millisecond).CPUPerSec
		}
		free()
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchG, benchTrain
}

// BenchmarkSample measures sampled edges per second with 1 and 2
// goroutines sampling different minibatches, and reports the ratio to the
// random-read ceiling measured with as many goroutines.
func BenchmarkSample(b *testing.B) {
	g, train := benchGraph(b)
	batches, _ := Batches(train, 1024, true, 1, true)
	for _, fan := range [][]int{{25, 10}, {15, 10, 5}} {
		for _, relabel := range []Relabel{RelabelAuto, RelabelHash, RelabelDense} {
			for _, workers := range []int{1, 2} {
				b.Run(fmt.Sprintf("fanouts=%s/relabel=%v/workers=%d", FormatFanouts(fan), relabel, workers), func(b *testing.B) {
					s, err := New(g, Config{Fanouts: fan, Relabel: relabel})
					if err != nil {
						b.Fatal(err)
					}
					var next atomic.Int64
					b.ResetTimer()
					res := membench.Work(workers, func(int) int64 {
						mb := &batch.MiniBatch{}
						edges := int64(0)
						for {
							i := int(next.Add(1) - 1)
							if i >= b.N {
								return edges
							}
							if err := s.SampleInto(mb, batches[i%len(batches)], rng.Derive(1, uint64(i))); err != nil {
								b.Error(err)
								return edges
							}
							edges += int64(mb.NumEdges())
						}
					})
					b.ReportMetric(res.CPUPerSec/1e6, "Medges/cpu-s")
					b.ReportMetric(res.PerSec/1e6, "Medges/s")
					b.ReportMetric(res.CPUPerSec/benchCeil[workers], "x_ceiling")
				})
			}
		}
	}
}
