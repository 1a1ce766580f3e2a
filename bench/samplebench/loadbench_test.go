package samplebench

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRunCora runs a small benchmark on the embedded Cora dataset and
// checks that every ratio is the measured rate over the ceiling measured
// beside it, that the ceilings table holds at least that ceiling, and that
// the report notes that the graph stays in cache.
func TestRunCora(t *testing.T) {
	cfg := Config{
		Datasets: []string{"cora"}, Fanouts: [][]int{{10, 5}}, BatchSize: 256, Workers: []int{1, 2},
		Batches: 8, CeilingTime: 5 * time.Millisecond, ConsumerTime: time.Millisecond, Seed: 1,
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Datasets) != 1 {
		t.Fatalf("%d datasets", len(rep.Datasets))
	}
	d := rep.Datasets[0]
	best := map[int]Ceiling{}
	for _, c := range d.Ceilings {
		best[c.Workers] = c
	}
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
	if len(d.Sampling) != 2 {
		t.Fatalf("%d sampling results, want 2", len(d.Sampling))
	}
	for _, s := range d.Sampling {
		if s.EdgesPerSec <= 0 || s.Ceiling <= 0 || !close(s.Ratio, s.EdgesPerSec/s.Ceiling) {
			t.Errorf("sampling %+v: ratio is not edges/s over the ceiling beside it", s)
		}
		if s.Workers == 2 && !(s.Scaling > 0 && s.ReadScaling > 0 && s.ArithmeticScaling > 0) {
			t.Errorf("sampling %+v: no scaling over one worker", s)
		}
		if s.Workers == 1 && s.Scaling != 0 {
			t.Errorf("sampling %+v: scaling set for the fewest workers", s)
		}
		if best[s.Workers].RandomReads < s.Ceiling {
			t.Errorf("ceilings table (%v reads/s) below a paired ceiling (%v)", best[s.Workers].RandomReads, s.Ceiling)
		}
		// The split covers the measured batches only (not the warm-up
		// ones): its hops' edges add up to the edges a batch.
		hopEdges := 0.0
		for _, h := range s.Hops {
			hopEdges += h.EdgesPerBatch
			if h.Draw <= 0 || h.Relabel <= 0 {
				t.Errorf("sampling %+v: hop %+v without a split", s, h)
			}
		}
		if len(s.Hops) != 2 || !close(hopEdges, s.EdgesPerBatch) || s.DrawNs <= 0 || s.RelabelNs <= 0 {
			t.Errorf("sampling %+v: split over %d hops of %v edges a batch, want 2 of %v", s, len(s.Hops), hopEdges, s.EdgesPerBatch)
		}
	}
	// Cora's 64 KB graph is held in cache, which the report says.
	if !slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, "stays in cache") }) {
		t.Errorf("notes %q: none says the graph stays in cache", d.Notes)
	}
	if len(d.Gather) == 0 {
		t.Fatal("no gather results")
	}
	// Every gather's ceiling reads rows as wide as its source's: half
	// the bytes for float16, kept apart in the ceilings table.
	half := false
	for _, g := range d.Gather {
		if g.RowsPerSec <= 0 || g.Ceiling <= 0 || !close(g.Ratio, g.RowsPerSec/g.Ceiling) {
			t.Errorf("gather %+v: ratio is not rows/s over the ceiling beside it", g)
		}
		want, table := 4*d.FeatureDim, best[g.Workers].RandomRows
		if strings.Contains(g.Source, "float16") {
			want, table, half = 2*d.FeatureDim, best[g.Workers].RandomHalfRows, true
		}
		if g.RowBytes != want {
			t.Errorf("gather %+v: ceiling over rows of %d bytes, want %d", g, g.RowBytes, want)
		}
		if table < g.Ceiling {
			t.Errorf("ceilings table (%v rows/s of %d bytes) below a paired ceiling (%v)", table, want, g.Ceiling)
		}
	}
	if !half {
		t.Error("no float16 gather")
	}
	// Cora's graph is smaller than the read ceiling's least array, and
	// the report says how large that was.
	if d.ReadArrayBytes != 4<<20 || d.GraphBytes >= d.ReadArrayBytes {
		t.Errorf("random reads over %d bytes for a graph of %d, want 4 MiB", d.ReadArrayBytes, d.GraphBytes)
	}
}
