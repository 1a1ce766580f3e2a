package samplebench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestCommandCora runs the command on Cora with two workers measured
// first, so that both report progress for a new measurement at once (the
// race detector checks the command's progress bar, which raced there),
// and checks that its JSON report has sampling results for each worker
// count.
func TestCommandCora(t *testing.T) {
	c := Command()
	var out bytes.Buffer
	c.SetOut(&out)
	c.SetArgs([]string{"--datasets", "cora", "--fanouts", "10,5", "--workers", "2,1", "--batch-size", "256",
		"--batches", "8", "--ceiling-time", "5ms", "--consumer-time", "1ms", "--json"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v", err)
	}
	if len(rep.Datasets) != 1 {
		t.Fatalf("report: %d datasets, want cora", len(rep.Datasets))
	}
	workers := map[int]bool{}
	for _, s := range rep.Datasets[0].Sampling {
		workers[s.Workers] = true
	}
	if !workers[1] || !workers[2] {
		t.Fatalf("sampling results for workers %v, want 1 and 2", workers)
	}
}

// TestPrintUnits checks that the gather's bytes per second are printed in
// the binary units of the sequential copy's (units.Bytes), with the row
// width its ceiling was measured over and the read ceiling's array size.
func TestPrintUnits(t *testing.T) {
	rep := &Report{Datasets: []DatasetReport{{
		Name: "g", FeatureDim: 128, GraphBytes: 64 << 10, ReadArrayBytes: 4 << 20,
		Ceilings: []Ceiling{{Workers: 1, RandomReads: 1e8, SeqCopy: 8 << 30, RandomRows: 1e7}},
		Gather:   []GatherResult{{Source: "memory float16", IDs: "sampled", Workers: 1, RowsPerSec: 1e7, BytesPerSec: 1e7 * 512, RowBytes: 256, Ceiling: 2e7, Ratio: 0.5}},
	}}}
	var b bytes.Buffer
	printSampleReport(&b, rep)
	out := b.String()
	// 5.12e9 bytes/s is 4.77 GiB/s, not "5.12" GB/s.
	for _, want := range []string{"8 GiB/s", "4.77 GiB/s", "256 B", "over an array of 4 MiB (the graph's 64 KiB, at least 4 MiB)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "5.12") || strings.Contains(out, "GB/s") {
		t.Errorf("report has decimal GB/s:\n%s", out)
	}
}
