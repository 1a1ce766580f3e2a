package main

import (
	"context"
	"io"
	"math"
	"slices"
	"testing"

	"github.com/graphmill/graphmill/nn"
)

// TestCustomLayer trains the layer defined here in every mode: each
// reaches GraphSAGE's accuracy on Cora (PyG's example reports 79-81 %
// for mean aggregation; the pooling aggregator is within a few points),
// and two-rank SAR reaches the full-graph run's accuracy (the same
// gradients, up to float32 rounding).
func TestCustomLayer(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four models")
	}
	acc, err := run(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"full", "sampled", "gas", "sar"} {
		if acc[mode] < 0.74 {
			t.Errorf("%s: test accuracy %.3f", mode, acc[mode])
		}
	}
	if d := math.Abs(acc["sar"] - acc["full"]); d > 0.006 {
		t.Errorf("two-rank SAR %.3f, full graph %.3f", acc["sar"], acc["full"])
	}
	if acc["reloaded"] != acc["full"] {
		t.Errorf("saved and reloaded: test accuracy %.4f, trained %.4f", acc["reloaded"], acc["full"])
	}
}

// TestTensorNames: the layer's tensors get PyG's names, convs.{l}.{name}
// (the model adds the layer's prefix; the layer names its tensors within
// itself).
func TestTensorNames(t *testing.T) {
	m, err := nn.NewModel(nn.Config{Kind: Kind, In: 8, Hidden: 16, Out: 3, Layers: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := m.NamedParams()
	want := []string{
		"convs.0.pool.weight", "convs.0.pool.bias", "convs.0.self.weight", "convs.0.self.bias", "convs.0.neigh.weight",
		"convs.1.pool.weight", "convs.1.pool.bias", "convs.1.self.weight", "convs.1.self.bias", "convs.1.neigh.weight",
	}
	if !slices.Equal(names, want) {
		t.Errorf("tensor names %v, want %v", names, want)
	}
}
