package train

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/nn"
)

// TestNewRunnerChecksSplits: a split node outside the graph or a split
// node's label at or past the class count is NewRunner's error, naming
// it, in every mode (a panic in a step or in the accuracy before).
func TestNewRunnerChecksSplits(t *testing.T) {
	d := cora(t)
	labels := func(v int32, y int32) []int32 {
		l := append([]int32(nil), d.Labels...)
		l[v] = y
		return l
	}
	for _, tc := range []struct {
		name string
		mod  func(ds *dataset.Dataset)
		want string
	}{
		{"training node past the graph", func(ds *dataset.Dataset) { ds.Train = append([]int32{5000}, d.Train...) },
			"train[0]=5000 out of range [0,2708)"},
		{"negative training node", func(ds *dataset.Dataset) { ds.Train = append(append([]int32(nil), d.Train...), -1) },
			"train[140]=-1 out of range"},
		{"validation node past the graph", func(ds *dataset.Dataset) { ds.Val = append([]int32{2708}, d.Val...) },
			"val[0]=2708 out of range"},
		{"test node past the graph", func(ds *dataset.Dataset) { ds.Test = append([]int32{1 << 30}, d.Test...) },
			"test[0]=1073741824 out of range"},
		{"training label past the classes", func(ds *dataset.Dataset) { ds.Labels = labels(d.Train[0], 99) },
			"of the training split has label 99, but the dataset has 7 classes"},
		{"validation label = classes", func(ds *dataset.Dataset) { ds.Labels = labels(d.Val[3], 7) },
			"of the validation split has label 7"},
		{"short labels", func(ds *dataset.Dataset) { ds.Labels = d.Labels[:100] },
			"100 labels for 2708 nodes"},
		{"unlabelled node", func(ds *dataset.Dataset) { ds.Labels = labels(d.Train[0], -1) }, ""},
		{"repeated training node", func(ds *dataset.Dataset) { ds.Train = append([]int32{d.Train[1]}, d.Train...) }, "appears twice in train"},
		{"no training node labelled", func(ds *dataset.Dataset) {
			l := append([]int32(nil), d.Labels...)
			for _, v := range d.Train {
				l[v] = -1
			}
			ds.Labels = l
		}, "none of the 140 training nodes is labelled"},
	} {
		for _, mode := range []Mode{Full, Sampled} {
			ds := *d
			tc.mod(&ds)
			cfg := Defaults(nn.SAGE)
			cfg.Mode, cfg.Epochs = mode, 1
			r, err := NewRunner(&ds, cfg, Hooks{})
			if tc.want == "" {
				if err != nil {
					t.Errorf("%s, %s: %v", tc.name, mode, err)
					continue
				}
				if _, err := r.Run(context.Background()); err != nil {
					t.Errorf("%s, %s: Run: %v", tc.name, mode, err)
				}
				r.Close()
				continue
			}
			if err == nil {
				r.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s, %s: %v, want an error containing %q", tc.name, mode, err, tc.want)
			}
		}
	}
}

