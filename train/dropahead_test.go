package train

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/graphmill/graphmill/nn"
)

// TestDropAheadMatchesStep checks that the input dropout the loader
// applies as it gathers (inputDropout) trains exactly as the step's own:
// the same histories and the same weights, bit for bit, for models whose
// layer 0 drops its input (GCN-JK's layers draw their own and are left
// alone), with node ids and with original ids as the dropout keys; under
// a memory bound (steps may split into micro-batches, each drawing its
// own) the loader leaves it to the step.
func TestDropAheadMatchesStep(t *testing.T) {
	d := cora(t)
	perm := make([]int32, d.Graph.NumNodes)
	for i := range perm {
		perm[i] = int32((i*7919 + 13) % len(perm))
	}
	for _, orig := range []bool{false, true} {
		kinds := []nn.Kind{nn.SAGE, nn.GCN, nn.GIN, nn.APPNP, nn.GAT, nn.GCNJK}
		if orig {
			kinds = kinds[:1]
		}
		for _, kind := range kinds {
			t.Run(fmt.Sprintf("%s/orig=%v", kind, orig), func(t *testing.T) {
				dd := *d
				if orig {
					dd.OrigIDs = perm
				}
				cfg := Defaults(kind)
				cfg.Mode, cfg.Epochs, cfg.Threads, cfg.Workers, cfg.Model.Dropout = Sampled, 2, 2, 2, 0.5
				r, err := NewRunner(&dd, cfg, Hooks{}, withTestParts)
				if err != nil {
					t.Fatal(err)
				}
				m, err := r.NewModel()
				if err != nil {
					t.Fatal(err)
				}
				if want := kind != nn.GCNJK; (r.inputDropout(m) != nil) != want {
					t.Fatalf("drops ahead: %v, want %v", !want, want)
				}
				bounded := cfg
				bounded.MaxMemoryBytes = 4 << 20 // steps may split: no dropping ahead
				if rb, err := NewRunner(&dd, bounded, Hooks{}, withTestParts); err != nil {
					t.Fatal(err)
				} else if rb.inputDropout(m) != nil {
					t.Fatal("drops ahead under a memory bound")
				}
				ahead := run(t, &dd, cfg)
				dropAhead = false
				defer func() { dropAhead = true }()
				step := run(t, &dd, cfg)
				if !reflect.DeepEqual(stripTimes(ahead), stripTimes(step)) {
					t.Fatalf("histories differ:\n%+v\n%+v", stripTimes(ahead), stripTimes(step))
				}
				pa, ps := ahead.Model.Params(), step.Model.Params()
				for i := range pa {
					if !reflect.DeepEqual(pa[i].Value.Data, ps[i].Value.Data) {
						t.Fatalf("parameter %d (%s) differs", i, pa[i].Name)
					}
				}
			})
		}
	}
}
