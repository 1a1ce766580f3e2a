package trainbench

import (
	"context"
	"slices"
	"testing"
)

// TestRunRounds runs the benchmark end to end on a small graph: each
// round is announced, every round's kernel efficiency is reported, and
// the report is the median round's, a measured ratio (not 0, not the
// best or worst of three that differ).
func TestRunRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three times")
	}
	o := Quick
	o.Nodes, o.Edges, o.FeatureDim, o.Hidden, o.BatchSize, o.Epochs = 4000, 40_000, 32, 32, 128, 3
	o.Dir = t.TempDir()
	var started []int
	o.Round = func(i, n int) {
		if n != o.Rounds {
			t.Errorf("round %d of %d, want of %d", i, n, o.Rounds)
		}
		started = append(started, i)
	}
	ctx := context.Background()
	if err := Prepare(ctx, o); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	effs := rep.KernelEfficiencyRounds
	if len(effs) != o.Rounds {
		t.Fatalf("%d rounds reported, want %d", len(effs), o.Rounds)
	}
	if !slices.Equal(started, []int{0, 1, 2}) {
		t.Errorf("rounds started: %v, want [0 1 2]", started)
	}
	sorted := slices.Sorted(slices.Values(effs))
	if rep.KernelEfficiency != sorted[len(sorted)/2] || !(rep.KernelEfficiency > 0) {
		t.Errorf("kernel efficiency %v, want the median of %v", rep.KernelEfficiency, effs)
	}
	if rep.SeedsPerSecond <= 0 || rep.CPUSecondsPerEpoch <= 0 {
		t.Errorf("no throughput measured: %+v", rep)
	}
}
