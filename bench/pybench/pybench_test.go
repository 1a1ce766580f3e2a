package pybench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/synth"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestPrintPyBenchWording checks the text report's lines on PyG's loader:
// its rate (not the raw JSON python -m graphmill.bench gives), why it was
// skipped, and a slower step worded as slower (not "0.72 x faster").
func TestPrintPyBenchWording(t *testing.T) {
	for _, c := range []struct {
		pyg       string
		epoch     float64
		want, not []string
	}{
		{`{"batches": 60, "batches_per_s": 12.5}`, 0.72,
			[]string{"PyG NeighborLoader (a run alone)       12.5 batches/s", "PyG GraphSAGE step 1.39 x slower on it"}, []string{"{", "x faster"}},
		{`{"batches": 60, "batches_per_s": 12.5}`, 1.3, []string{"PyG GraphSAGE step 1.30 x faster on it"}, []string{"slower"}},
		{`{"skipped": "PyG's NeighborLoader cannot sample here: no pyg-lib"}`, 0,
			[]string{"PyG NeighborLoader (a run alone)    skipped: PyG's NeighborLoader cannot sample here: no pyg-lib"}, []string{"{"}},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.pyg), &v); err != nil {
			t.Fatal(err)
		}
		r := &Report{PyG: v, NeighborLoader: 20, VsPyGLoader: 1.6, VsPyGEpoch: c.epoch, NeighborRatioToGoLoader: 0.5}
		if c.epoch == 0 {
			r.VsPyGLoader = 0
		}
		var b bytes.Buffer
		printPyBench(&b, r)
		out := b.String()
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("report lacks %q:\n%s", w, out)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.Contains(line, "PyG") {
				continue
			}
			for _, w := range c.not {
				if strings.Contains(line, w) {
					t.Errorf("report line %q holds %q", line, w)
				}
			}
		}
	}
	if got := fasterOrSlower(0); got != "not measured" {
		t.Errorf("fasterOrSlower(0) = %q", got)
	}
}

// TestTimedBatches checks that every side is given the same number of
// batches, never more than an epoch holds.
func TestTimedBatches(t *testing.T) {
	for _, c := range []struct {
		asked, perEpoch, want int
		err                   bool
	}{
		{asked: 25, perEpoch: 100, want: 25},
		{asked: 25, perEpoch: 8, want: 8}, // a small dataset: one epoch, not 25 over several
		{asked: 8, perEpoch: 8, want: 8},
		{asked: 25, perEpoch: 1, err: true},
		{asked: 1, perEpoch: 100, err: true},
	} {
		got, err := timedBatches(c.asked, c.perEpoch)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("timedBatches(%d, %d) = %d, %v; want %d (error %v)", c.asked, c.perEpoch, got, err, c.want, c.err)
		}
	}
}

// TestRun runs the whole benchmark on a small generated graph: a real
// "graphmill serve sampler", the Go loader and client, and the Python
// client from the source tree.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds graphmill and runs Python")
	}
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy, grpc, torch, google.protobuf").Run(); err != nil {
		t.Skipf("%s lacks numpy, grpcio, protobuf or torch: %v", py, err)
	}
	tmp := t.TempDir()
	gm := filepath.Join(tmp, "graphmill")
	if out, err := exec.Command("go", "build", "-o", gm, "../../cmd/graphmill").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx := context.Background()
	dir := filepath.Join(tmp, "g")
	if _, err := synth.Generate(ctx, dir, synth.Config{Nodes: 20000, Edges: 200000, FeatureDim: 16, Classes: 4, Seed: 1}, false); err != nil {
		t.Fatal(err)
	}
	src, _ := filepath.Abs("../../python")
	rep, err := Run(ctx, Config{Dataset: dir, Graphmill: gm, Python: py, PythonPath: src, Fanouts: []int{5, 5},
		BatchSize: 128, Batches: 4, Rounds: 1, Workers: 2, Seed: 1, Modes: []string{"frame", "local"}, PyG: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.GoLoader <= 0 || rep.GoClient <= 0 || len(rep.Python) != 2 {
		t.Fatalf("report %+v", rep)
	}
	for _, p := range rep.Python {
		if p.Batches != 4 || p.BatchesPerS <= 0 || p.CopiesPerBatch != 0 || p.ArraysChecked == 0 {
			t.Errorf("python %s: %+v", p.Features, p)
		}
		if p.RatioToGoLoader <= 0 || len(p.Rounds) != 1 {
			t.Errorf("python %s ratios: %+v", p.Features, p)
		}
	}
	if rep.Python[0].FrameMiB <= rep.Python[1].FrameMiB {
		t.Errorf("frames with features (%.2f MiB) are not larger than without (%.2f MiB)", rep.Python[0].FrameMiB, rep.Python[1].FrameMiB)
	}
	if rep.PyG == nil {
		t.Error("no PyG entry (timed or skipped)")
	}
	_ = os.Remove(gm)
}
