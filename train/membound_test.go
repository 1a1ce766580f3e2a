package train

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/nn"
)

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

// TestInferenceBoundGivesSmallestBound: layer-wise inference under a bound
// that one node exceeds names the bound that runs every node (the node of
// most in-neighbours at the most demanding layer), which then runs; 4 KiB
// less does not.
func TestInferenceBoundGivesSmallestBound(t *testing.T) {
	d := cora(t)
	cfg := Defaults(nn.GAT)
	cfg.Epochs, cfg.SkipEval = 1, true
	r, err := NewRunner(d, cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	predict := func(bound int64) error {
		cfg.MaxMemoryBytes = bound
		r, err := NewRunner(d, cfg, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Predict(context.Background(), m)
		return err
	}
	err = predict(200 << 10)
	sm := regexp.MustCompile(`node 1358, whose 168 in-neighbours are the most.*the smallest --max-memory that runs is (\d+)KiB`).FindStringSubmatch(fmt.Sprint(err))
	if sm == nil {
		t.Fatalf("error %v: want the node of most in-neighbours and the smallest bound", err)
	}
	kib, _ := strconv.ParseInt(sm[1], 10, 64)
	if err := predict(kib << 10); err != nil {
		t.Errorf("the suggested %d KiB: %v", kib, err)
	}
	if err := predict(kib<<10 - 4096); err == nil {
		t.Errorf("%d KiB, below the suggested %d KiB, ran", kib-4, kib)
	}
}

// TestInferenceFromDisk: inference alone (Load's runners) reads features
// from disk with explicit reads where they are placed there (in full-graph
// mode too, where training maps them), with the same logits as from
// memory; a user's feature cache is at most the file, and refused over
// the memory available (before its fill).
func TestInferenceFromDisk(t *testing.T) {
	d := cora(t)
	cfg := Defaults(nn.GCN)
	cfg.Mode, cfg.Fanouts, cfg.EvalBatchSize = Full, nil, 512
	ref, err := newRunner(d, cfg, Hooks{}, true)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ref.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Predict(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	cfg.FeaturesInMemory = FeaturesDisk
	r, err := newRunner(d, cfg, Hooks{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.disk == nil {
		t.Fatal("inference with FeaturesDisk did not read from disk")
	}
	got, err := r.Predict(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Data, want.Data) {
		t.Fatal("logits from disk differ from those from memory")
	}
	if st := r.disk.IOStats(); st.Bytes == 0 && st.FillBytes == 0 {
		t.Fatal("nothing read from disk")
	}
	// A user's cache budget: at most the file; refused over the memory
	// available, or over the room the automatic budget leaves.
	for _, c := range []struct {
		budget, size, avail, room, want int64
		ok                              bool
	}{
		{100, 1000, 500, 300, 100, true}, {2000, 1000, 5000, 1000, 1000, true}, {2000, 1000, 0, 0, 1000, true},
		{800, 1000, 500, 300, 0, false}, {5000, 1000, 500, 300, 0, false}, {400, 1000, 500, 300, 0, false},
	} {
		got, err := cacheBudget(c.budget, c.size, c.avail, c.room)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("cacheBudget(%d, %d, %d, %d) = %d, %v", c.budget, c.size, c.avail, c.room, got, err)
		}
	}
}

// TestCacheLeavesRoomForEvaluation: the automatic cache budget from disk
// leaves room for evaluation's batches (drawn with the evaluation
// fanouts where given), none without evaluation: with the cache taking
// that room, evaluation was killed by the memory cgroup.
func TestCacheLeavesRoomForEvaluation(t *testing.T) {
	d := cora(t)
	cfg := Defaults(nn.SAGE)
	cfg.Mode, cfg.Fanouts, cfg.BatchSize, cfg.FeaturesInMemory = Sampled, []int{5, 5}, 256, FeaturesDisk
	r, err := NewRunner(d, cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.evalReserve(), int64(evalBuffers)*r.estimateBatchBytes(); got != want || got <= 0 {
		t.Errorf("evaluation's reserve %d, want %d training-sized batches, %d", got, evalBuffers, want)
	}
	r.cfg.EvalFanouts = []int{25, 25}
	if got, small := r.evalReserve(), int64(evalBuffers)*r.estimateBatchBytes(); got <= small {
		t.Errorf("larger evaluation fanouts reserve %d, not more than the training batches' %d", got, small)
	}
	r.cfg.SkipEval = true
	if got := r.evalReserve(); got != 0 {
		t.Errorf("without evaluation %d bytes reserved", got)
	}
}
