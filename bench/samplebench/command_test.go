package samplebench

import (
	"bytes"
	"encoding/json"
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
