package partitionbench

import (
	"context"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/partition/gpmetis"
)

func TestMeasureCora(t *testing.T) {
	// An empty data directory: only the embedded Cora is measured, and the
	// missing shared graphs are reported as skipped.
	rep, err := Measure(context.Background(), Config{DataDir: t.TempDir(), Quick: true, Parts: []int{2, 8}, Repeat: 1, NoGpmetis: !gpmetis.Available()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Records) != 2 || len(rep.Skipped) != 3 {
		t.Fatalf("%d records, skipped %v", len(rep.Records), rep.Skipped)
	}
	if rep.Machine != isa.Describe() {
		t.Errorf("report's machine %+v, want %+v", rep.Machine, isa.Describe())
	}
	for _, r := range rep.Records {
		if r.Graph != "cora" || r.Nodes != 2708 || r.Edges != 5278 || r.Ours.EdgeCut <= 0 || r.Ours.Imbalance > 1.03+1e-9 {
			t.Errorf("record %+v", r)
		}
		if rep.Gpmetis && (r.Gpmetis == nil || r.CutRatio <= 0) {
			t.Errorf("no gpmetis figures: %+v", r)
		}
		if !strings.Contains(r.Line(), "cora") {
			t.Errorf("line %q", r.Line())
		}
	}
}
