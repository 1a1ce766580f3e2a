package batch_test

import (
	"fmt"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/graph"
)

// A one-layer batch: seed 7 with in-neighbours 3 and 9, encoded to a frame
// and decoded in place.
func ExampleDecode() {
	mb := &batch.MiniBatch{Epoch: 2, Seq: 5}
	mb.SetInputs64([]int64{7, 3, 9}, 1) // seeds first
	mb.Blocks = []graph.Block{{NumSrc: 3, NumDst: 1, Indptr: []int64{0, 2}, Indices: []int32{1, 2}}}
	copy(mb.Features.SetF32(3, 2), []float32{1, 1, 0.5, 0, 0, 0.5})
	mb.Labels = []int32{4}

	frame, err := mb.MarshalBinary()
	if err != nil {
		panic(err)
	}
	var got batch.MiniBatch
	if err := batch.Decode(frame, &got, batch.DecodeOptions{Alias: true}); err != nil {
		panic(err)
	}
	fmt.Println(len(frame), "bytes; epoch", got.Epoch, "seq", got.Seq)
	fmt.Println("seeds", got.Seeds, "inputs", got.InputNodes, "labels", got.Labels)
	b := got.Blocks[0]
	fmt.Println("in-edges of the seed from", got.InputNodes[b.Indices[0]], "and", got.InputNodes[b.Indices[1]])
	fmt.Println("features", got.Features.F32)
	// Output:
	// 768 bytes; epoch 2 seq 5
	// seeds [7] inputs [7 3 9] labels [4]
	// in-edges of the seed from 3 and 9
	// features [1 1 0.5 0 0 0.5]
}
