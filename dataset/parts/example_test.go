package parts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/graph"
)

// Split a 6-node path 0-1-2-3-4-5 into two parts (here by hand; package
// partition computes good assignments) and open part 1 as a worker would.
func Example() {
	tmp, err := os.MkdirTemp("", "graphmill-parts-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)
	ctx := context.Background()
	raw := &dataset.Raw{Name: "path", NumNodes: 6,
		Src: []int32{0, 1, 2, 3, 4}, Dst: []int32{1, 2, 3, 4, 5},
		Build: graph.BuildOptions{Symmetrize: true}}
	if err := dataset.Write(ctx, filepath.Join(tmp, "path"), raw, dataset.WriteOptions{}); err != nil {
		panic(err)
	}
	d, err := dataset.Open(filepath.Join(tmp, "path"))
	if err != nil {
		panic(err)
	}
	defer d.Close()
	dir := filepath.Join(tmp, "path-2")
	if _, err := parts.Write(ctx, d, []int32{0, 0, 0, 1, 1, 1}, 2, dir, parts.WriteOptions{Method: "by hand"}); err != nil {
		panic(err)
	}

	book, err := parts.ReadBook(dir)
	if err != nil {
		panic(err)
	}
	p, err := parts.OpenPart(dir, book, 1)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	fmt.Println("inner", p.NumInner(), "halo", p.NumLocal()-p.NumInner())
	fmt.Println("global ids", p.GlobalIDs)
	fmt.Println("global in-degrees", p.InDegrees, "local in-degrees", p.Graph.InDegrees())
	fmt.Println("halo node 3 is local", p.HaloLocal[0], "of part", p.HaloParts[0])
	// Output:
	// inner 3 halo 1
	// global ids [3 4 5 2]
	// global in-degrees [2 2 1 2] local in-degrees [2 2 1 0]
	// halo node 3 is local 2 of part 0
}
