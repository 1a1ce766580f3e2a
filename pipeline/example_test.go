package pipeline_test

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/pipeline"
)

// A two-stage pipeline: the first stage (on two goroutines) makes batch i
// with i+1 seeds, the second adds labels; batches arrive in order and are
// released for reuse after each step.
func Example() {
	p, err := pipeline.New(pipeline.Config{Buffers: 3, Stages: []pipeline.Stage{
		{Name: "make", Workers: 2, Run: func(_ context.Context, i int, mb *batch.MiniBatch) error {
			ids := mb.LocalBuffer()
			for k := 0; k <= i; k++ {
				ids = append(ids, int32(10*i+k))
			}
			mb.SetInputs(ids, len(ids))
			b := &mb.SetBlocks(1)[0]
			b.NumSrc, b.NumDst = len(ids), len(ids)
			b.Indptr = append(b.Indptr[:0], make([]int64, len(ids)+1)...)
			return nil
		}},
		{Name: "label", Run: func(_ context.Context, i int, mb *batch.MiniBatch) error {
			mb.Labels = mb.Labels[:0]
			for range mb.Seeds {
				mb.Labels = append(mb.Labels, int32(i%2))
			}
			return nil
		}},
	}})
	if err != nil {
		panic(err)
	}
	it := p.Epoch(context.Background(), 0, 4)
	defer it.Close()
	for it.Next() {
		mb := it.Batch()
		fmt.Println("batch", mb.Seq, "seeds", mb.Seeds, "labels", mb.Labels)
		mb.Release()
	}
	if err := it.Err(); err != nil {
		panic(err)
	}
	// Output:
	// batch 0 seeds [0] labels [0]
	// batch 1 seeds [10 11] labels [1 1]
	// batch 2 seeds [20 21 22] labels [0 0 0]
	// batch 3 seeds [30 31 32 33] labels [1 1 1 1]
}
