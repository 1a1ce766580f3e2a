// Package trainbench measures sampled GraphSAGE training throughput: the
// configuration of 'graphmill bench train' (2 layers, hidden 256, fanouts
// [25,10], batch 1024) on a synthetic power-law graph, with the epoch split
// into sampling, gathering, compute and waiting.
package trainbench

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/synth"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/train"
)

// Options sizes the benchmark.
type Options struct {
	Nodes, FeatureDim int
	Edges             int64
	// TrainFrac is the fraction of nodes used as training seeds.
	TrainFrac float64
	Epochs    int
	Hidden    int
	Fanouts   []int
	BatchSize int
	Workers   int
	Threads   int
	// Dir holds the synthetic dataset (reused when it matches).
	Dir string
	// Epoch, if set, is called after every epoch.
	Epoch func(train.EpochStats)
}

// Quick and Full are the standard sizes (Full: 1M nodes, 20M edges, 100
// features, the graph PyG's published CPU numbers were measured on).
var (
	Quick = Options{Nodes: 100_000, Edges: 2_000_000, FeatureDim: 100, TrainFrac: 0.1, Epochs: 1, Hidden: 256, Fanouts: []int{25, 10}, BatchSize: 1024}
	Full  = Options{Nodes: 1_000_000, Edges: 20_000_000, FeatureDim: 100, TrainFrac: 0.1, Epochs: 2, Hidden: 256, Fanouts: []int{25, 10}, BatchSize: 1024}
)

// Report is the benchmark's result. Times are per epoch, averaged.
type Report struct {
	Nodes          int     `json:"nodes"`
	Edges          int64   `json:"edges"`
	FeatureDim     int     `json:"feature_dim"`
	Seeds          int     `json:"seeds_per_epoch"`
	BatchSize      int     `json:"batch_size"`
	Fanouts        []int   `json:"fanouts"`
	Hidden         int     `json:"hidden"`
	Epochs         int     `json:"epochs"`
	Threads        int     `json:"threads"`
	Kernel         string  `json:"kernel"`
	EpochSeconds   float64 `json:"epoch_seconds"`
	SeedsPerSecond float64 `json:"seeds_per_second"`
	SampleSeconds  float64 `json:"sample_seconds"`
	GatherSeconds  float64 `json:"gather_seconds"`
	ComputeSeconds float64 `json:"compute_seconds"`
	WaitSeconds    float64 `json:"wait_seconds"`
	// WaitFraction is waiting / epoch time: the share of the epoch the
	// trainer was starved by the pipeline (target < 5%).
	WaitFraction float64 `json:"wait_fraction"`
}

// Prepare makes sure the synthetic dataset of o exists in o.Dir.
func Prepare(ctx context.Context, o Options) error {
	cfg := synth.Config{Name: "bench-train", Nodes: o.Nodes, Edges: o.Edges, FeatureDim: o.FeatureDim, Classes: 16, Seed: 1,
		TrainFrac: o.TrainFrac, ValFrac: 0.01, TestFrac: 0.01}
	_, err := synth.Ensure(ctx, o.Dir, cfg)
	return err
}

// Run trains and reports throughput (call Prepare first).
func Run(ctx context.Context, o Options) (*Report, error) {
	d, err := dataset.Open(o.Dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	d.AdviseHuge()
	cfg := train.Defaults(nn.SAGE)
	cfg.Model.Hidden = o.Hidden
	cfg.Model.Layers = len(o.Fanouts)
	cfg.Fanouts, cfg.BatchSize = o.Fanouts, o.BatchSize
	cfg.Epochs, cfg.SkipEval = o.Epochs, true
	cfg.Workers, cfg.Threads = o.Workers, o.Threads
	if o.Threads > 0 {
		defer tensor.SetThreads(tensor.Threads())
		tensor.SetThreads(o.Threads)
	}
	cfg.NormalizeFeatures = false
	r, err := train.NewRunner(d, cfg, train.Hooks{Epoch: o.Epoch})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	res, err := r.Run(ctx)
	if err != nil {
		return nil, err
	}
	s := res.Summary
	if s.Epochs == 0 {
		return nil, fmt.Errorf("trainbench: no epoch ran")
	}
	rep := &Report{
		Nodes: o.Nodes, Edges: o.Edges, FeatureDim: o.FeatureDim, Seeds: len(d.Train), BatchSize: o.BatchSize,
		Fanouts: o.Fanouts, Hidden: o.Hidden, Epochs: s.Epochs, Threads: tensor.Threads(), Kernel: tensor.Kernel(),
		EpochSeconds: s.EpochSeconds, SeedsPerSecond: s.SeedsPerSecond,
		SampleSeconds: s.SampleSeconds, GatherSeconds: s.GatherSeconds, ComputeSeconds: s.ComputeSeconds, WaitSeconds: s.WaitSeconds,
	}
	if s.EpochSeconds > 0 {
		rep.WaitFraction = s.WaitSeconds / s.EpochSeconds
	}
	return rep, nil
}
