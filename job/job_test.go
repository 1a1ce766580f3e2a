package job

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/safetensors"
	"github.com/graphmill/graphmill/sar"
	"github.com/graphmill/graphmill/train"
)

// TestRoutesRefused checks that a Spec whose route cannot run is refused
// before any work, naming the reason.
func TestRoutesRefused(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	gcn := train.Defaults(nn.GCN)
	sarCfg := gcn
	sarCfg.Mode = "sar"
	for _, c := range []struct {
		name string
		spec Spec
		want string
	}{
		{"sar on a whole dataset", Spec{Dataset: "cora", Config: sarCfg}, "trains over a partitioned dataset"},
		{"mfg outside sar", Spec{Dataset: "cora", Config: gcn, MFG: true}, "sar, sa and one-shot"},
		{"remote cache without parts", Spec{Dataset: "cora", Config: gcn, RemoteCacheBytes: 1 << 20}, "distributed sampling over a partitioned dataset"},
		{"samplers in full mode", Spec{Dataset: "cora", Config: gcn, Samplers: []string{"127.0.0.1:1"}}, "sampled mode"},
		{"no such dataset", Spec{Dataset: t.TempDir() + "/none", Config: gcn}, "none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Train(context.Background(), c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
		})
	}
}

// onRanks runs f on every rank of a local group of n and returns each
// rank's error.
func onRanks(t *testing.T, n int, f func(r int, c dist.Comm) error) []error {
	t.Helper()
	gs, err := dist.LocalGroup(context.Background(), n, dist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(r, gs[r])
		}()
	}
	wg.Wait()
	for _, g := range gs {
		g.Close()
	}
	return errs
}

// TestRanksMustShareSettings: ranks given another learning rate (which
// trained silently apart) or epoch count are refused on every rank;
// settings that may differ per process (threads) are not.
func TestRanksMustShareSettings(t *testing.T) {
	base := train.Defaults(nn.SAGE)
	other := func(f func(*train.Config)) train.Config {
		c := base
		f(&c)
		return c
	}
	for _, c := range []struct {
		name string
		cfg1 train.Config
		ok   bool
		mfg1 bool
		data uint64 // rank 1's data fingerprint (rank 0's is 1)
	}{
		{"same", base, true, false, 1},
		{"mfg", base, false, true, 1},
		{"data", base, false, false, 2},
		{"threads", other(func(c *train.Config) { c.Threads = 7 }), true, false, 1},
		{"lr", other(func(c *train.Config) { c.Optimizer.LR *= 2 }), false, false, 1},
		{"epochs", other(func(c *train.Config) { c.Epochs++ }), false, false, 1},
		{"fanouts", other(func(c *train.Config) { c.Fanouts = []int{5, 5} }), false, false, 1},
	} {
		errs := onRanks(t, 2, func(r int, g dist.Comm) error {
			cfg, mfg, data := base, false, uint64(1)
			if r == 1 {
				cfg, mfg, data = c.cfg1, c.mfg1, c.data
			}
			if err := sameSettings(context.Background(), g, cfg, mfg); err != nil {
				return err
			}
			return sameData(context.Background(), g, data, "dataset")
		})
		for r, err := range errs {
			if (err == nil) != c.ok || (err != nil && !strings.Contains(err.Error(), map[bool]string{true: "different data", false: "different settings"}[c.data != 1])) {
				t.Errorf("%s: rank %d: %v", c.name, r, err)
			}
		}
	}
}

// TestInferenceRanksMustAgree: eval and predict ranks with another
// checkpoint (a blend of two models' accuracies was reported) or another
// --mode (a wait until --op-timeout) are refused on every rank.
func TestInferenceRanksMustAgree(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	ctx := context.Background()
	d, err := builtin.Open(ctx, "cora")
	if err != nil {
		t.Skip(err)
	}
	defer d.Close()
	assign := make([]int32, d.Meta.NumNodes)
	for i := range assign {
		assign[i] = int32(i % 2)
	}
	dir := filepath.Join(t.TempDir(), "cora2")
	if _, err := parts.Write(ctx, d, assign, 2, dir, parts.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	ck := func(w float32) *train.Checkpoint {
		return &train.Checkpoint{Model: nn.Config{Kind: nn.GCN}, File: &safetensors.File{Order: []string{"w"}, Tensors: map[string]safetensors.Tensor{"w": {Data: []float32{w}}}}}
	}
	for _, c := range []struct {
		name string
		mode sar.Mode
		w    float32
		ok   bool
	}{{"same", sar.SAR, 1, true}, {"weights", sar.SAR, 2, false}, {"mode", sar.OneShot, 1, false}} {
		errs := onRanks(t, 2, func(r int, g dist.Comm) error {
			mode, w := sar.SAR, float32(1)
			if r == 1 {
				mode, w = c.mode, c.w
			}
			return sameInference(ctx, g, dir, mode, ck(w))
		})
		for r, err := range errs {
			if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "different checkpoints, --mode") {
				t.Errorf("%s: rank %d: %v", c.name, r, err)
			}
		}
	}
}

// TestPeersReady: a rank whose checks failed makes every rank fail at
// once, the others naming it; with none failed, every rank goes on.
func TestPeersReady(t *testing.T) {
	for _, bad := range []int{-1, 1} {
		errs := onRanks(t, 3, func(r int, g dist.Comm) error {
			var mine error
			if r == bad {
				mine = errors.New("--max-memory does not apply")
			}
			return PeersReady(context.Background(), g, mine)
		})
		for r, err := range errs {
			switch {
			case bad < 0 && err != nil, bad >= 0 && err == nil:
				t.Errorf("rank %d of 3 (rank %d failed): %v", r, bad, err)
			case r == bad && !strings.Contains(err.Error(), "--max-memory"), r != bad && bad >= 0 && !strings.Contains(err.Error(), "rank 1 failed its checks"):
				t.Errorf("rank %d: %v", r, err)
			}
		}
	}
}
