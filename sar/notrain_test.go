package sar

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/graphmill/graphmill/dataset/parts"
)

// TestRankWithoutTrainingNodes: with --mfg, a rank whose nodes are not
// in the training split computes nothing in the last layer yet takes part
// in every exchange; the step is the single process's.
func TestRankWithoutTrainingNodes(t *testing.T) {
	f := coraFixture(t)
	isTrain := make([]bool, f.d.Meta.NumNodes)
	for _, v := range f.d.Train {
		isTrain[v] = true
	}
	assign := make([]int32, f.d.Meta.NumNodes)
	for i := range assign {
		if !isTrain[i] {
			assign[i] = int32(1 + i%3) // parts 1-3: no training node
		}
	}
	dir := filepath.Join(t.TempDir(), "notrain")
	if _, err := parts.Write(context.Background(), f.d, assign, 4, dir, parts.WriteOptions{Method: "by hand"}); err != nil {
		t.Fatal(err)
	}
	for name, c := range testConfigs() {
		wantLoss, _ := f.reference(t, c, 4)
		for _, mfg := range []bool{false, true} {
			if mfg && name == "gin" {
				continue // batch norm: refused with --mfg (TestStepEquivalence)
			}
			t.Run(fmt.Sprintf("%s/mfg=%v", name, mfg), func(t *testing.T) {
				onRanks(t, dir, 4, func(rank int, s *Shard) error {
					m, err := NewModel(s, c)
					if err != nil {
						return err
					}
					e := NewEngine(s, SAR)
					e.MFG = mfg
					res, err := e.Grad(context.Background(), m, 4)
					if err != nil {
						return err
					}
					if d := (res.Loss - wantLoss) / wantLoss; d > 1e-5 || d < -1e-5 {
						return fmt.Errorf("loss %v, single process %v", res.Loss, wantLoss)
					}
					return nil
				})
			})
		}
	}
}
