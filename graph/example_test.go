package graph_test

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/graph"
)

// Build an undirected graph from an edge list with a repeated edge and a
// self-loop, as the Planetoid importer asks for, and read it back.
func ExampleBuild() {
	src := []int32{0, 0, 1, 2, 3, 3}
	dst := []int32{1, 1, 2, 2, 0, 2}
	g, err := graph.Build(context.Background(), 4, src, dst, nil, graph.BuildOptions{
		Symmetrize: true, Dedup: true, SelfLoops: graph.RemoveSelfLoops,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("nodes", g.NumNodes, "stored edges", g.NumEdges())
	for v := int32(0); v < int32(g.NumNodes); v++ {
		fmt.Printf("in-neighbours of %d: %v\n", v, g.InNeighbors(v))
	}
	fmt.Println("in-degrees", g.InDegrees())
	st := graph.Stats(g.InDegrees())
	fmt.Println("max", st.Max, "mean", st.Mean)
	// Output:
	// nodes 4 stored edges 8
	// in-neighbours of 0: [1 3]
	// in-neighbours of 1: [0 2]
	// in-neighbours of 2: [1 3]
	// in-neighbours of 3: [0 2]
	// in-degrees [2 2 2 2]
	// max 2 mean 2
}

// The CSC stores in-neighbours; Reverse gives the out-neighbours.
func ExampleCSC_Reverse() {
	g, err := graph.Build(context.Background(), 3, []int32{0, 0, 1}, []int32{1, 2, 2}, nil, graph.BuildOptions{})
	if err != nil {
		panic(err)
	}
	r := g.Reverse(1)
	fmt.Println("0 receives from", g.InNeighbors(0), "and sends to", r.InNeighbors(0))
	fmt.Println("2 receives from", g.InNeighbors(2), "and sends to", r.InNeighbors(2))
	fmt.Println("out-degrees", g.OutDegrees())
	// Output:
	// 0 receives from [] and sends to [1 2]
	// 2 receives from [0 1] and sends to []
	// out-degrees [2 1 0]
}
