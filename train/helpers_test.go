package train

import (
	"context"
	"testing"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/partition"
	"github.com/graphmill/graphmill/safetensors"
)

func readCheckpoint(t *testing.T, path string) (*safetensors.File, error) {
	t.Helper()
	f, err := safetensors.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return f, nil
}

// withTestParts gives GAS runs in tests the multilevel partitioner, as
// graphmill train does (the train package itself does not import it).
var withTestParts = WithPartitioner(func(ctx context.Context, g *graph.CSC, parts int, seed uint64, workers int) ([]int32, error) {
	pg, err := partition.FromCSC(ctx, g, workers)
	if err != nil {
		return nil, err
	}
	res, err := partition.Partition(ctx, pg, partition.Options{Parts: parts, Seed: seed, Workers: workers})
	if err != nil {
		return nil, err
	}
	return res.Parts, nil
})
