package dist_test

import (
	"context"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/train"
)

// Data-parallel training on four ranks (goroutines joined by the default
// transports, i.e. shared memory): the same weights as one process with a
// four times larger batch, and GraphSAGE's accuracy on Cora.

func cora(t *testing.T) *dataset.Dataset {
	t.Helper()
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	d, err := builtin.Open(context.Background(), "cora")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// trainRanks trains cfg on n ranks (rank r > 0 starts from other initial
// weights, which the broadcast must replace) and returns every rank's
// result.
func trainRanks(t *testing.T, d *dataset.Dataset, cfg train.Config, n int) []*train.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// a generous peer timeout: these tests are about training, and a
	// machine overloaded by other jobs can delay heartbeats by seconds
	gs, err := dist.LocalGroup(ctx, n, dist.Options{PeerTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if gs[0].Transport() != "shared memory" {
		t.Errorf("transport %q, want shared memory", gs[0].Transport())
	}
	results := make([]*train.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer gs[r].Close()
			c := cfg
			c.Parallel = dist.Trainer{Comm: gs[r]}
			if r > 0 {
				c.Model.Seed = cfg.Model.Seed + 1000 + uint64(r)
			}
			runner, err := train.NewRunner(d, c, train.Hooks{})
			if err != nil {
				errs[r] = err
				return
			}
			results[r], errs[r] = runner.Run(ctx)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return results
}

func runOne(t *testing.T, d *dataset.Dataset, cfg train.Config) *train.Result {
	t.Helper()
	r, err := train.NewRunner(d, cfg, train.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestFourRanksEqualLargeBatch: 4 ranks with batches of 8 seeds end two
// epochs with the weights of one process with batches of 32: every rank
// the same bits, the single process's to float32 tolerance (full
// neighbourhoods, no dropout: a seed's gradient does not depend on its
// batch).
func TestFourRanksEqualLargeBatch(t *testing.T) {
	d := cora(t)
	const n, b = 4, 8
	cfg := train.Defaults(nn.SAGE)
	cfg.Epochs, cfg.SkipEval, cfg.Workers, cfg.Seed, cfg.Model.Seed = 2, true, 1, 5, 5
	cfg.Model.Dropout, cfg.Fanouts = 0, []int{-1, -1}
	single := cfg
	single.BatchSize = n * b
	want := runOne(t, d, single).Model.Params()
	cfg.BatchSize = b
	res := trainRanks(t, d, cfg, n)
	worst := 0.0
	for r, rr := range res {
		for i, p := range rr.Model.Params() {
			for k, v := range p.Value.Data {
				if r > 0 && v != res[0].Model.Params()[i].Value.Data[k] {
					t.Fatalf("rank %d's %s[%d] = %v differs from rank 0's %v", r, p.Name, k, v, res[0].Model.Params()[i].Value.Data[k])
				}
				w := want[i].Value.Data[k]
				diff := math.Abs(float64(v-w)) / (1e-3 + math.Abs(float64(w)))
				worst = max(worst, diff)
				if diff > 1e-3 {
					t.Fatalf("rank %d's %s[%d] = %v, one process with batch %d: %v", r, p.Name, k, v, n*b, w)
				}
			}
		}
		if rr.Summary.Batches != res[0].Summary.Batches {
			t.Errorf("rank %d ran %d steps, rank 0 %d", r, rr.Summary.Batches, res[0].Summary.Batches)
		}
	}
	t.Logf("largest relative difference to one process: %.2g", worst)
}

// TestFourRanksSAGECoraAccuracy: GraphSAGE (the sampled defaults, fanouts
// [25,10]) on Cora under 4 ranks with a quarter of the batch each (the
// same effective batch of 64) reaches the single process's mean test
// accuracy over the same 5 seeds, within one point, and the 0.790 bar the
// single process is held to (PyG's GraphSAGE reaches about 0.80).
func TestFourRanksSAGECoraAccuracy(t *testing.T) {
	if os.Getenv("GRAPHMILL_QUALITY") != "1" {
		t.Skip("accuracy bars run with GRAPHMILL_QUALITY=1 (CI runs them)")
	}
	d := cora(t)
	const n, seeds = 4, 5
	var one, four float64
	for seed := uint64(0); seed < seeds; seed++ {
		cfg := train.Defaults(nn.SAGE)
		cfg.Seed, cfg.Model.Seed = seed, seed
		s := runOne(t, d, cfg).Summary
		cfg.BatchSize /= n
		res := trainRanks(t, d, cfg, n)
		p := res[0].Summary
		for r, rr := range res {
			if rr.Summary.TestAcc != p.TestAcc {
				t.Errorf("seed %d: rank %d's test accuracy %.4f differs from rank 0's %.4f", seed, r, rr.Summary.TestAcc, p.TestAcc)
			}
		}
		t.Logf("seed %d: one process test %.3f (epoch %d), 4 ranks test %.3f (epoch %d)", seed, s.TestAcc, s.BestEpoch, p.TestAcc, p.BestEpoch)
		one += s.TestAcc / seeds
		four += p.TestAcc / seeds
	}
	t.Logf("SAGE cora: mean test accuracy one process %.4f, 4 ranks %.4f", one, four)
	if four < one-0.01 || four < 0.790 {
		t.Errorf("4 ranks: mean test accuracy %.4f, want at least one process's %.4f less one point and 0.790", four, one)
	}
}
