package loader_test

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/loader"
	"github.com/graphmill/graphmill/sample"
)

// One epoch over Cora's training nodes.
func Example() {
	ctx := context.Background()
	d, err := builtin.Open(ctx, "cora")
	if err != nil {
		panic(err)
	}
	defer d.Close()
	s, _ := sample.New(d.Graph, sample.Config{Fanouts: []int{10, 5}})
	st, _ := feature.Open(d, feature.Options{})
	l, err := loader.New(s, st, d.Labels, d.Train, loader.Config{BatchSize: 64, Shuffle: true, Seed: 1})
	if err != nil {
		panic(err)
	}
	it := l.Epoch(ctx, 0)
	defer it.Close()
	seeds := 0
	for it.Next() {
		b := it.Batch()
		if len(b.Features) != len(b.MiniBatch.InputNodes)*st.Dim() || len(b.Labels) != len(b.MiniBatch.Seeds) {
			panic("shapes")
		}
		seeds += len(b.MiniBatch.Seeds)
	}
	if err := it.Err(); err != nil {
		panic(err)
	}
	fmt.Println(l.NumBatches(), "batches,", seeds, "seeds")
	// Output: 3 batches, 140 seeds
}
