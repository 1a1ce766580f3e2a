package partitionbench

import (
	"context"
	"math"
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
		if rep.Gpmetis && (r.Gpmetis == nil || r.CutRatio == nil || *r.CutRatio <= 0) {
			t.Errorf("no gpmetis figures: %+v", r)
		}
		if !strings.Contains(r.Line(), "cora") {
			t.Errorf("line %q", r.Line())
		}
	}
}

// TestAddRatios checks that a gpmetis figure of 0 gives no ratio (n/a),
// never a ratio of 0 or one taken into the maxima, and that such records
// are counted.
func TestAddRatios(t *testing.T) {
	rec := func(ourCut, theirCut int64, ourS, theirS float64) Record {
		return Record{Graph: "g", Parts: 4, Ours: Run{EdgeCut: ourCut, Seconds: ourS, CPUSeconds: ourS},
			Gpmetis: &GpmetisRun{Run: Run{EdgeCut: theirCut, Seconds: theirS + 0.01}, ReportedSeconds: theirS}}
	}
	for _, c := range []struct {
		name          string
		recs          []Record
		maxCut, maxT  *float64
		noCut, noTime int
		line          []string
	}{
		{name: "both measured", recs: []Record{rec(110, 100, 0.02, 0.04)}, maxCut: ptr(1.1), maxT: ptr(0.5), line: []string{"cut x1.100 time x0.50"}},
		{name: "gpmetis reported 0.000 s", recs: []Record{rec(110, 100, 0.0005, 0)}, maxCut: ptr(1.1), noTime: 1, line: []string{"time n/a (cpu n/a"}},
		{name: "gpmetis cut 0, ours 3", recs: []Record{rec(3, 0, 0.02, 0.04)}, maxT: ptr(0.5), noCut: 1, line: []string{"cut n/a time x0.50"}},
		{name: "both cut 0", recs: []Record{rec(0, 0, 0.02, 0.04)}, maxCut: ptr(1.0), maxT: ptr(0.5), line: []string{"cut x1.000"}},
		{name: "one without, one with", recs: []Record{rec(110, 100, 0.0005, 0), rec(90, 100, 0.03, 0.04)}, maxCut: ptr(1.1), maxT: ptr(0.75), noTime: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := &Report{}
			for i := range c.recs {
				rep.addRatios(&c.recs[i])
			}
			eq := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || math.Abs(*a-*b) < 1e-12) }
			if !eq(rep.MaxCutRatio, c.maxCut) || !eq(rep.MaxTimeRatio, c.maxT) || rep.NoCutRatio != c.noCut || rep.NoTimeRatio != c.noTime {
				t.Errorf("max cut %s, max time %s, %d without cut, %d without time; want %s, %s, %d, %d",
					na(rep.MaxCutRatio, "%g"), na(rep.MaxTimeRatio, "%g"), rep.NoCutRatio, rep.NoTimeRatio, na(c.maxCut, "%g"), na(c.maxT, "%g"), c.noCut, c.noTime)
			}
			l := c.recs[0].Line()
			for _, w := range c.line {
				if !strings.Contains(l, w) {
					t.Errorf("line %q lacks %q", l, w)
				}
			}
			if strings.Contains(l, "x0.00 ") || strings.Contains(l, "x0.000 ") || strings.Contains(l, "MB") {
				t.Errorf("line %q", l)
			}
		})
	}
}

func ptr(x float64) *float64 { return &x }
