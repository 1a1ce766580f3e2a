// Package memorybench measures the peak memory of training a 2-layer GCN
// (hidden 128) on synthetic graphs of growing size, full-graph, sampled,
// GNNAutoScale and full-graph under a memory bound: 'graphmill bench
// memory' prints it. Every run is a child process ('graphmill train'), so
// each peak (Go heap and resident set) belongs to that run alone.
package memorybench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/synth"
)

// Options sizes the benchmark.
type Options struct {
	// Nodes lists the graph sizes; every graph has Degree edges per node
	// and FeatureDim features.
	Nodes      []int
	Degree     int
	FeatureDim int
	Hidden     int
	// Bound is the --max-memory of the bounded runs.
	Bound int64
	// FullMaxNodes is the largest graph trained full-graph without a
	// bound: its step takes about 2.4 KB per node here, so 4M nodes would
	// not fit in this machine's 24 GiB.
	FullMaxNodes int
	// NodesPerPart and PartsPerBatch size GAS batches: the number of parts
	// grows with the graph so that a batch holds the same number of nodes.
	NodesPerPart, PartsPerBatch int
	// Modes selects configurations by name (full, bounded, sampled, gas,
	// gas-bounded); empty runs them all.
	Modes []string `json:"modes,omitempty"`
	// Dir holds the generated datasets (reused when present).
	Dir string
	// Exe is the graphmill binary run for every configuration.
	Exe string
	// Progress is told which run starts.
	Progress func(step string) `json:"-"`
}

// Quick and Full are the standard sizes.
var (
	Quick = Options{Nodes: []int{50_000, 200_000}, Degree: 10, FeatureDim: 128, Hidden: 128, Bound: 256 << 20, FullMaxNodes: 2_000_000, NodesPerPart: 2000, PartsPerBatch: 10}
	Full  = Options{Nodes: []int{1_000_000, 4_000_000}, Degree: 10, FeatureDim: 128, Hidden: 128, Bound: 512 << 20, FullMaxNodes: 2_000_000, NodesPerPart: 2000, PartsPerBatch: 10}
)

// Run is one configuration on one graph.
type Run struct {
	Nodes int   `json:"nodes"`
	Edges int64 `json:"edges"`
	// Mode is full, bounded (full-graph under Bound), sampled or gas.
	Mode  string `json:"mode"`
	Bound int64  `json:"bound_bytes,omitempty"`
	// PeakRSSBytes and PeakHeapBytes are the largest of the epoch;
	// BaseHeapBytes the heap when training starts.
	PeakRSSBytes  int64 `json:"peak_rss_bytes"`
	PeakHeapBytes int64 `json:"peak_heap_bytes"`
	BaseHeapBytes int64 `json:"base_heap_bytes"`
	// StepPeakBytes is the heap training added to the base at its peak:
	// under a bound it must stay within the bound.
	StepPeakBytes int64 `json:"step_peak_bytes"`
	// DatasetBytes is the dataset's arrays (memory-mapped, counted in the
	// resident set once touched) and HistoryBytes GAS's history tables.
	DatasetBytes int64 `json:"dataset_bytes"`
	HistoryBytes int64 `json:"history_bytes"`
	// RestBytes is the peak resident set apart from the dataset and the
	// histories: what the training loop itself needs.
	RestBytes    int64   `json:"rest_bytes"`
	UnderBound   *bool   `json:"under_bound,omitempty"`
	Batches      int     `json:"batches"`
	MicroBatches int     `json:"micro_batches"`
	EpochSeconds float64 `json:"epoch_seconds"`
	Error        string  `json:"error,omitempty"`
}

