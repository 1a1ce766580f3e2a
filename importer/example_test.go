package importer_test

import (
	"fmt"
	"strings"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/importer"
)

// An edge list with comments, a weight column and sparse ids, relabelled to
// dense ids 0..n-1.
func ExampleReadEdgeList() {
	const text = `# from to weight
10	20	0.5
20	30	1.5
30	10	2
`
	raw, info, err := importer.ReadEdgeList(strings.NewReader(text), "toy.txt", importer.EdgeListOptions{
		Relabel: importer.RelabelAlways,
		Build:   graph.BuildOptions{Symmetrize: true, Dedup: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(raw.NumNodes, raw.Src, raw.Dst, raw.EdgeWeights)
	fmt.Println("original ids:", info.OrigIDs)
	// Output:
	// 3 [0 1 2] [1 2 0] [0.5 1.5 2]
	// original ids: [10 20 30]
}

// Errors name the input and the line.
func ExampleReadMETIS() {
	_, err := importer.ReadMETIS(strings.NewReader("3 2\n2\n1 4\n\n"), "bad.graph")
	fmt.Println(err)
	// Output:
	// bad.graph: line 3 (vertex 2): neighbour 4 out of range [1,3]
}

func ExamplePlanetoid() {
	// testdata/planetoid holds Cora's original Planetoid files.
	raw, err := importer.Planetoid("testdata/planetoid", "cora")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(raw.NumNodes, raw.FeatureDim, raw.NumClasses, len(raw.Train), len(raw.Val), len(raw.Test))
	// Output: 2708 1433 7 140 500 1000
}
