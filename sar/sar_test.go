package sar

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/cora"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/partition"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
	"github.com/graphmill/graphmill/train"
)

func TestDropFactorsMatchTensorDropout(t *testing.T) {
	for _, tc := range []struct {
		rows, cols int
		p          float64
	}{{40, 1433, 0.5}, {3000, 7, 0.6}, {100, 64, 0.1}, {5, 16384, 0.5}, {9, 16385, 0.3}} {
		x := tensor.New(tc.rows, tc.cols)
		for i := range x.Data {
			x.Data[i] = 1
		}
		want := tensor.New(tc.rows, tc.cols)
		out := tensor.New(tc.rows, tc.cols)
		if err := tensor.Dropout(out, want, x, tc.p, 77); err != nil {
			t.Fatal(err)
		}
		// Every row alone, in a shuffled order, gets its own factors.
		r := rng.New(1)
		rows := make([]int32, tc.rows)
		for i := range rows {
			rows[i] = int32(i)
		}
		for i := len(rows) - 1; i > 0; i-- {
			j := r.IntN(i + 1)
			rows[i], rows[j] = rows[j], rows[i]
		}
		got := make([]float32, tc.rows*tc.cols)
		dropFactors(got, rows, tc.cols, tc.p, 77)
		for i, v := range rows {
			for c := 0; c < tc.cols; c++ {
				if g, w := got[i*tc.cols+c], want.At(int(v), c); g != w {
					t.Fatalf("%dx%d p=%g: row %d col %d: factor %v, tensor.Dropout drew %v", tc.rows, tc.cols, tc.p, v, c, g, w)
				}
			}
		}
	}
}

// fixture is Cora, whole and in 4 parts.
type fixture struct {
	d    *dataset.Dataset
	dir  string
	x    tensor.Matrix
	deg  []float32
	mask []int32
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
)

func coraFixture(t *testing.T) *fixture {
	t.Helper()
	fixOnce.Do(func() { fix, fixErr = makeFixture() })
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return fix
}

var fixtureDir string

