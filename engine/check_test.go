package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sample"
)

// TestBadBatchIsAnError: a label at or past the model's class count, and
// a degree table that does not cover the batch's nodes, are errors naming
// them, not panics in the loss or the GCN normalisation.
func TestBadBatchIsAnError(t *testing.T) {
	ctx := context.Background()
	var src, dst []int32
	for v := int32(0); v < 8; v++ {
		src, dst = append(src, v, (v+1)%8), append(dst, (v+1)%8, v)
	}
	g, err := graph.Build(ctx, 8, src, dst, nil, graph.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deg := make([]float32, 8)
	for v, d := range g.InDegrees() {
		deg[v] = float32(d)
	}
	mkBatch := func(labels []int32) *batch.MiniBatch {
		s, err := sample.New(g, sample.Config{Fanouts: []int{-1, -1}})
		if err != nil {
			t.Fatal(err)
		}
		mb, err := s.Sample([]int32{0, 4}, 1)
		if err != nil {
			t.Fatal(err)
		}
		mb.Labels = labels
		x := mb.Features.SetF32(len(mb.InputNodes), 4)
		for i := range x {
			x[i] = float32(i%5) / 5
		}
		return mb
	}
	model := func(kind nn.Kind, deg []float32) *nn.Model {
		m, err := nn.NewModel(nn.Config{Kind: kind, In: 4, Hidden: 8, Out: 2, Layers: 2}, deg)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		m      *nn.Model
		labels []int32
		infer  bool
		want   string // "": no error
	}{
		{"labels in range", model(nn.SAGE, nil), []int32{0, 1}, false, ""},
		{"unlabelled seed", model(nn.SAGE, nil), []int32{-1, 1}, false, ""},
		{"label past the classes", model(nn.SAGE, nil), []int32{0, 5}, false, "has label 5, but the model predicts 2 classes"},
		{"label = classes", model(nn.SAGE, nil), []int32{2, 0}, false, "seed 0 (node 0) has label 2"},
		{"gcn, every degree", model(nn.GCN, deg), []int32{0, 1}, false, ""},
		{"gcn, short degrees", model(nn.GCN, deg[:2]), []int32{0, 1}, false, "degree table holds 2 nodes"},
		{"gcn, no degrees", model(nn.GCN, []float32{}), []int32{0, 1}, false, "has no degree table"},
		{"gcn infer, short degrees", model(nn.GCN, deg[:2]), nil, true, "degree table holds 2 nodes"},
		{"sage, short degrees (unused)", model(nn.SAGE, deg[:2]), []int32{0, 1}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt, _ := nn.NewOptimizer(nn.OptimConfig{Name: "adam", LR: 0.01})
			e := New(tc.m, opt, Config{})
			var err error
			if tc.infer {
				_, err = e.Infer(ctx, nil, mkBatch(tc.labels))
			} else {
				_, err = e.Train(ctx, mkBatch(tc.labels), Step{})
			}
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	mb := mkBatch([]int32{0, 7})
	if _, _, _, err := ScoreBlocks(ctx, model(nn.SAGE, nil), mb); err == nil || !strings.Contains(err.Error(), "has label 7") {
		t.Errorf("ScoreBlocks with label 7 of 2 classes: %v", err)
	}
	if _, err := New(nil, nil, Config{}).Infer(ctx, nil, mb); err == nil {
		t.Error("Infer without a model accepted")
	}
}
