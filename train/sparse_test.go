package train

import (
	"context"
	"math"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/nn"
)

// newFullStepper returns the full-graph stepper of a run of cfg on d.
func newFullStepper(t *testing.T, d *dataset.Dataset, cfg Config) *fullStepper {
	t.Helper()
	r, err := NewRunner(d, cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	m, _ := r.NewModel()
	st, err := r.fullStepper(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st.(*fullStepper)
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
			if got := newFullStepper(t, d, cfg).sparse; got != sparse {
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

// TestAmpleBoundKeepsFeatures: under a memory bound that holds the
// whole-graph step with every input row gathered, full-graph training
// gathers the rows once and keeps them (with their sparse twin) instead of
// gathering and normalising them every step, and trains as unbounded;
// under a bound that does not, the step gathers them.
func TestAmpleBoundKeepsFeatures(t *testing.T) {
	d := cora(t)
	cfg := Defaults(nn.GCN)
	cfg.Mode, cfg.Epochs, cfg.Patience = Full, 5, 0
	free := run(t, d, cfg)
	for _, tc := range []struct {
		bound int64
		kept  bool
	}{{1 << 36, true}, {8 << 20, false}} {
		cfg.MaxMemoryBytes = tc.bound
		fs := newFullStepper(t, d, cfg)
		if kept := fs.whole.Features.Rows == d.Meta.NumNodes; kept != tc.kept || fs.sparse != tc.kept {
			t.Fatalf("bound %d: rows kept %v (sparse %v), want %v", tc.bound, kept, fs.sparse, tc.kept)
		}
		if !tc.kept {
			continue
		}
		for i, h := range run(t, d, cfg).History {
			if want := free.History[i].Loss; math.Abs(h.Loss-want) > 1e-6*want {
				t.Errorf("bound %d, epoch %d: loss %.8f, unbounded %.8f", tc.bound, i, h.Loss, want)
			}
		}
	}
}
