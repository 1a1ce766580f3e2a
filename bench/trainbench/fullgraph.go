package trainbench

import (
	"context"
	"fmt"
	"time"

	"github.com/graphmill/graphmill/bench/membench"
	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/internal/rng"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/train"
)

// GraphOptions configures RunGraph: full-graph or GNNAutoScale training of
// GCN or GAT with their default settings (train.Defaults) on the synthetic
// graph of Options (its Nodes, Edges, FeatureDim, Dir, Epochs and Threads;
// the sampling fields are unused).
type GraphOptions struct {
	Options
	Model nn.Kind
	Mode  train.Mode // train.Full or train.GAS
	// Partitioner splits the graph into parts for GAS (train.WithPartitioner).
	Partitioner train.Partitioner
}

// GraphReport is what RunGraph measured, averaged over the steady-state
// epochs (all but the first).
type GraphReport struct {
	// Machine is the CPU measured on (isa.Describe).
	Machine    isa.Machine `json:"machine"`
	Model      string      `json:"model"`
	Mode       string      `json:"mode"`
	Nodes      int         `json:"nodes"`
	Edges      int64       `json:"edges"`
	FeatureDim int         `json:"feature_dim"`
	Epochs     int         `json:"epochs"`
	Threads    int         `json:"threads"`
	Kernel     string      `json:"kernel"`
	// MsPerEpoch is wall time; CPUMsPerEpoch the process's CPU time
	// (steadier on a shared machine).
	MsPerEpoch    float64 `json:"ms_per_epoch"`
	CPUMsPerEpoch float64 `json:"cpu_ms_per_epoch"`
	// StepsPerEpoch is 1 in full mode, the batches of parts under GAS.
	StepsPerEpoch int `json:"steps_per_epoch"`
	// AllocBytesPerEpoch is the Go heap allocated in a steady epoch;
	// GCCPUFraction the collector's share of the CPU over those epochs.
	AllocBytesPerEpoch float64 `json:"alloc_bytes_per_epoch"`
	GCCPUFraction      float64 `json:"gc_cpu_fraction"`
	GCCyclesPerEpoch   float64 `json:"gc_cycles_per_epoch"`
	// Kernel time per epoch (summed over the kernels' threads' wall time).
	GEMMSeconds        float64 `json:"gemm_seconds"`
	AggregateSeconds   float64 `json:"aggregate_seconds"`
	ElementwiseSeconds float64 `json:"elementwise_seconds"`
	// GEMMShapes splits GEMMSeconds by the products' shape classes, the
	// longest first (as StepSplit.GEMMShapes).
	GEMMShapes []GEMMShape `json:"gemm_shapes"`
	// OverheadMsPerEpoch is the epoch's wall time outside those kernels
	// (autograd's bookkeeping, the optimiser, allocation, scheduling): on a
	// small graph, where kernels are short, what is left to win besides
	// them. Meaningful with one thread (kernel time is summed over threads).
	OverheadMsPerEpoch float64 `json:"overhead_ms_per_epoch"`
	// The aggregation kernels' rate (values aggregated per second of
	// their wall time, forward and backward), against copies of random
	// rows as wide as the first layer's hidden rows (CeilingWidth values)
	// from a table of CeilingRows rows (ceilingRows: a row per node, or
	// per node of a GAS batch), on every kernel thread, measured after
	// training in the same run (membench.RandomRows); the ratio of the
	// two. It is a gather's ceiling, not the aggregation's: an aggregation
	// reads without writing a row per edge, and rows near each other in
	// its neighbour lists share caches, so it runs above it (1.8x in full
	// mode and 2.8x in GAS mode on bench graph --quick, Zen 5).
	AggregateValuesPerSec float64 `json:"aggregate_values_per_s"`
	CeilingValuesPerSec   float64 `json:"ceiling_values_per_s"`
	CeilingWidth          int     `json:"ceiling_width"`
	CeilingRows           int     `json:"ceiling_rows"`
	AggregateRatio        float64 `json:"aggregate_ratio_to_ceiling"`
}