// Report is the benchmark's result.
type Report struct {
	// Machine is the CPU measured on (isa.Describe).
	Machine isa.Machine `json:"machine"`
	Options Options     `json:"options"`
	Runs    []Run       `json:"runs"`
	// GASGrowth is GAS's (unbounded) RestBytes on the largest graph over
	// that on the smallest, NodesGrowth the ratio of their node counts;
	// both null unless at least two GAS runs succeeded (and the smaller's
	// rest was positive). GASGrowthMet judges the target (GASGrowth <
	// GASGrowthTarget for a graph at least GASGrowthNodes times larger):
	// null when the growth was not measured or the graph grew less than
	// that, the target being defined for that growth.
	GASGrowth    *float64 `json:"gas_rest_growth"`
	NodesGrowth  *float64 `json:"nodes_growth"`
	GASGrowthMet *bool    `json:"gas_rest_growth_met"`
	// BoundHeld says every bounded run (bounded and gas-bounded) ran and
	// kept its step peak within the bound: true only if at least one ran
	// and all held, false if one failed or exceeded it, null when none
	// was asked for (not measured). BoundedRuns counts them.
	BoundHeld   *bool `json:"bound_held"`
	BoundedRuns int   `json:"bounded_runs"`
}

// The GAS growth target: GAS's rest grows less than GASGrowthTarget when
// the graph grows GASGrowthNodes times.
const (
	GASGrowthTarget = 1.3
	GASGrowthNodes  = 4
)

// Prepare generates (or reuses) the dataset of n nodes and returns its
// directory.
func Prepare(ctx context.Context, o Options, n int) (string, error) {
	dir := filepath.Join(o.Dir, fmt.Sprintf("bench-memory-%d-%d-%d", n, o.Degree, o.FeatureDim))
	cfg := synth.Config{Name: fmt.Sprintf("synthetic-%s", units.Count(n)), Nodes: n, Edges: int64(n) * int64(o.Degree), FeatureDim: o.FeatureDim, Classes: 16, Seed: 1,
		TrainFrac: 0.02, ValFrac: 0.01, TestFrac: 0.01}
	_, err := synth.Ensure(ctx, dir, cfg)
	return dir, err
}

// RunAll runs every configuration on every graph.
func RunAll(ctx context.Context, o Options) (*Report, error) {
	rep := &Report{Machine: isa.Describe(), Options: o}
	var gas []Run
	for _, n := range o.Nodes {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf("dataset of %s nodes", units.Count(n)))
		}
		dir, err := Prepare(ctx, o, n)
		if err != nil {
			return nil, err
		}
		d, err := dataset.Open(dir)
		if err != nil {
			return nil, err
		}
		size, edges := d.Bytes(), d.Meta.NumEdges
		d.Close()
		parts := max(2, n/o.NodesPerPart)
		common := []string{"train", "--dataset", dir, "--model", "gcn", "--hidden", strconv.Itoa(o.Hidden), "--layers", "2",
			"--epochs", "1", "--no-eval", "--normalize-features=false", "--quiet"}
		bound := strconv.FormatInt(o.Bound, 10) + "B"
		for _, c := range []struct {
			mode  string
			args  []string
			bound int64
		}{
			{"full", []string{"--mode", "full"}, 0},
			{"bounded", []string{"--mode", "full", "--max-memory", bound}, o.Bound},
			{"sampled", []string{"--mode", "sampled", "--fanouts", "25,10", "--batch", "1024"}, 0},
			{"gas", []string{"--mode", "gas", "--parts", strconv.Itoa(parts), "--parts-per-batch", strconv.Itoa(o.PartsPerBatch)}, 0},
			{"gas-bounded", []string{"--mode", "gas", "--parts", strconv.Itoa(parts), "--parts-per-batch", strconv.Itoa(o.PartsPerBatch), "--max-memory", bound}, o.Bound},
		} {
			if len(o.Modes) > 0 && !slices.Contains(o.Modes, c.mode) {
				continue
			}
			if o.Progress != nil {
				o.Progress(fmt.Sprintf("%s on %s nodes", c.mode, units.Count(n)))
			}
			r := Run{Nodes: n, Edges: edges, Mode: c.mode, Bound: c.bound, DatasetBytes: size}
			if c.mode == "full" && n > o.FullMaxNodes {
				r.Error = fmt.Sprintf("skipped: more than %s nodes, the unbounded step would not fit in memory (see bounded)", units.Count(o.FullMaxNodes))
			} else if err := runChild(ctx, o.Exe, append(append([]string{}, common...), c.args...), &r); err != nil {
				r.Error = err.Error()
			} else if c.bound > 0 {
				ok := r.StepPeakBytes <= c.bound
				r.UnderBound = &ok
			}
			if c.mode == "gas" && r.Error == "" {
				// The target compares GAS's own memory across sizes.
				gas = append(gas, r)
			}
			rep.Runs = append(rep.Runs, r)
			if o.Progress != nil {
				if r.Error != "" {
					o.Progress("  " + r.Error)
				} else {
					o.Progress(fmt.Sprintf("  peak RSS %s, heap %s (training added %s), histories %s, rest %s, %d micro-batches for %d batches",
						units.Bytes(r.PeakRSSBytes), units.Bytes(r.PeakHeapBytes), units.Bytes(r.StepPeakBytes), units.Bytes(r.HistoryBytes), units.Bytes(r.RestBytes), r.MicroBatches, r.Batches))
				}
			}
		}
	}
	rep.judge(gas)
	return rep, nil
}

