package dataset_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
)

// Write a small dataset in the native format (one .npy per array plus
// meta.json, written atomically) and open it again, memory-mapped.
func Example() {
	tmp, err := os.MkdirTemp("", "graphmill-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "triangle")

	raw := &dataset.Raw{
		Name:     "triangle",
		NumNodes: 3,
		Src:      []int32{0, 1, 2},
		Dst:      []int32{1, 2, 0},
		Build:    graph.BuildOptions{Symmetrize: true},
		Features: []float32{1, 0, 0, 1, 1, 1}, FeatureDim: 2,
		Labels: []int32{0, 1, -1}, NumClasses: 2,
		Train: []int32{0}, Val: []int32{1},
	}
	ctx := context.Background()
	if err := dataset.Write(ctx, dir, raw, dataset.WriteOptions{}); err != nil {
		panic(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		panic(err)
	}
	defer d.Close()
	if err := d.Verify(ctx); err != nil { // checks every edge too
		panic(err)
	}
	m := d.Meta
	fmt.Println(m.Name, "nodes", m.NumNodes, "edges", m.NumEdges, "features", m.FeatureDim, "classes", m.NumClasses)
	fmt.Println("in-neighbours of 0:", d.Graph.InNeighbors(0))
	fmt.Println("features of 1:", d.Features[2:4], "label of 2:", d.Labels[2])
	fmt.Println("train", d.Train, "val", d.Val, "test", d.Test)

	// Opening something else is a one-line error naming the problem.
	_, err = dataset.Open(tmp)
	fmt.Println(strings.Replace(err.Error(), tmp, "DIR", 1))
	// Output:
	// triangle nodes 3 edges 6 features 2 classes 2
	// in-neighbours of 0: [1 2]
	// features of 1: [0 1] label of 2: -1
	// train [0] val [1] test []
	// DIR: not a graphmill dataset (no meta.json); import one with 'graphmill data import'
}