// RunGraph trains o.Model in o.Mode without evaluation and reports the
// steady-state epochs (call Prepare first).
func RunGraph(ctx context.Context, o GraphOptions) (*GraphReport, error) {
	if o.Model != nn.GCN && o.Model != nn.GAT {
		return nil, fmt.Errorf("trainbench: model %q: want gcn or gat", o.Model)
	}
	if o.Mode != train.Full && o.Mode != train.GAS {
		return nil, fmt.Errorf("trainbench: mode %q: want full or gas", o.Mode)
	}
	if o.Epochs < 2 {
		return nil, fmt.Errorf("trainbench: %d epochs: need at least 2 (the first warms up)", o.Epochs)
	}
	d, err := dataset.Open(o.Dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	cfg := train.Defaults(o.Model)
	cfg.FreeOSMemory = true // as graphmill train: the epochs' memory alone
	cfg.Mode, cfg.Epochs, cfg.SkipEval, cfg.Patience = o.Mode, o.Epochs, true, 0
	cfg.NormalizeFeatures = false
	cfg.Threads = o.Threads
	if o.Threads > 0 {
		defer tensor.SetThreads(tensor.Threads())
		tensor.SetThreads(o.Threads)
	}
	var (
		last   probe
		steady []epochDelta
	)
	// A steady epoch's counters run from the end of the one before to its
	// own end (without evaluation nothing else happens in between).
	hooks := train.Hooks{
		Epoch: func(st train.EpochStats) {
			now := read()
			if st.Epoch > 0 {
				steady = append(steady, epochDelta{st, now.sub(last)})
			}
			last = now
			if o.Epoch != nil {
				o.Epoch(st)
			}
		},
	}
	tensor.EnableKernelStats(true)
	defer tensor.EnableKernelStats(false)
	var opts []train.Option
	if o.Partitioner != nil {
		opts = append(opts, train.WithPartitioner(o.Partitioner))
	}
	r, err := train.NewRunner(d, cfg, hooks, opts...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, err := r.Run(ctx); err != nil {
		return nil, err
	}
	if len(steady) == 0 {
		return nil, fmt.Errorf("trainbench: no steady-state epoch ran")
	}
	rep := &GraphReport{Machine: isa.Describe(), Model: string(o.Model), Mode: string(o.Mode), Nodes: d.Meta.NumNodes, Edges: d.Meta.NumEdges, FeatureDim: d.Meta.FeatureDim,
		Epochs: o.Epochs, Threads: tensor.Threads(), Kernel: tensor.Kernel(), StepsPerEpoch: steady[0].st.MicroBatches}
	var p probe
	var secs float64
	for _, e := range steady {
		p = p.add(e.p)
		secs += e.st.Seconds
	}
	n := float64(len(steady))
	rep.MsPerEpoch = 1000 * secs / n
	rep.CPUMsPerEpoch = 1000 * p.cpu.Seconds() / n
	rep.AllocBytesPerEpoch = float64(p.allocBytes) / n
	rep.GCCyclesPerEpoch = float64(p.gcCycles) / n
	if p.cpuTotal > 0 {
		rep.GCCPUFraction = p.gcCPU / p.cpuTotal
	}
	k := p.kernels
	rep.GEMMSeconds, rep.AggregateSeconds, rep.ElementwiseSeconds = k.GEMM.Seconds()/n, k.Aggregate.Seconds()/n, k.Elementwise.Seconds()/n
	rep.GEMMShapes = gemmShapes(k, n)
	rep.OverheadMsPerEpoch = max(0, rep.MsPerEpoch-1000*(rep.GEMMSeconds+rep.AggregateSeconds+rep.ElementwiseSeconds))
	if k.Aggregate > 0 {
		rep.AggregateValuesPerSec = float64(k.AggregateElems) / k.Aggregate.Seconds()
	}
	rep.CeilingWidth = cfg.Model.Hidden * max(cfg.Model.Heads, 1)
	rep.CeilingRows = ceilingRows(cfg, d.Meta.NumNodes)
	rep.CeilingValuesPerSec = randomRowCeiling(rep.CeilingRows, rep.CeilingWidth) * float64(rep.CeilingWidth)
	if rep.CeilingValuesPerSec > 0 {
		rep.AggregateRatio = rep.AggregateValuesPerSec / rep.CeilingValuesPerSec
	}
	return rep, nil
}

// ceilingRows is the rows of the table the aggregation kernels read in
// one step of cfg on a graph of n nodes: every node's in full-graph mode;
// in GAS mode a batch's parts' nodes (n x PartsPerBatch / Parts, rounded
// up), without the halo's rows, so that the reference reads from a table
// no larger than a batch's.
func ceilingRows(cfg train.Config, n int) int {
	if cfg.Mode != train.GAS || cfg.Parts <= 0 {
		return n
	}
	return int((int64(n)*int64(cfg.PartsPerBatch) + int64(cfg.Parts) - 1) / int64(cfg.Parts))
}

// randomRowCeiling measures random reads of rows of width values from a
// table of n rows, in rows per second on every kernel thread.
func randomRowCeiling(n, width int) float64 {
	if n <= 0 || width <= 0 {
		return 0
	}
	table := make([]float32, n*width)
	r := rng.New(11)
	for i := range table {
		table[i] = r.Float32()
	}
	return membench.RandomRows(table, width, 8192, tensor.Threads(), 200*time.Millisecond).PerSec
}
