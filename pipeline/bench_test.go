package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/synth"
)

var (
	benchOnce sync.Once
	benchDS   *dataset.Dataset
	benchErr  error
)

// benchDataset opens $GRAPHMILL_BENCH_DATA, or generates a 1M-node,
// 20M-edge graph with 64 features into a temporary directory.
func benchDataset(b *testing.B) *dataset.Dataset {
	benchOnce.Do(func() {
		dir := os.Getenv("GRAPHMILL_BENCH_DATA")
		if dir == "" {
			tmp, err := os.MkdirTemp("", "graphmill-pipeline-bench-")
			if err != nil {
				benchErr = err
				return
			}
			dir = filepath.Join(tmp, "g")
			if _, err := synth.Generate(context.Background(), dir, synth.Config{Nodes: 1_000_000, Edges: 20_000_000, FeatureDim: 64, Classes: 8, Seed: 1}, false); err != nil {
				benchErr = err
				return
			}
		}
		benchDS, benchErr = dataset.Open(dir)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchDS
}

// spin burns CPU for d, like a training step.
func spin(d time.Duration) uint64 {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

// BenchmarkLoaderBusy runs the loader under a consumer that needs 5 ms of
// CPU per batch and reports the fraction of its time the consumer is busy
// (busy%), with the sampling time per batch alongside: the pipeline keeps
// the consumer busy when sampling (divided among the workers) is faster
// than the consumer.
func BenchmarkLoaderBusy(b *testing.B) {
	d := benchDataset(b)
	st, err := feature.Open(d, feature.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		fanouts  []int
		features bool
	}{{"fanouts=10,5", []int{10, 5}, false}, {"fanouts=25,10", []int{25, 10}, false}, {"fanouts=10,5/features", []int{10, 5}, true}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := sample.New(d.Graph, sample.Config{Fanouts: tc.fanouts})
			if err != nil {
				b.Fatal(err)
			}
			var f Fetcher
			if tc.features {
				f = st
			}
			l, err := NewSampled(s, f, nil, d.Train, SampledConfig{BatchSize: 1024, Shuffle: true, Seed: 1, SampleWorkers: 2})
			if err != nil {
				b.Fatal(err)
			}
			var total Stats
			var sampleT, gatherT time.Duration
			var sink uint64
			b.ResetTimer()
			for done, epoch := 0, 0; done < b.N; epoch++ {
				it := l.Epoch(context.Background(), epoch)
				for done < b.N && it.Next() {
					sink += spin(5 * time.Millisecond)
					it.Batch().Release()
					done++
				}
				st := it.Stats()
				it.Close()
				total.Busy += st.Busy
				total.Wait += st.Wait // FirstWait (pipeline fill) excluded
				sampleT += st.Stage("sample")
				gatherT += st.Stage("gather")
				total.Batches += st.Batches
			}
			_ = sink
			b.ReportMetric(100*total.Utilization(), "busy%")
			b.ReportMetric(sampleT.Seconds()*1000/float64(total.Batches)/2, "sample-ms/batch/worker")
			if tc.features {
				b.ReportMetric(gatherT.Seconds()*1000/float64(total.Batches), "gather-ms/batch")
			}
		})
	}
}