// judge sets the report's checks from its runs: BoundHeld from the
// bounded ones (a failed or skipped bounded run is a bound not shown to
// hold) and the GAS growth from gas, the successful unbounded GAS runs in
// order of size.
func (rep *Report) judge(gas []Run) {
	rep.BoundHeld, rep.BoundedRuns = nil, 0
	for _, r := range rep.Runs {
		if r.Bound <= 0 {
			continue
		}
		rep.BoundedRuns++
		ok := r.Error == "" && r.UnderBound != nil && *r.UnderBound
		if rep.BoundHeld == nil {
			rep.BoundHeld = &ok
		} else if !ok {
			rep.BoundHeld = &ok
		}
	}
	rep.GASGrowth, rep.NodesGrowth, rep.GASGrowthMet = nil, nil, nil
	if len(gas) >= 2 {
		a, b := gas[0], gas[len(gas)-1]
		if a.RestBytes > 0 && a.Nodes > 0 {
			g, n := float64(b.RestBytes)/float64(a.RestBytes), float64(b.Nodes)/float64(a.Nodes)
			rep.GASGrowth, rep.NodesGrowth = &g, &n
			if n >= GASGrowthNodes {
				met := g < GASGrowthTarget
				rep.GASGrowthMet = &met
			}
		}
	}
}

// runChild runs 'graphmill train' with args and fills r from its metrics.
func runChild(ctx context.Context, exe string, args []string, r *Run) error {
	f, err := os.CreateTemp("", "graphmill-bench-memory-*.json")
	if err != nil {
		return err
	}
	f.Close()
	defer os.Remove(f.Name())
	cmd := exec.CommandContext(ctx, exe, append(args, "--metrics-out", f.Name())...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return err
	}
	var m struct {
		Summary struct {
			PeakHeap     int64   `json:"peak_heap_bytes"`
			PeakRSS      int64   `json:"peak_rss_bytes"`
			BaseHeap     int64   `json:"base_heap_bytes"`
			History      int64   `json:"history_bytes"`
			Batches      int     `json:"batches"`
			MicroBatches int     `json:"micro_batches"`
			EpochSeconds float64 `json:"epoch_seconds"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("metrics of %v: %w", args, err)
	}
	s := m.Summary
	r.PeakRSSBytes, r.PeakHeapBytes, r.BaseHeapBytes, r.HistoryBytes = s.PeakRSS, s.PeakHeap, s.BaseHeap, s.History
	r.StepPeakBytes = s.PeakHeap - s.BaseHeap
	r.RestBytes = s.PeakRSS - r.DatasetBytes - s.History
	r.Batches, r.MicroBatches, r.EpochSeconds = s.Batches, s.MicroBatches, s.EpochSeconds
	return nil
}