// TestClosedRunner: Run, Evaluate and Predict after Close are errors (a
// panic on the closed feature store before).
func TestClosedRunner(t *testing.T) {
	d := cora(t)
	ctx := context.Background()
	r, err := NewRunner(d, Defaults(nn.SAGE), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := r.Evaluate(ctx, m); !errors.Is(err, errClosed) {
		t.Errorf("Evaluate after Close: %v", err)
	}
	if _, err := r.Predict(ctx, m); !errors.Is(err, errClosed) {
		t.Errorf("Predict after Close: %v", err)
	}
	if _, err := r.Run(ctx); !errors.Is(err, errClosed) {
		t.Errorf("Run after Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// evalStepper trains nothing and evaluates with a Runner: a Stepper of
// the caller's own.
type evalStepper struct {
	r      *Runner
	starts *int
}

func (s evalStepper) Epoch(context.Context, int) (EpochStats, error) {
	return EpochStats{Batches: 1}, nil
}

func (s evalStepper) Evaluate(ctx context.Context, m *nn.Model) (Evaluation, error) {
	return s.r.Evaluate(ctx, m)
}

func (s evalStepper) Close() {}

// TestLoopDefaultCloneKeepsDegrees: Loop with Clone nil snapshots a GCN
// model with its own degree table, so that a Runner evaluates the
// snapshot (an empty table, and a panic in the GCN normalisation, before).
func TestLoopDefaultCloneKeepsDegrees(t *testing.T) {
	d := cora(t)
	ctx := context.Background()
	cfg := Defaults(nn.GCN)
	cfg.Epochs = 2
	r, err := NewRunner(d, cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := r.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Degrees()) != d.Graph.NumNodes || len(r.Degrees()) != d.Graph.NumNodes {
		t.Fatalf("degree tables of %d and %d nodes, want %d", len(m.Degrees()), len(r.Degrees()), d.Graph.NumNodes)
	}
	opt, err := r.Config().NewOptimizer(m)
	if err != nil {
		t.Fatal(err)
	}
	starts := 0
	res, err := Loop{Config: r.Config(), Model: m, Optimizer: opt, Stepper: evalStepper{r: r}, Seeds: len(d.Train),
		Hooks: Hooks{EpochStart: func(_, batches int) { starts++ }}}.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.History) != 2 || res.History[1].ValAcc == nil || starts != 2 {
		t.Errorf("history %d epochs (last evaluated: %v), %d epoch starts: want 2 evaluated, 2 starts", len(res.History), res.History[len(res.History)-1].ValAcc != nil, starts)
	}
}

// TestInferChecksDegrees: layer-wise inference of a GCN model whose
// degree table does not cover the graph is an error (an index out of
// range before).
func TestInferChecksDegrees(t *testing.T) {
	ctx := context.Background()
	var src, dst []int32
	for v := int32(0); v < 8; v++ {
		src, dst = append(src, v), append(dst, (v+1)%8)
	}
	g, err := graph.Build(ctx, 8, src, dst, nil, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := feature.FromFloat32(make([]float32, 8*4), 8, 4, feature.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		deg  []float32
		want string
	}{
		{[]float32{1, 2}, "degree table holds 2 nodes, but it runs on node ids up to 7"},
		{[]float32{}, "has no degree table"},
		{make([]float32, 8), ""},
	} {
		for _, batch := range []int{0, 3} { // one run; runs of 3 nodes
			m, err := nn.NewModel(nn.Config{Kind: nn.GCN, In: 4, Hidden: 8, Out: 2, Layers: 2}, tc.deg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Infer(ctx, m, g, fs, batch, 0)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("%d degrees, batch %d: %v, want %q", len(tc.deg), batch, err, tc.want)
			}
		}
	}
}

// TestHooksEveryMode: EpochStart is called before every epoch in every
// mode with the epoch's batch count, Batch after every step with that
// step's loss (in full-graph mode, one step: the epoch's loss), and Epoch
// after every epoch.
func TestHooksEveryMode(t *testing.T) {
	d := cora(t)
	for _, mode := range []Mode{Full, Sampled, GAS} {
		cfg := Defaults(nn.SAGE)
		cfg.Mode, cfg.Epochs = mode, 3
		var starts, counts []int
		var losses []float64
		var epochs []EpochStats
		r, err := NewRunner(d, cfg, Hooks{
			EpochStart: func(e, n int) { starts, counts = append(starts, e), append(counts, n) },
			Batch:      func(_, _ int, l float64) { losses = append(losses, l) },
			Epoch:      func(s EpochStats) { epochs = append(epochs, s) },
		}, withTestParts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(context.Background())
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(starts) != 3 || starts[2] != 2 || len(epochs) != 3 {
			t.Errorf("%s: EpochStart for epochs %v, %d Epoch calls: want 0, 1, 2 and 3", mode, starts, len(epochs))
			continue
		}
		for i, n := range counts {
			if n != epochs[i].Batches {
				t.Errorf("%s: epoch %d announced %d batches and ran %d", mode, i, n, epochs[i].Batches)
			}
		}
		if len(losses) != res.Summary.Batches {
			t.Errorf("%s: %d Batch calls for %d steps", mode, len(losses), res.Summary.Batches)
		}
		if mode == Full {
			for i, s := range epochs {
				if losses[i] != s.Loss {
					t.Errorf("full: epoch %d's step reported loss %v, the epoch's is %v", i, losses[i], s.Loss)
				}
			}
		}
	}
}

// TestFreeOSMemoryOptIn: Run returns the setup's garbage to the system
// (a process-wide forced collection) only when Config.FreeOSMemory asks.
func TestFreeOSMemoryOptIn(t *testing.T) {
	d := cora(t)
	calls := 0
	defer func(f func()) { freeOSMemory = f }(freeOSMemory)
	freeOSMemory = func() { calls++ }
	for _, free := range []bool{false, true} {
		calls = 0
		cfg := Defaults(nn.SAGE)
		cfg.Epochs, cfg.FreeOSMemory = 1, free
		run(t, d, cfg)
		if want := map[bool]int{false: 0, true: 1}[free]; calls != want {
			t.Errorf("FreeOSMemory %v: %d calls, want %d", free, calls, want)
		}
	}
}

// TestSplitsWithoutNodes: without validation nodes the last evaluated
// model is kept (not epoch 0's, scored 0 % by an empty split) and patience
// does not stop the run; without test nodes the test accuracy is NaN (n/a),
// not 0, and neither goes into a checkpoint's metadata.
func TestSplitsWithoutNodes(t *testing.T) {
	d := cora(t)
	cfg := Defaults(nn.GCN)
	cfg.Epochs, cfg.Patience = 30, 2
	noVal := *d
	noVal.Val = nil
	res := run(t, &noVal, cfg)
	last := res.History[len(res.History)-1]
	if res.Summary.BestEpoch != cfg.Epochs-1 || !math.IsNaN(res.Summary.BestValAcc) || res.Summary.StoppedEarly {
		t.Fatalf("no validation split: kept epoch %d (val %v, stopped early %v), want the last, %d", res.Summary.BestEpoch, res.Summary.BestValAcc, res.Summary.StoppedEarly, cfg.Epochs-1)
	}
	if last.TestAcc == nil || res.Summary.TestAcc != *last.TestAcc || res.Summary.TestAcc < 0.6 {
		t.Fatalf("no validation split: test accuracy %v, the last epoch's %v", res.Summary.TestAcc, last.TestAcc)
	}
	noTest := *d
	noTest.Test = nil
	res = run(t, &noTest, cfg)
	if !math.IsNaN(res.Summary.TestAcc) || math.IsNaN(res.Summary.BestValAcc) || res.Summary.BestValAcc < 0.6 {
		t.Fatalf("no test split: test accuracy %v (want NaN), validation %v", res.Summary.TestAcc, res.Summary.BestValAcc)
	}
	if meta := CheckpointMeta(res); meta[MetaTestAcc] != "" || meta[MetaBestValAcc] == "" {
		t.Fatalf("no test split: checkpoint metadata %v", meta)
	}
}