func makeFixture() (*fixture, error) {
	ctx := context.Background()
	raw, err := cora.Raw()
	if err != nil {
		return nil, err
	}
	// Edge weights, so that nn.AggWeighted runs on the shards' own
	// weights (the built-in models ignore them).
	raw.EdgeWeights = make([]float32, len(raw.Src))
	for i := range raw.EdgeWeights {
		raw.EdgeWeights[i] = 0.25 + float32(i%7)/4
	}
	dir := fixtureDir
	if err := dataset.Write(ctx, filepath.Join(dir, "cora"), raw, dataset.WriteOptions{}); err != nil {
		return nil, err
	}
	d, err := dataset.Open(filepath.Join(dir, "cora"))
	if err != nil {
		return nil, err
	}
	g, err := partition.FromCSC(ctx, d.Graph, 0)
	if err != nil {
		return nil, err
	}
	res, err := partition.Partition(ctx, g, partition.Options{Parts: 4, Seed: 1})
	if err != nil {
		return nil, err
	}
	pdir := filepath.Join(dir, "cora4")
	if _, err := parts.Write(ctx, d, res.Parts, 4, pdir, parts.WriteOptions{Method: "metis", Stats: res.Stats}); err != nil {
		return nil, err
	}
	st, err := feature.Open(d, feature.Options{Workers: 1})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if ok, err := st.NormalizeRows(ctx); err != nil || !ok {
		return nil, fmt.Errorf("normalise: %v %v", ok, err)
	}
	n := d.Meta.NumNodes
	x := tensor.New(n, d.Meta.FeatureDim)
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	if err := st.Gather(ctx, ids, x.Data); err != nil {
		return nil, err
	}
	deg := make([]float32, n)
	for i, v := range d.Graph.InDegrees() {
		deg[i] = float32(v)
	}
	mask := make([]int32, n)
	for i := range mask {
		mask[i] = -1
	}
	for _, v := range d.Train {
		mask[v] = d.Labels[v]
	}
	return &fixture{d: d, dir: pdir, x: x, deg: deg, mask: mask}, nil
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sar-test")
	if err != nil {
		panic(err)
	}
	fixtureDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// reference is one single-process full-graph step.
func (f *fixture) reference(t *testing.T, c nn.Config, seed uint64) (float64, []tensor.Matrix) {
	t.Helper()
	c.In, c.Out = f.d.Meta.FeatureDim, f.d.Meta.NumClasses
	m, err := nn.NewModel(c, f.deg)
	if err != nil {
		t.Fatal(err)
	}
	tp := autograd.NewTape()
	logits := m.Forward(tp, []*nn.Block{nn.FullGraph(f.d.Graph)}, tp.Const(f.x), true, seed)
	loss := tp.CrossEntropy(logits, f.mask)
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	var gs []tensor.Matrix
	for _, p := range m.Params() {
		gs = append(gs, p.Grad.Clone())
	}
	return float64(loss.Scalar()), gs
}

// onRanks runs fn on n in-process ranks over the fixture's parts.
func onRanks(t *testing.T, dir string, n int, fn func(rank int, s *Shard) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A rank that fails leaves the others waiting: bound their wait.
	gs, err := dist.LocalGroup(ctx, n, dist.Options{OpTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer gs[r].Close()
			s, err := Open(ctx, gs[r], dir, ShardOptions{Normalize: true})
			if err != nil {
				errs[r] = err
				return
			}
			errs[r] = fn(r, s)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// gradScale is the largest gradient entry of a model.
func gradScale(gs []tensor.Matrix) float64 {
	var m float64
	for _, g := range gs {
		for _, v := range g.Data {
			m = max(m, math.Abs(float64(v)))
		}
	}
	return m
}

// closeness returns the largest |got-want| / (tol*|want| + tol*scale)
// over the elements: at most 1 when every element is within relative
// tolerance tol, measured against its own value plus the model's largest
// gradient entry (scale). The second term is what float32 allows: an
// entry that is a sum of terms cancelling to far below their own size (the
// output bias's gradient sums p-y over the training nodes) carries the
// rounding of its terms, not of its value. (torch.testing's float32
// default is an absolute 1e-5; this is 1e-5 of the largest entry.)
func closeness(got, want []float32, tol, scale float64) float64 {
	var worst float64
	for i := range want {
		d := math.Abs(float64(got[i] - want[i]))
		worst = max(worst, d/(tol*math.Abs(float64(want[i]))+tol*scale))
	}
	return worst
}

func testConfigs() map[string]nn.Config {
	return map[string]nn.Config{
		"gcn":   {Kind: nn.GCN, Hidden: 16, Layers: 2, Dropout: 0.5, Seed: 3},
		"sage":  {Kind: nn.SAGE, Hidden: 24, Layers: 3, Dropout: 0.5, Seed: 3},
		"gat":   {Kind: nn.GAT, Hidden: 8, Heads: 4, OutHeads: 2, Layers: 2, Dropout: 0.6, AttnDropout: 0.6, Seed: 3},
		"appnp": {Kind: nn.APPNP, Hidden: 16, Layers: 4, Dropout: 0.5, Alpha: 0.1, Seed: 3},
		// Written only with nn's public ops, with nothing of SAR's own.
		"gin":    {Kind: nn.GIN, Hidden: 16, Layers: 2, Dropout: 0.5, Seed: 3},
		"gcnii":  {Kind: nn.GCNII, Hidden: 16, Layers: 4, Dropout: 0.5, Alpha: 0.1, Theta: 0.5, Seed: 3},
		"pna":    {Kind: nn.PNA, Hidden: 8, Layers: 2, Dropout: 0.5, Seed: 3},
		"gcn-jk": {Kind: nn.GCNJK, Hidden: 8, Layers: 3, Dropout: 0.5, Seed: 3},
		// A user's layer aggregating by the dataset's edge weights.
		"weighted": {Kind: testWeightedKind, Hidden: 16, Layers: 2, Dropout: 0.5, Seed: 3},
	}
}

// weightedLayer is GraphConv with the dataset's edge weights, written as a
// user writes a layer outside nn: the fused Conv and a plain Aggregate,
// both by nn.AggWeighted.
type weightedLayer struct {
	W, Root, Skip *nn.Linear
	relu          bool
}

func (l *weightedLayer) Forward(tp *autograd.Tape, b *nn.Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	h := b.Conv(tp, x, nn.Conv{Agg: nn.AggWeighted, W: l.W.W, Root: l.Root.W, Bias: l.W.B, ReLU: l.relu})
	return tp.Add(h, l.Skip.Forward(tp, b.Aggregate(tp, x, nn.AggWeighted)))
}
func (l *weightedLayer) Params() []*autograd.Var {
	return append(append(l.W.Params(), l.Root.W), l.Skip.Params()...)
}
func (l *weightedLayer) OutDim() int { return l.W.W.Value.Rows }

const testWeightedKind nn.Kind = "test-weighted"

func init() {
	nn.Register(nn.Spec{Kind: testWeightedKind, Help: "GraphConv by edge weights (tests only)", Build: func(ini *nn.Init, c *nn.Config, _ []float32) ([]nn.Layer, error) {
		return nn.StackLayers(c, func(l, in, out int) nn.Layer {
			return &weightedLayer{W: ini.Linear("lin.", in, out, true), Root: ini.Linear("root.", in, out, false), Skip: ini.Linear("skip.", in, out, false), relu: l < c.Layers-1}
		}), nil
	}})
}

// TestStepEquivalence: the loss and every parameter gradient of one step
// on N ranks equal the single-process full-graph step (dropout on).
func TestStepEquivalence(t *testing.T) {
	f := coraFixture(t)
	const seed = 12345
	for name, c := range testConfigs() {
		wantLoss, wantGrads := f.reference(t, c, seed)
		for _, mode := range append(Modes, "mfg") {
			ns := []int{1, 2, 4}
			if testing.Short() {
				ns = []int{2 + 2*(len(mode)%2)} // 2 or 4 ranks: the race detector's run
			}
			for _, n := range ns {
				t.Run(fmt.Sprintf("%s/%s/N=%d", name, mode, n), func(t *testing.T) {
					onRanks(t, f.dir, n, func(rank int, s *Shard) error {
						m, err := NewModel(s, c)
						if err != nil {
							return err
						}
						// mfg: the receptive field only, in each
						// exchange mode in turn.
						md, mfg := mode, mode == "mfg"
						if mfg {
							md = Modes[n%len(Modes)]
						}
						e := NewEngine(s, md)
						e.MFG = mfg
						res, err := e.Grad(context.Background(), m, seed)
						if mfg && name == "gin" {
							// Batch statistics over the receptive field are
							// not the full graph's: refused, not wrong.
							if err == nil || !strings.Contains(err.Error(), "batch statistics") {
								return fmt.Errorf("gin (batch norm) with --mfg: %v, want a refusal", err)
							}
							return nil
						}
						if err != nil {
							return err
						}
						if mfg && len(m.Layers) <= 3 {
							// The first layer reads a part of the graph only.
							ts, err := s.mfgTopos(context.Background(), false, len(m.Layers))
							if err != nil {
								return err
							}
							if in := ts[0].inRows(); in >= s.NumInner() || in < len(s.Train) {
								return fmt.Errorf("receptive field of %d rows, shard of %d, %d training nodes", in, s.NumInner(), len(s.Train))
							}
						}
						if d := math.Abs(res.Loss-wantLoss) / wantLoss; d > 1e-5 {
							return fmt.Errorf("loss %.8f, single process %.8f (rel %.2g)", res.Loss, wantLoss, d)
						}
						names, ps := m.NamedParams()
						scale := gradScale(wantGrads)
						for i, p := range ps {
							if c := closeness(p.Grad.Data, wantGrads[i].Data, 1e-5, scale); c > 1 {
								return fmt.Errorf("gradient of %s differs from the single process's by %.3g x the tolerance", names[i], c)
							}
						}
						return nil
					})
				})
			}
		}
	}
}

// TestLossCurves: 20 epochs on N ranks follow "train --mode full" in one
// process: every epoch's loss within 1e-4, and the same evaluations.
func TestLossCurves(t *testing.T) {
	if testing.Short() {
		t.Skip("20 epochs, 7 runs")
	}
	f := coraFixture(t)
	for _, tc := range []struct {
		kind nn.Kind
		mode Mode
		n    int
		mfg  bool
	}{{nn.GCN, SAR, 4, false}, {nn.SAGE, OneShot, 2, false}, {nn.APPNP, SA, 4, false}, {nn.GCN, OneShot, 1, false},
		{nn.GAT, SAR, 2, false}, {nn.GAT, SA, 4, true}, {nn.SAGE, SAR, 4, true}} {
		t.Run(fmt.Sprintf("%s/%s/N=%d/mfg=%v", tc.kind, tc.mode, tc.n, tc.mfg), func(t *testing.T) {
			cfg := train.Defaults(tc.kind)
			cfg.Mode, cfg.Epochs, cfg.Seed, cfg.Model.Seed = train.Full, 20, 7, 7
			r, err := train.NewRunner(f.d, cfg, train.Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			want, err := r.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			cfg = r.Config()
			onRanks(t, f.dir, tc.n, func(rank int, s *Shard) error {
				e := NewEngine(s, tc.mode)
				e.MFG = tc.mfg
				got, err := Run(context.Background(), e, cfg, train.Hooks{})
				if err != nil {
					return err
				}
				if len(got.History) != len(want.History) {
					return fmt.Errorf("%d epochs, single process %d", len(got.History), len(want.History))
				}
				for i, h := range got.History {
					w := want.History[i]
					if math.Abs(h.Loss-w.Loss) > 1e-4 {
						return fmt.Errorf("epoch %d: loss %.6f, single process %.6f", i, h.Loss, w.Loss)
					}
					if math.Abs(*h.ValAcc-*w.ValAcc) > 0.0021 || math.Abs(*h.ValLoss-*w.ValLoss) > 1e-4 {
						return fmt.Errorf("epoch %d: val acc %.4f loss %.6f, single process %.4f %.6f", i, *h.ValAcc, *h.ValLoss, *w.ValAcc, *w.ValLoss)
					}
				}
				if got.Summary.TestAcc != want.Summary.TestAcc || got.Summary.BestEpoch != want.Summary.BestEpoch {
					return fmt.Errorf("test acc %.4f at epoch %d, single process %.4f at %d", got.Summary.TestAcc, got.Summary.BestEpoch, want.Summary.TestAcc, want.Summary.BestEpoch)
				}
				return nil
			})
		})
	}
}

// TestInferenceEquivalence: distributed inference equals the single
// process's layer-wise inference (train.Infer) for every node.
func TestInferenceEquivalence(t *testing.T) {
	f := coraFixture(t)
	src, err := feature.FromFloat32(f.x.Data, f.x.Rows, f.x.Cols, feature.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range testConfigs() {
		c.In, c.Out = f.d.Meta.FeatureDim, f.d.Meta.NumClasses
		ref, err := nn.NewModel(c, f.deg)
		if err != nil {
			t.Fatal(err)
		}
		want, err := train.Infer(context.Background(), ref, f.d.Graph, src, 512, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, mode := range Modes {
			n := []int{1, 2, 4}[i]
			t.Run(fmt.Sprintf("%s/%s/N=%d", name, mode, n), func(t *testing.T) {
				onRanks(t, f.dir, n, func(rank int, s *Shard) error {
					m, err := NewModel(s, c)
					if err != nil {
						return err
					}
					got, err := NewEngine(s, mode).Logits(context.Background(), m)
					if err != nil {
						return err
					}
					var scale float64
					for _, v := range want.Data {
						scale = max(scale, math.Abs(float64(v)))
					}
					for i, g := range s.GlobalIDs {
						if cl := closeness(got.Row(i), want.Row(int(g)), 1e-5, scale); cl > 1 {
							return fmt.Errorf("node %d: logits %v, single process %v", g, got.Row(i), want.Row(int(g)))
						}
					}
					return nil
				})
			})
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestGCNAccuracyCora: the published GCN setting on Cora (200 epochs)
// under 4 ranks reaches the single process's test accuracy, at the same
// epoch.
func TestGCNAccuracyCora(t *testing.T) {
	if testing.Short() {
		t.Skip("200 epochs on 4 ranks")
	}
	f := coraFixture(t)
	cfg := train.Defaults(nn.GCN)
	cfg.Seed, cfg.Model.Seed = 1, 1
	r, err := train.NewRunner(f.d, cfg, train.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want.Summary.TestAcc < 0.79 {
		t.Fatalf("single process: test accuracy %.3f, below the published 0.81 by more than 2 points", want.Summary.TestAcc)
	}
	onRanks(t, f.dir, 4, func(rank int, s *Shard) error {
		got, err := Run(context.Background(), NewEngine(s, SAR), r.Config(), train.Hooks{})
		if err != nil {
			return err
		}
		if got.Summary.TestAcc != want.Summary.TestAcc || got.Summary.BestEpoch != want.Summary.BestEpoch {
			return fmt.Errorf("test accuracy %.4f at epoch %d, single process %.4f at %d", got.Summary.TestAcc, got.Summary.BestEpoch, want.Summary.TestAcc, want.Summary.BestEpoch)
		}
		return nil
	})
}
