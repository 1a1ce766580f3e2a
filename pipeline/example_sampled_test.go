package pipeline_test

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/pipeline"
	"github.com/graphmill/graphmill/sample"
)

// One epoch of neighbour-sampled minibatches over Cora's training nodes.
func ExampleSampled() {
	ctx := context.Background()
	d, err := builtin.Open(ctx, "cora")
	if err != nil {
		panic(err)
	}
	defer d.Close()
	s, _ := sample.New(d.Graph, sample.Config{Fanouts: []int{10, 5}})
	st, _ := feature.Open(d, feature.Options{})
	l, err := pipeline.NewSampled(s, st, d.Labels, d.Train, pipeline.SampledConfig{BatchSize: 64, Shuffle: true, Seed: 1})
	if err != nil {
		panic(err)
	}
	it := l.Epoch(ctx, 0)
	defer it.Close()
	seeds := 0
	for it.Next() {
		mb := it.Batch()
		if len(mb.Features.F32) != len(mb.InputNodes)*st.Dim() || len(mb.Labels) != len(mb.Seeds) {
			panic("shapes")
		}
		seeds += len(mb.Seeds) // a training step on mb would run here
		mb.Release()           // its buffers go back to the pipeline
	}
	if err := it.Err(); err != nil {
		panic(err)
	}
	fmt.Println(l.NumBatches(), "batches,", seeds, "seeds")
	// Output: 3 batches, 140 seeds
}
