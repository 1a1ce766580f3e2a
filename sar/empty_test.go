package sar

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/nn"
)

// TestEmptyPart: when a rank's parts hold no node, every rank refuses
// with the same message; with fewer ranks (its parts merged with
// non-empty ones) the result is the single process's.
func TestEmptyPart(t *testing.T) {
	f := coraFixture(t)
	assign := make([]int32, f.d.Meta.NumNodes)
	for i := range assign {
		if i%2 == 1 {
			assign[i] = 2 // parts 0 and 2 hold nodes; parts 1 and 3 none
		}
	}
	dir := filepath.Join(t.TempDir(), "empty")
	if _, err := parts.Write(context.Background(), f.d, assign, 4, dir, parts.WriteOptions{Method: "by hand"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gs, err := dist.LocalGroup(ctx, 4, dist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for r := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer gs[r].Close()
			if _, err := Open(ctx, gs[r], dir, ShardOptions{}); err == nil || !strings.Contains(err.Error(), "2 of 4 ranks would hold no node") {
				t.Errorf("rank %d: %v", r, err)
			}
		}()
	}
	wg.Wait()
	for _, kind := range []nn.Kind{nn.GCN, nn.GAT} {
		c := testConfigs()[string(kind)]
		wantLoss, _ := f.reference(t, c, 9)
		onRanks(t, dir, 2, func(rank int, s *Shard) error {
			m, err := NewModel(s, c)
			if err != nil {
				return err
			}
			res, err := NewEngine(s, SAR).Grad(ctx, m, 9)
			if err != nil {
				return err
			}
			if d := (res.Loss - wantLoss) / wantLoss; d > 1e-5 || d < -1e-5 {
				t.Errorf("%s on 2 ranks: loss %v, single process %v", kind, res.Loss, wantLoss)
			}
			return nil
		})
	}
}
