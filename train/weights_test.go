package train

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
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
	dir := filepath.Join(t.TempDir(), "wcora")
	if err := dataset.Write(context.Background(), dir, raw, dataset.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
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

// TestSampledEvalMatchesLayerwise: evaluation on neighbourhoods sampled
// with every fanout -1 gives layer-wise inference's scores, for a model
// with degrees (GCN) and one without (SAGE); real fanouts give others.
func TestSampledEvalMatchesLayerwise(t *testing.T) {
	d := cora(t)
	for _, kind := range []nn.Kind{nn.GCN, nn.SAGE} {
		cfg := Defaults(kind)
		cfg.Epochs, cfg.BatchSize = 3, 128
		r, err := NewRunner(d, cfg, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want, err := r.Evaluate(context.Background(), res.Model)
		if err != nil {
			t.Fatal(err)
		}
		for _, fan := range [][]int{{-1, -1}, {2, 2}} {
			r.cfg.EvalFanouts = fan
			got, err := r.Evaluate(context.Background(), res.Model)
			r.cfg.EvalFanouts = nil
			if err != nil {
				t.Fatal(err)
			}
			same := got.ValAcc == want.ValAcc && got.TestAcc == want.TestAcc && math.Abs(got.ValLoss-want.ValLoss) < 1e-5
			if full := fan[0] == -1; same != full {
				t.Errorf("%s with eval fanouts %v: %+v, layer-wise %+v", kind, fan, got, want)
			}
		}
	}
}

// TestChooseEval: from disk, evaluation goes to sampled neighbourhoods
// (the training fanouts) when every node's hidden rows would take more
// than half the memory available, and says so; not when they fit, when
// fanouts were given or when there is no evaluation.
func TestChooseEval(t *testing.T) {
	d := cora(t)
	for _, tc := range []struct {
		name  string
		avail int64
		edit  func(*Config)
		want  []int
	}{
		{"fits", 1 << 30, nil, nil},
		{"too small", 100 << 10, nil, []int{25, 10}},
		{"given", 100 << 10, func(c *Config) { c.EvalFanouts = []int{-1, -1} }, []int{-1, -1}},
		{"no eval", 100 << 10, func(c *Config) { c.SkipEval = true }, nil},
	} {
		cfg := Defaults(nn.SAGE)
		cfg.Mode, cfg.Fanouts = Sampled, []int{25, 10}
		if tc.edit != nil {
			tc.edit(&cfg)
		}
		r, err := NewRunner(d, cfg, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		note := r.chooseEval(tc.avail)
		if !slices.Equal(r.cfg.EvalFanouts, tc.want) || (note != "") != (tc.name == "too small") {
			t.Errorf("%s: eval fanouts %v (want %v), note %q", tc.name, r.cfg.EvalFanouts, tc.want, note)
		}
	}
}

// TestSparseInputFullGraph: full-graph training over Cora's mostly-zero
// features takes the sparse path (input dropout and the first product over
// the nonzeros) and follows the dense path's losses to float32 rounding,
// for a model whose first op is a product (GCN) and one that also reads
// the rows whole (SAGE).
func TestSparseInputFullGraph(t *testing.T) {
	d := cora(t)
	old := sparseInputDensity
	defer func() { sparseInputDensity = old }()
	for _, kind := range []nn.Kind{nn.GCN, nn.SAGE} {
		cfg := Defaults(kind)
		cfg.Mode, cfg.Epochs, cfg.Patience = Full, 6, 0
		losses := map[bool][]float64{}
		for _, sparse := range []bool{true, false} {
			if sparseInputDensity = old; !sparse {
				sparseInputDensity = -1 // never sparse enough
			}
			r, err := NewRunner(d, cfg, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := r.NewModel()
			st, err := r.fullStepper(context.Background(), m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.(*fullStepper).sparse; got != sparse {
				t.Fatalf("%s: sparse path %v, want %v (Cora's features are 98.7 %% zeros)", kind, got, sparse)
			}
			for _, h := range run(t, d, cfg).History {
				losses[sparse] = append(losses[sparse], h.Loss)
			}
		}
		for i, want := range losses[false] {
			if got := losses[true][i]; math.Abs(got-want) > 1e-5*want {
				t.Errorf("%s epoch %d: loss %.8f with the sparse input, %.8f dense", kind, i, got, want)
			}
		}
	}
}
