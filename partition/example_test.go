package partition_test

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/partition"
)

// Partition a 20x20 grid into 4 parts and make each part's nodes
// contiguous.
func Example() {
	const w = 20
	var src, dst []int32
	for v := int32(0); v < w*w; v++ {
		if v%w+1 < w {
			src, dst = append(src, v), append(dst, v+1)
		}
		if v+w < w*w {
			src, dst = append(src, v), append(dst, v+w)
		}
	}
	ctx := context.Background()
	g, err := partition.FromEdges(ctx, w*w, src, dst, 0)
	if err != nil {
		panic(err)
	}
	res, err := partition.Partition(ctx, g, partition.Options{Parts: 4, Seed: 1})
	if err != nil {
		panic(err)
	}
	// order[newID] = oldID; part p owns new ids offsets[p]..offsets[p+1]-1.
	order, offsets := parts.Reorder(res.Parts, res.NumParts)
	fmt.Println("nodes:", len(order), "parts:", len(offsets)-1, "first part starts at", offsets[0])
	fmt.Println("balanced:", res.Stats.Imbalance <= partition.DefaultImbalance)
	fmt.Println("cut at most 50 of", g.NumEdges(), "edges:", res.Stats.EdgeCut <= 50)
	// Output:
	// nodes: 400 parts: 4 first part starts at 0
	// balanced: true
	// cut at most 50 of 760 edges: true
}
