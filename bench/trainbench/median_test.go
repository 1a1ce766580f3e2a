package trainbench

import (
	"testing"

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
