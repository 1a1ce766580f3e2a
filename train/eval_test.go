package train

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/graphmill/graphmill/nn"
)

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
