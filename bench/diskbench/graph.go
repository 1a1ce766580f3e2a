package diskbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/graphmill/graphmill/internal/cgroup"
	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/synth"
)

// GraphRun is one epoch of sampled training on a graph larger than the
// memory cgroup it runs in.
type GraphRun struct {
	// Mode is --graph-on-disk's value: "yes" (random-access advice and
	// reads in flight ahead of sampling), "advice" (the advice alone) or
	// "no" (the kernel's default readahead).
	Mode         string `json:"mode"`
	RandomAdvice bool   `json:"random_advice"`
	// GraphReadBytes is what the reads in flight read (mode yes).
	GraphReadBytes int64   `json:"graph_read_bytes,omitempty"`
	EpochSeconds   float64 `json:"epoch_seconds,omitempty"`
	ReadBytes      int64   `json:"kernel_read_bytes"`
	// TimedOut says the run was stopped after Seconds without finishing.
	TimedOut bool    `json:"timed_out,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// GraphReport is the graph-larger-than-memory case of the benchmark.
type GraphReport struct {
	// Machine is the CPU measured on (isa.Describe).
	Machine    isa.Machine `json:"machine"`
	Nodes      int         `json:"nodes"`
	Edges      int64       `json:"edges"`
	GraphBytes int64       `json:"graph_bytes"`
	LimitBytes int64       `json:"memory_limit_bytes"`
	Runs       []GraphRun  `json:"runs"`
}

// RunGraph trains one epoch of GraphSAGE on a generated graph of 4M nodes
// and 80M edges (352 MB of offsets and neighbour lists, 4 features held in
// memory) in a memory cgroup of 160 MB, the graph's pages dropped first:
// with the graph's random-access advice and reads in flight ahead of
// sampling, with the advice alone, then with the kernel's default
// readahead, stopped at 5x the advice run's time (and 60 s at least) if it
// has not finished. Root only (the cgroup).
func RunGraph(ctx context.Context, o Options) (*GraphReport, error) {
	rep := &GraphReport{Machine: isa.Describe(), Nodes: 4_000_000, Edges: 80_000_000, LimitBytes: 160_000_000}
	dir := filepath.Join(o.Dir, "bench-disk-graph-4000000-80000000")
	if _, err := synth.Ensure(ctx, dir, synth.Config{Name: "bench-disk-graph", Nodes: rep.Nodes, Edges: rep.Edges, FeatureDim: 4, Classes: 16, Seed: 5,
		TrainFrac: 0.005, ValFrac: 0.001, TestFrac: 0.001}); err != nil {
		return nil, err
	}
	for _, f := range []string{"indptr.npy", "indices.npy"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		rep.GraphBytes += st.Size()
	}
	cg, err := cgroup.New(fmt.Sprintf("graphmill-bench-graph-%d", os.Getpid()), rep.LimitBytes)
	if err != nil {
		return nil, fmt.Errorf("the graph case needs a memory cgroup: %w", err)
	}
	defer cg.Close()
	limit := time.Duration(0)
	for _, mode := range []string{"yes", "advice", "no"} {
		if err := dropCache(dir); err != nil {
			return nil, err
		}
		o.say("graph of %s in a %s cgroup, --graph-on-disk %s", units.Bytes(rep.GraphBytes), units.Bytes(rep.LimitBytes), mode)
		run := GraphRun{Mode: mode, RandomAdvice: mode != "no"}
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if limit > 0 {
			rctx, cancel = context.WithTimeout(ctx, limit)
		}
		start := time.Now()
		m, kernel, err := runTrain(rctx, o.Exe, []string{"train", "--dataset", dir, "--model", "sage", "--batch", strconv.Itoa(o.Batch),
			"--fanouts", sample.FormatFanouts(o.Fanouts), "--epochs", "1", "--no-eval", "--seed", "3", "--quiet", "--features-in-memory", "yes",
			"--graph-on-disk", mode}, cg)
		cancel()
		run.Seconds, run.ReadBytes = time.Since(start).Seconds(), kernel
		switch {
		case err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
			run.TimedOut = true
		case err != nil:
			return nil, err
		default:
			run.EpochSeconds, run.GraphReadBytes = m.Summary.EpochSeconds, m.Summary.GraphReadBytes
		}
		rep.Runs = append(rep.Runs, run)
		if mode == "advice" {
			limit = max(5*time.Since(start), time.Minute)
		}
	}
	return rep, nil
}
