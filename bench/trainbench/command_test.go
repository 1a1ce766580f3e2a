package trainbench

import (
	"bytes"
	"strings"
	"testing"
)

// TestPrintKernelEfficiency checks that the CPU-time efficiency is printed
// beside the per-CPU-second ceilings its ideal time comes from, the wall
// one beside the wall ceilings, and "-" where nothing was measured.
func TestPrintKernelEfficiency(t *testing.T) {
	for _, c := range []struct {
		name      string
		rep       Report
		want, not []string
	}{
		{
			name: "both measured",
			rep: Report{
				Ceilings:           Ceilings{GEMMGFlops: 150, GEMMGFlopsPerCPU: 77, AggregateValuesPerSec: 3e9, AggregateValuesPerCPU: 1.5e9, GatherRowsPerSec: 4e6, GatherRowsPerCPU: 2e6},
				Step:               StepSplit{IdealSeconds: 1.5, IdealWallSeconds: 0.8},
				CPUSecondsPerEpoch: 2, EpochSeconds: 1, KernelEfficiency: 0.75, KernelEfficiencyWall: 0.8,
			},
			want: []string{"0.75 in CPU time", "per CPU-second measured in this run (77 GFLOP/s, 1.5G values/s, 2M rows/s) would take 1.5s",
				"0.80 in wall time", "(150 GFLOP/s, 3G values/s, 4M rows/s; gather on one goroutine) they would take 800ms"},
			not: []string{"(150 GFLOP/s, 3G values/s, 4M rows/s) would take 1.5s"},
		},
		{
			name: "no CPU clock",
			rep: Report{
				Ceilings:     Ceilings{GEMMGFlops: 150, AggregateValuesPerSec: 3e9, GatherRowsPerSec: 4e6},
				Step:         StepSplit{IdealWallSeconds: 0.8},
				EpochSeconds: 1, KernelEfficiency: 0.8, KernelEfficiencyWall: 0.8,
			},
			want: []string{"efficiency - in CPU time", "(- GFLOP/s, - values/s, - rows/s) would take - of the epoch's - CPU", "0.80 in wall time"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			printKernelEfficiency(&b, &c.rep)
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("%q lacks %q", b.String(), w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("%q has %q", b.String(), w)
				}
			}
		})
	}
}
