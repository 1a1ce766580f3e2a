package train

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	coradata "github.com/graphmill/graphmill/dataset/cora"
	"github.com/graphmill/graphmill/importer"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// weightedConv is GraphConv by the dataset's edge weights, written as a
// user's layer: the fused Conv by nn.AggWeighted.
type weightedConv struct {
	Lin, Root *nn.Linear
	relu      bool
}

func (l *weightedConv) Forward(tp *autograd.Tape, b *nn.Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	return b.Conv(tp, x, nn.Conv{Agg: nn.AggWeighted, W: l.Lin.W, Root: l.Root.W, Bias: l.Lin.B, ReLU: l.relu})
}
func (l *weightedConv) Params() []*autograd.Var { return append(l.Lin.Params(), l.Root.W) }
func (l *weightedConv) OutDim() int             { return l.Lin.W.Value.Rows }

// testWeightedKind needs a dataset with edge weights: TestEveryKindEveryMode
// (on Cora, which has none) leaves "test-" kinds out.
const testWeightedKind nn.Kind = "test-weighted-conv"

func init() {
	nn.Register(nn.Spec{Kind: testWeightedKind, Help: "GraphConv by edge weights (tests only)", EdgeWeights: true, Build: func(ini *nn.Init, c *nn.Config, _ []float32) ([]nn.Layer, error) {
		return nn.StackLayers(c, func(l, in, out int) nn.Layer {
			return &weightedConv{Lin: ini.Linear("lin.", in, out, true), Root: ini.Linear("root.", in, out, false), relu: l < c.Layers-1}
		}), nil
	}})
}

// weightedCora imports Cora's edges from a "src dst weight" edge list (the
// weights w(i), or 1 when w is nil) with Cora's features, labels and split.
func weightedCora(t *testing.T, w func(i int) float32) *dataset.Dataset {
	t.Helper()
	raw, err := coradata.Raw()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString("# src dst weight\n")
	for i := range raw.Src {
		fmt.Fprintf(&sb, "%d %d %g\n", raw.Src[i], raw.Dst[i], w(i))
	}
	el, info, err := importer.ReadEdgeList(strings.NewReader(sb.String()), "cora.txt", importer.EdgeListOptions{Relabel: importer.RelabelNever, NumNodes: raw.NumNodes, Build: raw.Build})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Weighted || el.EdgeWeights == nil {
		t.Fatal("the edge list's weight column was not read")
	}
	raw.Src, raw.Dst, raw.EdgeWeights = el.Src, el.Dst, el.EdgeWeights
	d := writeDataset(t, "wcora", raw)
	if d.Graph.Weights == nil {
		t.Fatal("the dataset lost its edge weights")
	}
	return d
}

// TestEdgeWeightsEveryMode: a layer aggregating by the dataset's edge
// weights (imported from a weighted edge list) sees the same weights in
// every mode: full graph, sampled blocks (whole neighbourhoods, one batch
// of every training node, also split into micro-batches under a memory
// bound) and GNNAutoScale (one part) give the first epoch's loss of the
// full graph, and they all differ from the same graph with unit weights.
// Then each mode trains.
func TestEdgeWeightsEveryMode(t *testing.T) {
	weighted := weightedCora(t, func(i int) float32 { return 0.25 + float32(i%7)/4 })
	unit := weightedCora(t, func(int) float32 { return 1 })
	cfg := Defaults(testWeightedKind)
	cfg.Model.Dropout, cfg.Epochs, cfg.Patience = 0, 1, 0
	cfg.Fanouts = []int{-1, -1}
	cfg.BatchSize = 140 // Cora's training nodes, one batch
	cfg.Parts, cfg.PartsPerBatch = 1, 1
	first := func(d *dataset.Dataset, mode Mode, bound int64) float64 {
		c := cfg
		c.Mode, c.MaxMemoryBytes = mode, bound
		res := run(t, d, c)
		if h := res.History[0]; bound > 0 && h.MicroBatches < 2 {
			t.Fatalf("%s under a bound of %d bytes ran %d micro-batches, want several", mode, bound, h.MicroBatches)
		}
		return res.History[0].Loss
	}
	want := first(weighted, Full, 0)
	for _, tc := range []struct {
		name  string
		mode  Mode
		bound int64
	}{{"sampled", Sampled, 0}, {"sampled/micro-batches", Sampled, 2 << 20}, {"gas", GAS, 0}} {
		if got := first(weighted, tc.mode, tc.bound); math.Abs(got-want) > 1e-5*want {
			t.Errorf("%s: first loss %.7f, full graph %.7f", tc.name, got, want)
		}
	}
	if u := first(unit, Full, 0); math.Abs(u-want) < 1e-3*want {
		t.Fatalf("unit weights give the loss of the weighted graph (%.7f): the weights are not used", u)
	}
	// A dataset without weights is refused before training.
	if _, err := NewRunner(cora(t), cfg, Hooks{}); err == nil || !strings.Contains(err.Error(), "edge weights") {
		t.Fatalf("a dataset without edge weights: %v, want a refusal", err)
	}
	for _, mode := range []Mode{Full, Sampled, GAS} {
		c := Defaults(testWeightedKind)
		c.Mode, c.Epochs, c.Patience = mode, 30, 0
		c.BatchSize, c.Parts, c.PartsPerBatch = 140, 8, 4
		res := run(t, weighted, c)
		if acc := res.Summary.TestAcc; acc < 0.6 {
			t.Errorf("%s: test accuracy %.3f after 30 epochs", mode, acc)
		}
	}
}
