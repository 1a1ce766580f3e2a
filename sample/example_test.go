package sample_test

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/sample"
)

// Sample a two-layer minibatch around one seed of a small graph.
func Example() {
	// Edges src->dst: node 0 has in-neighbours 1, 2, 3; node 1 has 4 and 5.
	src := []int32{1, 2, 3, 4, 5}
	dst := []int32{0, 0, 0, 1, 1}
	g, _ := graph.Build(context.Background(), 6, src, dst, nil, graph.BuildOptions{})

	s, err := sample.New(g, sample.Config{Fanouts: []int{-1, 1}}) // all neighbours, then one
	if err != nil {
		panic(err)
	}
	mb, err := s.Sample([]int32{0}, 42)
	if err != nil {
		panic(err)
	}
	for i, b := range mb.Blocks {
		fmt.Printf("block %d: %d dst of %d src, %d edges\n", i, b.NumDst, b.NumSrc, b.NumEdges())
	}
	// Block sources are prefixes of the input nodes (global ids), and every
	// block's destinations are its first sources.
	out := mb.Blocks[1] // the output layer: destinations are the seeds
	fmt.Println("seed", mb.Seeds, "in-neighbours", mb.InputNodes[out.NumDst:out.NumSrc])
	// Output:
	// block 0: 4 dst of 5 src, 2 edges
	// block 1: 1 dst of 4 src, 3 edges
	// seed [0] in-neighbours [1 2 3]
}

func ExampleParseFanouts() {
	f, err := sample.ParseFanouts("15, 10, 5")
	fmt.Println(f, err)
	_, err = sample.ParseFanouts("25,0")
	fmt.Println(err)
	// Output:
	// [15 10 5] <nil>
	// fanouts "25,0": sample: fanout 0 of hop 1; use a positive count or -1 for all neighbours
}
