package train

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// gradRecorder is an optimiser that keeps a copy of the gradients it is
// asked to apply, and applies nothing.
type gradRecorder struct{ grads []tensor.Matrix }

func (g *gradRecorder) Step(params []*autograd.Var) {
	g.grads = g.grads[:0]
	for _, p := range params {
		g.grads = append(g.grads, p.Grad.Clone())
	}
}

func (g *gradRecorder) SetLR(float64) {}

// microCase is a batch of one training mode on Cora.
type microCase struct {
	name string
	r    *Runner
	m    *nn.Model
	v    *view
}

// microCases builds a full-graph, a sampled and a GAS batch for every model
// kind on Cora, with the given dropout.
func microCases(t *testing.T, dropout float64) []microCase {
	t.Helper()
	d := cora(t)
	var cases []microCase
	for _, kind := range nn.Kinds() {
		cfg := Defaults(kind)
		cfg.Model.Dropout, cfg.Model.AttnDropout = dropout, dropout
		cfg.Model.Layers, cfg.Fanouts = 2, []int{10, 5}
		if kind == nn.APPNP {
			cfg.Model.Layers, cfg.Fanouts = 3, []int{10, 5, 5, 5}
		}
		r, err := NewRunner(d, cfg, Hooks{}, withTestParts)
		if err != nil {
			t.Fatal(err)
		}
		m, err := r.NewModel()
		if err != nil {
			t.Fatal(err)
		}
		x, err := r.denseFeatures(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		full := &view{blocks: []*nn.Block{nn.FullGraph(d.Graph)}, x: x, labels: r.trainLabels(), labelledOnly: true}
		cases = append(cases, microCase{string(kind) + "/full", r, m, full})

		s, err := sample.New(d.Graph, sample.Config{Fanouts: cfg.Fanouts})
		if err != nil {
			t.Fatal(err)
		}
		seeds := d.Train[:100]
		mb, err := s.Sample(seeds, 7)
		if err != nil {
			t.Fatal(err)
		}
		labels := make([]int32, len(seeds))
		for i, v := range seeds {
			labels[i] = d.Labels[v]
		}
		sampled := &view{blocks: blocksOf(mb), x: gatherRows(x, mb.InputNodes), labels: labels}
		cases = append(cases, microCase{string(kind) + "/sampled", r, m, sampled})

		if kind == nn.GAT {
			continue // GAS runs GCN, SAGE and APPNP
		}
		r.cfg.Parts, r.cfg.PartsPerBatch = 8, 3
		st, err := r.gasStepper(context.Background(), m, nil)
		if err != nil {
			t.Fatal(err)
		}
		gs := st.(*gasStepper)
		t.Cleanup(gs.close)
		if err := gs.fill(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		b := gs.prepare(gs.groups(0)[0], newPos(d.Meta.NumNodes))
		if b.err != nil {
			t.Fatal(b.err)
		}
		cases = append(cases, microCase{string(kind) + "/gas", r, m, gs.view(b)})
	}
	return cases
}

// TestMicroBatchGradientsMatchUnsplit checks the memory bound's promise:
// a batch split into micro-batches yields the unsplit batch's gradients,
// loss, accuracy, logits and GAS history rows, for every model kind and
// training mode.
func TestMicroBatchGradientsMatchUnsplit(t *testing.T) {
	for _, c := range microCases(t, 0) {
		t.Run(c.name, func(t *testing.T) {
			whole := &splitter{m: c.m}
			var g0, g1 gradRecorder
			a, err := c.r.trainStep(context.Background(), whole, c.v, c.m, &g0, 0, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			for l := range a.fresh { // valid until the next step, which reuses the workspace
				a.fresh[l] = a.fresh[l].Clone()
			}
			b, err := c.r.trainPlan(context.Background(), whole, c.v, thirds(c.v, true), c.m, &g1, 0, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if a.micro != 1 || b.micro != 3 {
				t.Fatalf("micro-batches: %d unbounded, %d planned", a.micro, b.micro)
			}
			if a.correct != b.correct || a.total != b.total || !close32(float32(a.loss), float32(b.loss), 1e-5) {
				t.Fatalf("unsplit loss %v (%d/%d right), split %v (%d/%d)", a.loss, a.correct, a.total, b.loss, b.correct, b.total)
			}
			names, _ := c.m.NamedParams()
			for i := range g0.grads {
				if err := sameMatrix(g0.grads[i], g1.grads[i], 1e-5); err != nil {
					t.Fatalf("gradient of %s: %v", names[i], err)
				}
			}
			for l := range a.fresh {
				if err := sameMatrix(a.fresh[l], b.fresh[l], 1e-5); err != nil {
					t.Fatalf("fresh rows of layer %d: %v", l, err)
				}
			}
			ia, err := inferStep(context.Background(), whole, c.v, c.m)
			if err != nil {
				t.Fatal(err)
			}
			ib, err := inferPlan(context.Background(), whole, c.v, thirds(c.v, false), c.m)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameMatrix(ia.logits, ib.logits, 1e-5); err != nil {
				t.Fatalf("inference logits: %v", err)
			}
		})
	}
}

// TestMicroBatchBytesExact checks that the bytes the planner predicts for
// a micro-batch are the matrices its step allocates (counted by
// tensor.Allocated), apart from index arrays, which are not matrices.
func TestMicroBatchBytesExact(t *testing.T) {
	for _, c := range microCases(t, 0.5) {
		t.Run(c.name, func(t *testing.T) {
			whole := &splitter{m: c.m}
			// The parameters' gradients are allocated by the first step.
			if _, err := c.r.trainStep(context.Background(), whole, c.v, c.m, &gradRecorder{}, 0, 0, 1); err != nil {
				t.Fatal(err)
			}
			sp := &splitter{m: c.m}
			for k, p := range thirds(c.v, true) {
				mb := sp.extract(c.v, p, false)
				want := sp.bytes(mb.shapes, mb.nHalo, true, true)
				for _, sh := range mb.shapes {
					want -= indexBytes(c.m, sh, true, true)
				}
				before := tensor.Allocated()
				w, err := sp.sub(context.Background(), c.v, p)
				if err != nil {
					t.Fatal(err)
				}
				tp := autograd.NewTape()
				logits, _, err := forward(context.Background(), tp, c.m, w, true, uint64(k))
				if err != nil {
					t.Fatal(err)
				}
				loss := tp.CrossEntropy(logits, w.labels)
				if err := tp.Backward(loss); err != nil {
					t.Fatal(err)
				}
				if got := tensor.Allocated() - before; got != want {
					t.Fatalf("micro-batch %d: allocated %d bytes of matrices, planned %d", k, got, want)
				}
			}
			// Under a bound, every planned piece fits it. The bound is a
			// third of the unsplit step, unless one destination's
			// neighbourhood alone needs more.
			for _, train := range []bool{true, false} {
				sp.bound = 0
				whole := sp.wholeBytes(c.v, train)
				bound := whole / 3
				for _, p := range thirds(c.v, train) {
					for _, d := range p {
						mb := sp.extract(c.v, []int32{d}, false)
						bound = max(bound, sp.fixedBytes(c.v, train)+sp.bytes(mb.shapes, mb.nHalo, true, train))
					}
				}
				sp.bound = bound
				plan, err := sp.plan(c.v, train)
				if err != nil {
					t.Fatalf("train=%v: %v", train, err)
				}
				if bound < whole && len(plan) < 2 || bound >= whole && plan != nil {
					t.Fatalf("train=%v: %d micro-batches under a bound of %d for a step of %d bytes", train, len(plan), bound, whole)
				}
				for k, p := range plan {
					mb := sp.extract(c.v, p, false)
					if need := sp.fixedBytes(c.v, train) + sp.bytes(mb.shapes, mb.nHalo, true, train); need > sp.bound {
						t.Fatalf("train=%v: micro-batch %d needs %d bytes, over the bound of %d", train, k, need, sp.bound)
					}
				}
			}
		})
	}
}

// TestMemoryBoundTraining trains every mode under a bound that forces
// micro-batches: runs are reproducible, batches are split, and accuracy
// stays that of the unbounded run.
func TestMemoryBoundTraining(t *testing.T) {
	d := cora(t)
	for _, mode := range []Mode{Full, Sampled, GAS} {
		cfg := Defaults(nn.GCN)
		cfg.Mode, cfg.Epochs, cfg.BatchSize, cfg.Parts, cfg.PartsPerBatch = mode, 30, 140, 8, 4
		if testing.Short() {
			cfg.Epochs = 3 // the race detector's run: reproducibility and splitting only
		}
		free := run(t, d, cfg)
		cfg.MaxMemoryBytes = 8 << 20
		a, b := run(t, d, cfg), run(t, d, cfg)
		if !reflect.DeepEqual(stripTimes(a), stripTimes(b)) {
			t.Fatalf("%s: a bounded run is not reproducible", mode)
		}
		h := a.History[len(a.History)-1]
		if h.MicroBatches <= h.Batches {
			t.Fatalf("%s: %d micro-batches for %d batches under an 8 MiB bound", mode, h.MicroBatches, h.Batches)
		}
		if !testing.Short() && a.Summary.TestAcc < free.Summary.TestAcc-0.03 {
			t.Fatalf("%s: test accuracy %.3f bounded, %.3f unbounded", mode, a.Summary.TestAcc, free.Summary.TestAcc)
		}
		t.Logf("%s: test accuracy %.3f bounded (%d micro-batches for %d batches), %.3f unbounded", mode, a.Summary.TestAcc, h.MicroBatches, h.Batches, free.Summary.TestAcc)
	}
	cfg := Defaults(nn.GCN)
	cfg.MaxMemoryBytes = 1000
	r, err := NewRunner(d, cfg, Hooks{}, withTestParts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background()); err == nil {
		t.Fatal("a 1000-byte bound that no single node fits was accepted")
	}
}

// TestImpossibleBoundGivesSmallestBound: a bound that some single nodes
// exceed is refused with the smallest bound that runs the batch, which
// then runs; full-graph mode does not suggest lowering fanouts.
func TestImpossibleBoundGivesSmallestBound(t *testing.T) {
	d := cora(t)
	cfg := Defaults(nn.GCN)
	cfg.Epochs, cfg.SkipEval, cfg.MaxMemoryBytes = 1, true, 800<<10
	r, err := NewRunner(d, cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(context.Background())
	if err == nil {
		t.Fatal("an 800 KiB bound was accepted")
	}
	m := regexp.MustCompile(`the smallest --max-memory for this batch is (\d+)KiB`).FindStringSubmatch(err.Error())
	if m == nil || strings.Contains(err.Error(), "fanouts") {
		t.Fatalf("error %q: want the smallest bound, and no fanout advice in full-graph mode", err)
	}
	kib, _ := strconv.ParseInt(m[1], 10, 64)
	for _, c := range []struct {
		bound int64
		ok    bool
	}{{kib << 10, true}, {kib<<10 - 4096, false}} {
		cfg.MaxMemoryBytes = c.bound
		r, err := NewRunner(d, cfg, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Run(context.Background())
		if (err == nil) != c.ok {
			t.Fatalf("bound %d bytes (suggested %d KiB): error %v", c.bound, kib, err)
		}
	}
}

// thirds splits the destinations a step computes into three runs.
func thirds(v *view, train bool) [][]int32 {
	var seeds []int32
	for i, y := range v.labels {
		if !(train && v.labelledOnly) || y >= 0 {
			seeds = append(seeds, int32(i))
		}
	}
	n := len(seeds)
	return [][]int32{seeds[:n/3], seeds[n/3 : 2*n/3], seeds[2*n/3:]}
}

func close32(a, b, tol float32) bool {
	return float32(math.Abs(float64(a-b))) <= tol*(1+float32(math.Abs(float64(a))))
}

// sameMatrix compares two matrices to a tolerance relative to b's scale.
func sameMatrix(a, b tensor.Matrix, tol float32) error {
	if !a.SameShape(b) {
		return fmt.Errorf("shapes %d×%d and %d×%d", a.Rows, a.Cols, b.Rows, b.Cols)
	}
	var scale float32
	for _, v := range a.Data {
		scale = max(scale, float32(math.Abs(float64(v))))
	}
	for i := range a.Data {
		if math.Abs(float64(a.Data[i]-b.Data[i])) > float64(tol*(1+scale)) {
			return fmt.Errorf("element %d: %g vs %g (scale %g)", i, a.Data[i], b.Data[i], scale)
		}
	}
	return nil
}
