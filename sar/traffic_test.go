package sar

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/graphmill/graphmill/dataset/parts"
)

// componentsPartition writes Cora in 4 parts where part 0 is whole
// connected components apart from the giant one (as CiteSeer's part 0
// under a 4-way partition: no halo, no boundary row) and parts 1-3 share
// the rest node by node (many halos).
func componentsPartition(t *testing.T, f *fixture) string {
	t.Helper()
	g := f.d.Graph
	root := make([]int32, g.NumNodes)
	for i := range root {
		root[i] = int32(i)
	}
	var find func(v int32) int32
	find = func(v int32) int32 {
		for root[v] != v {
			root[v] = root[root[v]]
			v = root[v]
		}
		return v
	}
	for v := range int32(g.NumNodes) {
		for _, u := range g.InNeighbors(v) {
			if a, b := find(u), find(v); a != b {
				root[a] = b
			}
		}
	}
	size := map[int32]int{}
	for v := range int32(g.NumNodes) {
		size[find(v)]++
	}
	giant := int32(0)
	for r, n := range size {
		if n > size[giant] {
			giant = r
		}
	}
	assign := make([]int32, g.NumNodes)
	inZero := 0
	for v := range int32(g.NumNodes) {
		if find(v) == giant {
			assign[v] = 1 + v%3
		} else {
			inZero++
		}
	}
	if inZero == 0 || inZero > g.NumNodes/4 {
		t.Fatalf("part 0 would hold %d of %d nodes", inZero, g.NumNodes)
	}
	dir := filepath.Join(t.TempDir(), "components")
	if _, err := parts.Write(context.Background(), f.d, assign, 4, dir, parts.WriteOptions{Method: "by hand"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGatherTraffic: the bytes every rank sent, gathered, are each rank's
// own counters on every rank; over all ranks the training steps' rows and
// gradients are > 0 where parts have halos and equal the sum of the ranks'
// analytic minimum (MinBytesPerStep × steps) exactly, rank by rank, in
// every mode (less with message flow graphs); evaluation's rows are
// counted apart; a rank without halo sends no row, the others do.
func TestGatherTraffic(t *testing.T) {
	f := coraFixture(t)
	comps := componentsPartition(t, f)
	const steps = 2
	cases := []struct {
		name  string
		dir   string
		ranks int
		model string
		mode  Mode
		mfg   bool
		noRow int // a rank whose parts have no halo (-1: none)
	}{
		{"metis/gcn/sar/N=4", f.dir, 4, "gcn", SAR, false, -1},
		{"metis/gcn/sar/N=2", f.dir, 2, "gcn", SAR, false, -1},
		{"metis/sage/one-shot/N=4", f.dir, 4, "sage", OneShot, false, -1},
		{"metis/gat/sar/N=4", f.dir, 4, "gat", SAR, false, -1},
		{"metis/gat/sa/N=2", f.dir, 2, "gat", SA, false, -1},
		{"metis/appnp/sar/N=4", f.dir, 4, "appnp", SAR, false, -1},
		{"metis/gcn/sar+mfg/N=4", f.dir, 4, "gcn", SAR, true, -1},
		{"components/gcn/sar/N=4", comps, 4, "gcn", SAR, false, 0},
		{"components/gat/one-shot/N=4", comps, 4, "gat", OneShot, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfigs()[tc.model]
			own := make([]Traffic, tc.ranks)      // each rank's counters
			full := make([]int64, tc.ranks)       // each rank's MinBytesPerStep × steps
			halo := make([]bool, tc.ranks)        // whether the rank sends or fetches rows
			got := make([]GroupTraffic, tc.ranks) // what each rank gathered
			onRanks(t, tc.dir, tc.ranks, func(rank int, s *Shard) error {
				ctx := context.Background()
				m, err := NewModel(s, c)
				if err != nil {
					return err
				}
				e := NewEngine(s, tc.mode)
				e.MFG = tc.mfg
				for i := range steps {
					if _, err := e.Grad(ctx, m, uint64(i)); err != nil {
						return err
					}
				}
				if _, err := e.Evaluate(ctx, m); err != nil {
					return err
				}
				own[rank], full[rank] = e.Traffic(), steps*e.MinBytesPerStep(m)
				halo[rank] = s.Boundary()+s.Fetched() > 0
				got[rank], err = e.GatherTraffic(ctx)
				if err != nil {
					return err
				}
				if e.Traffic() != own[rank] {
					return fmt.Errorf("the gather was counted: %+v, before it %+v", e.Traffic(), own[rank])
				}
				return nil
			})
			g := got[0]
			for r := range got {
				if !reflect.DeepEqual(got[r], g) {
					t.Fatalf("rank %d gathered %+v, rank 0 %+v", r, got[r], g)
				}
			}
			if !reflect.DeepEqual(g.Ranks, own) {
				t.Fatalf("gathered %+v, the ranks' own counters %+v", g.Ranks, own)
			}
			var sum Traffic
			var sumFull int64
			for r, tr := range own {
				sum = sum.add(tr)
				sumFull += full[r]
				if tr.Sent() > g.Ranks[g.Busiest].Sent() {
					t.Errorf("busiest rank %d sent %d, rank %d %d", g.Busiest, g.Ranks[g.Busiest].Sent(), r, tr.Sent())
				}
				if tr.Steps != steps || tr.Reduce == 0 {
					t.Errorf("rank %d: %d steps, %d bytes all-reduced", r, tr.Steps, tr.Reduce)
				}
				switch {
				case !halo[r]:
					if tr.Exchange != 0 || full[r] != 0 {
						t.Errorf("rank %d has no halo and sent %d bytes of rows and gradients (minimum %d)", r, tr.Exchange, full[r])
					}
				case tc.mfg:
					if tr.MinStepExchange != 0 || tr.StepExchange > full[r] {
						t.Errorf("rank %d (mfg): steps sent %d bytes, a full-graph step's minimum %d; reported minimum %d, want 0", r, tr.StepExchange, full[r], tr.MinStepExchange)
					}
				default:
					if tr.StepExchange != full[r] || tr.MinStepExchange != full[r] {
						t.Errorf("rank %d: steps sent %d bytes of rows and gradients, reported minimum %d, MinBytesPerStep × %d %d", r, tr.StepExchange, tr.MinStepExchange, steps, full[r])
					}
				}
				if halo[r] && tr.Exchange <= tr.StepExchange {
					t.Errorf("rank %d: evaluation sent no row (%d bytes in all, %d in the steps)", r, tr.Exchange, tr.StepExchange)
				}
			}
			if g.Total != sum {
				t.Errorf("total %+v, sum of the ranks %+v", g.Total, sum)
			}
			if g.Total.StepExchange <= 0 {
				t.Errorf("the ranks' steps sent %d bytes of rows and gradients, over parts with halos", g.Total.StepExchange)
			}
			if !tc.mfg && g.Total.StepExchange != sumFull {
				t.Errorf("the ranks' steps sent %d bytes of rows and gradients, their analytic minimum is %d", g.Total.StepExchange, sumFull)
			}
			if tc.noRow >= 0 {
				if halo[tc.noRow] || g.Ranks[tc.noRow].Exchange != 0 || g.Busiest == tc.noRow {
					t.Errorf("rank %d: halo %v, sent %d bytes of rows and gradients, busiest rank %d", tc.noRow, halo[tc.noRow], g.Ranks[tc.noRow].Exchange, g.Busiest)
				}
			}
			pe := g.PerEpoch(steps)
			if pe.Ranks != tc.ranks || pe.StepExchange != g.Total.StepExchange/steps || pe.Sent != g.Total.Sent()/steps ||
				pe.BusiestRank != g.Busiest || len(pe.RankExchange) != tc.ranks || pe.RankExchange[0] != own[0].Exchange/steps {
				t.Errorf("per epoch %+v from %+v", pe, g)
			}
		})
	}
}
