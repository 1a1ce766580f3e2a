package trainbench

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/train"
)

func TestMedianCeilings(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []Ceilings
		want Ceilings
	}{
		{"one", []Ceilings{{GEMMGFlops: 5}}, Ceilings{GEMMGFlops: 5}},
		{"three: the middle, not the best", []Ceilings{{GEMMGFlops: 90, GatherRowsPerSec: 0}, {GEMMGFlops: 60, GatherRowsPerSec: 4}, {GEMMGFlops: 70, GatherRowsPerSec: 6}},
			Ceilings{GEMMGFlops: 70, GatherRowsPerSec: 5}}, // the gather, measured twice: their mean
		{"unmeasured stays 0", []Ceilings{{AggregateValuesPerCPU: 0}, {AggregateValuesPerCPU: 0}}, Ceilings{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := medianCeilings(tc.in); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWarmupEpochs(t *testing.T) {
	for _, tc := range []struct {
		batches, buffers, want int
	}{
		{10, 12, 2}, // quick: ten batches cannot fill twelve buffers
		{10, 10, 1},
		{100, 12, 1}, // full
		{3, 12, 4},
		{10, 0, 1},  // no loader (full-graph): one
		{0, 12, 1},  // no batches: one
		{10, 21, 3}, // a buffer past two epochs' batches
	} {
		if got := warmupEpochs(train.EpochStats{Batches: tc.batches, Buffers: tc.buffers}); got != tc.want {
			t.Errorf("%d batches, %d buffers: %d warm-up epochs, want %d", tc.batches, tc.buffers, got, tc.want)
		}
	}
}

// TestSummariseSplit checks the split of the kernel efficiency between
// the step and its loader: GEMM and aggregation at their ceilings over
// the epoch's CPU less the loader's sampling and gathering.
func TestSummariseSplit(t *testing.T) {
	ceil := Ceilings{GEMMGFlops: 2, GEMMGFlopsPerCPU: 1, AggregateValuesPerSec: 2e9, AggregateValuesPerCPU: 1e9, GatherRowsPerSec: 2e6, GatherRowsPerCPU: 1e6}
	for _, tc := range []struct {
		name                         string
		sampleCPU, gatherCPU         float64
		wantLoader, wantStep, wantKE float64
	}{
		// 0.6 s of GEMM, 0.2 s of aggregation and 0.1 s of gathering at
		// the ceilings, over 1.5 s of CPU of which the loader took 0.5.
		{"loader half sampling", 0.25, 0.25, 0.5, 0.8, 0.6},
		{"no sampling time", 0, 0.5, 0.5, 0.8, 0.6},
		// Without the loader's CPU time (no clock) no split is made.
		{"no gather clock", 0.3, 0, 0.3, 0, 0.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &Report{Ceilings: ceil}
			e := epochDelta{st: train.EpochStats{Seconds: 1, GatheredRows: 100_000, SampleCPUSeconds: tc.sampleCPU, GatherCPUSeconds: tc.gatherCPU}}
			e.p.cpu = 1500 * time.Millisecond
			e.p.kernels = tensor.KernelStats{GEMMFlops: 600_000_000, AggregateElems: 200_000_000}
			rep.summarise([]epochDelta{e})
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if !near(rep.LoaderCPUSeconds, tc.wantLoader) || !near(rep.KernelEfficiencyStep, tc.wantStep) || !near(rep.KernelEfficiency, tc.wantKE) {
				t.Errorf("loader %v, step %v, kernel efficiency %v; want %v, %v, %v",
					rep.LoaderCPUSeconds, rep.KernelEfficiencyStep, rep.KernelEfficiency, tc.wantLoader, tc.wantStep, tc.wantKE)
			}
		})
	}
}

// TestGEMMShapes: the step's products by shape class, per epoch, the
// longest first, each at its own rate.
func TestGEMMShapes(t *testing.T) {
	k := tensor.KernelStats{GEMMShapes: map[string]tensor.GEMMClass{
		"NT+ 8k-16k×256×200": {Calls: 20, Time: 40 * time.Millisecond, Flops: 8e9},
		"TN+ 200×256×8k-16k": {Calls: 20, Time: 60 * time.Millisecond, Flops: 9e9},
		"NN 1k-2k×16×512":    {Calls: 2, Time: 2 * time.Millisecond, Flops: 1e8},
	}}
	got := gemmShapes(k, 2)
	want := []GEMMShape{
		{Shape: "TN+ 200×256×8k-16k", Calls: 10, Seconds: 0.03, GFlops: 150},
		{Shape: "NT+ 8k-16k×256×200", Calls: 10, Seconds: 0.02, GFlops: 200},
		{Shape: "NN 1k-2k×16×512", Calls: 1, Seconds: 0.001, GFlops: 50},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d classes, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Shape != w.Shape || g.Calls != w.Calls || math.Abs(g.Seconds-w.Seconds) > 1e-12 || math.Abs(g.GFlops-w.GFlops) > 1e-9 {
			t.Errorf("class %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestMedianBy(t *testing.T) {
	type x struct {
		id int
		v  float64
	}
	key := func(e x) float64 { return e.v }
	for _, tc := range []struct {
		name string
		in   []x
		want int
	}{
		{"one", []x{{0, 5}}, 0},
		{"three, not in order", []x{{0, 9}, {1, 2}, {2, 4}}, 2},
		{"even count: the upper middle", []x{{0, 4}, {1, 1}, {2, 3}, {3, 2}}, 2},
		{"ties keep their order", []x{{0, 1}, {1, 1}, {2, 1}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			if got := medianBy(in, key); got.id != tc.want {
				t.Errorf("got %+v, want id %d", got, tc.want)
			}
			if !slices.Equal(in, tc.in) {
				t.Errorf("input reordered: %v", in)
			}
		})
	}
}
