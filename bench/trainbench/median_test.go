package trainbench

import "testing"

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
