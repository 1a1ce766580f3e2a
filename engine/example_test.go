package engine_test

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sample"
)

// One training step of a 2-layer GraphSAGE on a sampled batch, unbounded
// and then under a memory bound that cuts it into micro-batches.
func Example() {
	// A ring of 8 nodes, edges both ways.
	var src, dst []int32
	for v := int32(0); v < 8; v++ {
		src, dst = append(src, v, (v+1)%8), append(dst, (v+1)%8, v)
	}
	g, _ := graph.Build(context.Background(), 8, src, dst, nil, graph.BuildOptions{})
	s, _ := sample.New(g, sample.Config{Fanouts: []int{-1, -1}})
	mb, _ := s.Sample([]int32{0, 4}, 1)
	mb.Labels = []int32{0, 1}
	x := mb.Features.SetF32(len(mb.InputNodes), 4)
	for i := range x {
		x[i] = float32(i%5) / 5
	}

	m, _ := nn.NewModel(nn.Config{Kind: nn.SAGE, In: 4, Hidden: 8, Out: 2, Layers: 2}, nil)
	opt, _ := nn.NewOptimizer(nn.OptimConfig{Name: "adam", LR: 0.01})
	for _, bound := range []int64{0, 1000} {
		e := engine.New(m, opt, engine.Config{Bound: bound})
		res, err := e.Train(context.Background(), mb, engine.Step{Seed: 1})
		if err != nil {
			panic(err)
		}
		fmt.Printf("bound %d: %d labelled seeds, %d micro-batches\n", bound, res.Total, res.Micro)
	}
	// Output:
	// bound 0: 2 labelled seeds, 1 micro-batches
	// bound 1000: 2 labelled seeds, 2 micro-batches
}
