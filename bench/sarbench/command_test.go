package sarbench

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sar"
)

func TestParseBandwidth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{{"25Gbit", 25e9, true}, {"100Gbit/s", 100e9, true}, {"400Mbit", 400e6, true}, {"10G", 10e9, true}, {"1e9", 1e9, true}, {"fast", 0, false}, {"25GB", 200e9, true}, {"3.125GB/s", 25e9, true}, {"-1Gbit", 0, false}, {"0", 0, false}} {
		got, err := parseBandwidth(tc.in)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("parseBandwidth(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestBytesCheckNeedsAMinimum: a run on several ranks without an
// analytic minimum fails instead of passing the ratio check with 0.
func TestBytesCheckNeedsAMinimum(t *testing.T) {
	for _, c := range []struct {
		name  string
		ranks int
		rs    []RankReport
		want  string // "" : no error
	}{
		{"one rank", 1, []RankReport{{Rank: 0}}, ""},
		{"measured", 2, []RankReport{{Rank: 0, ExchangeBytes: 110, MinBytes: 100}, {Rank: 1, ExchangeBytes: 100, MinBytes: 100}}, ""},
		{"no minimum anywhere", 2, []RankReport{{Rank: 0}, {Rank: 1}}, "no analytic minimum"},
		{"sent against 0", 2, []RankReport{{Rank: 0, ExchangeBytes: 100, MinBytes: 100}, {Rank: 1, ExchangeBytes: 50}}, "rank 1 sent 50 B"},
	} {
		r := Run{Ranks: c.ranks}
		for _, rr := range c.rs {
			r.add(rr)
		}
		err := r.checkBytes()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	if got := cli.Measured(0, "%.2f"); got != "-" {
		t.Errorf("an unmeasured ratio prints %q", got)
	}
}

// TestRunRankReportsTheMinimum runs two ranks in this process on a small
// graph: each reports the analytic minimum of its last step (it was read
// before the first step, and was 0), and the bytes ratio is near 1.
func TestRunRankReportsTheMinimum(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and partitions a graph")
	}
	ctx := context.Background()
	o := Options{Nodes: 3000, Degree: 8, FeatureDim: 16, Model: "sage", Hidden: 16, Layers: 2, Ranks: []int{1, 2}, Dir: t.TempDir()}
	dir, _, err := Prepare(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := dist.LocalGroup(ctx, 2, dist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, g := range gs {
			g.Close()
		}
	}()
	reps := make([]*RankReport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[r], errs[r] = RunRank(ctx, gs[r], RankOptions{Dataset: dir, Mode: sar.SAR, Epochs: 0,
				Model: nn.Config{Kind: nn.SAGE, Hidden: 16, Layers: 2, Seed: 1}})
		}()
	}
	wg.Wait()
	run := Run{Mode: sar.SAR, Ranks: 2}
	for r := range 2 {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		if reps[r].MinBytes <= 0 {
			t.Errorf("rank %d: analytic minimum %d", r, reps[r].MinBytes)
		}
		run.add(*reps[r])
	}
	if err := run.checkBytes(); err != nil {
		t.Error(err)
	}
	if run.BytesRatio < 0.99 || run.BytesRatio > 1.1 {
		t.Errorf("bytes / minimum %.3f", run.BytesRatio)
	}
}
