package train

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/nn"
)

// TestDataParallelEqualsLargeBatch: N ranks (goroutines over loopback TCP)
// with batches of b seeds end an epoch with the weights one process gets
// with batches of N·b: every rank the same bits, and the single process's
// to float32 tolerance. Full neighbourhoods and no dropout make a seed's
// gradient independent of the batch it is in.
func TestDataParallelEqualsLargeBatch(t *testing.T) {
	d := cora(t)
	for _, tc := range []struct{ n, b, epochs int }{{2, 16, 1}, {3, 10, 2}} {
		t.Run(fmt.Sprintf("%d ranks batch %d", tc.n, tc.b), func(t *testing.T) {
			cfg := Defaults(nn.SAGE)
			cfg.Epochs, cfg.SkipEval, cfg.Workers, cfg.Seed, cfg.Model.Seed = tc.epochs, true, 1, 5, 5
			cfg.Model.Dropout, cfg.Fanouts = 0, []int{-1, -1}
			single := cfg
			single.BatchSize = tc.n * tc.b
			want := run(t, d, single).Model

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			gs, err := dist.LocalGroup(ctx, tc.n, dist.Options{})
			if err != nil {
				t.Fatal(err)
			}
			models := make([]*nn.Model, tc.n)
			results := make([]*Result, tc.n)
			errs := make([]error, tc.n)
			var wg sync.WaitGroup
			for r := range tc.n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer gs[r].Close()
					c := cfg
					c.BatchSize, c.Parallel = tc.b, dist.Trainer{Comm: gs[r]}
					if r > 0 {
						c.Model.Seed = 1000 + uint64(r) // different initial weights: the broadcast must fix them
					}
					runner, err := NewRunner(d, c, Hooks{})
					if err != nil {
						errs[r] = err
						return
					}
					results[r], errs[r] = runner.Run(ctx)
					if errs[r] == nil {
						models[r] = results[r].Model
					}
				}()
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			wp := want.Params()
			worst := 0.0
			for r, m := range models {
				for i, p := range m.Params() {
					for k, v := range p.Value.Data {
						if r > 0 && v != models[0].Params()[i].Value.Data[k] {
							t.Fatalf("rank %d's %s[%d] = %v differs from rank 0's %v", r, p.Name, k, v, models[0].Params()[i].Value.Data[k])
						}
						w := wp[i].Value.Data[k]
						diff := math.Abs(float64(v-w)) / (1e-3 + math.Abs(float64(w)))
						worst = max(worst, diff)
						if diff > 1e-3 {
							t.Fatalf("rank %d's %s[%d] = %v, single process with batch %d: %v", r, p.Name, k, v, tc.n*tc.b, w)
						}
					}
				}
			}
			t.Logf("largest relative difference to one process: %.2g", worst)
			if results[0].Summary.Batches != results[1].Summary.Batches {
				t.Errorf("ranks ran %d and %d steps", results[0].Summary.Batches, results[1].Summary.Batches)
			}
		})
	}
}
