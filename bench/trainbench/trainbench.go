// Package trainbench measures sampled GraphSAGE training throughput: the
// configuration of 'graphmill bench train' (2 layers, hidden 256, fanouts
// [25,10], batch 1024) on a synthetic power-law graph, with the epoch split
// into sampling, gathering, compute and waiting, and the step split into
// kernel classes (GEMM, aggregation, element-wise), gathering, allocation
// and garbage collection. Kernel ceilings (GEMM GFLOP/s, random-row reads)
// are measured in the same run, so kernel_efficiency — the time the
// step's GEMM, aggregation and gather work would take at those ceilings,
// over the steady-state epoch time — compares like with like.
//
// "Time" there is CPU time (Linux: the process's CPU clock), for the
// ceilings (work per CPU-second) and for the epoch alike: on a machine
// shared with other work, wall times swing with the neighbours' load,
// while CPU time counts what this process spent (kernel threads spinning
// or waiting for work included). KernelEfficiencyWall is the same ratio
// in wall time, which also charges cores left idle.
package trainbench

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/graphmill/graphmill/bench/membench"
	"github.com/graphmill/graphmill/internal/cputime"
	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/internal/rng"

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
	// Dropout is the dropout probability of every layer's input (the
	// training default, train.Defaults(nn.SAGE), in Quick and Full).
	Dropout float64
	// Rounds is how many times the whole measurement (ceilings, then the
	// epochs, then the ceilings again) runs; the round of median
	// KernelEfficiency is reported (at least one).
	Rounds int
	// Dir holds the synthetic dataset (reused when it matches).
	Dir string
	// Epoch, if set, is called after every epoch.
	Epoch func(train.EpochStats)
	// Round, if set, is called as each round starts (i from 0, of n).
	Round func(i, n int)
}

// Quick and Full are the standard sizes (Full: 1M nodes, 20M edges, 100
// features, the graph PyG's published CPU numbers were measured on).
// Quick runs nine epochs, the median of the seven after its two warm-up
// epochs reported: with five (the median of three), five runs alternated
// with five of nine read kernel efficiencies of 0.694-0.790 against
// 0.723-0.763, epochs on these VMs varying by 10-20 % of their CPU time
// (AMD EPYC Zen 5); the four more epochs take about half a second.
// Quick runs three rounds of that, each about 3 seconds, and reports the
// median: single runs on one quiet machine read 0.70-0.86 (20 runs), the
// low ones where the epochs ran in a slow stretch and the ceilings in a
// fast one (the lowest, 0.714: 0.266 CPU-seconds an epoch against
// 0.239-0.243, GEMM's ceiling 207 GFLOP/s against 191-197), and a round
// pairs its own ceilings and epochs.
var (
	Quick = Options{Nodes: 100_000, Edges: 2_000_000, FeatureDim: 100, TrainFrac: 0.1, Epochs: 9, Rounds: 3, Hidden: 256, Fanouts: []int{25, 10}, BatchSize: 1024, Dropout: train.Defaults(nn.SAGE).Model.Dropout}
	Full  = Options{Nodes: 1_000_000, Edges: 20_000_000, FeatureDim: 100, TrainFrac: 0.1, Epochs: 2, Rounds: 1, Hidden: 256, Fanouts: []int{25, 10}, BatchSize: 1024, Dropout: train.Defaults(nn.SAGE).Model.Dropout}
)

// Report is the benchmark's result. Times are per epoch, from the
// steady-state epochs (those after the warm-up, warmupEpochs, which fills
// buffers, workspaces and page tables; the last when no more ran): their
// mean with one or two, the one of median CPU time with three or more.
// Quick's ten batches an epoch leave some of the pipeline's twelve batch
// buffers unused in the first epoch: one first filled in the second
// faults in its pages there (28 MB), and a third of two-epoch quick runs
// measured that epoch 1.2x as long in CPU time (AMD EPYC Zen 5); so quick
// warms up for two epochs (and measures seven).
type Report struct {
	// Machine is the CPU measured on (isa.Describe).
	Machine isa.Machine `json:"machine"`
	// KernelEfficiency is (GEMM flops ÷ GEMM ceiling + aggregated values ÷
	// aggregation ceiling + gathered rows ÷ gather ceiling) ÷ epoch time:
	// the share of the epoch that the step's essential work would take at
	// the ceilings measured in this run (1 = nothing but that work, at
	// full speed).
	KernelEfficiency float64 `json:"kernel_efficiency"`
	// KernelEfficiencyRounds is every round's KernelEfficiency, in the
	// order they ran (Options.Rounds): the report is the median round's.
	KernelEfficiencyRounds []float64 `json:"kernel_efficiency_rounds"`
	// KernelEfficiencyWall is the same in wall time: ceilings in work per
	// wall second with the training's threads, over the epoch's wall time.
	KernelEfficiencyWall float64 `json:"kernel_efficiency_wall"`
	// KernelEfficiencyStep splits KernelEfficiency between the training
	// step and its loader: GEMM and aggregation at their ceilings over the
	// epoch's CPU time less the loader's (LoaderCPUSeconds). The loader's
	// own work is the gather, at Step.GatherRatio of its ceiling, and
	// sampling, which the ideal charges nothing.
	KernelEfficiencyStep float64 `json:"kernel_efficiency_step"`
	// LoaderCPUSeconds is the loader's CPU time per epoch: sampling
	// (Step.SampleCPUSeconds) and gathering (Step.GatherCPUSeconds, with
	// the input's dropout applied as rows are gathered), on their own
	// goroutines beside the step.
	LoaderCPUSeconds float64 `json:"loader_cpu_seconds"`
	// CPUSecondsPerEpoch is the process's CPU time per steady-state epoch.
	CPUSecondsPerEpoch float64 `json:"cpu_seconds_per_epoch"`
	// AllocBytesPerStep is the Go heap allocated per step in the steady
	// state (runtime/metrics /gc/heap/allocs:bytes).
	AllocBytesPerStep float64 `json:"alloc_bytes_per_step"`
	// GCCPUFraction is the garbage collector's share of the CPU time
	// available to the process (GOMAXPROCS × wall) in the steady state
	// (runtime/metrics /cpu/classes/gc/total over /cpu/classes/total).
	GCCPUFraction float64 `json:"gc_cpu_fraction"`
	// Step is where a steady-state epoch's time went.
	Step StepSplit `json:"step"`
	// Ceilings are the rates measured in this run.
	Ceilings Ceilings `json:"ceilings"`

	Nodes      int     `json:"nodes"`
	Edges      int64   `json:"edges"`
	FeatureDim int     `json:"feature_dim"`
	Seeds      int     `json:"seeds_per_epoch"`
	BatchSize  int     `json:"batch_size"`
	Fanouts    []int   `json:"fanouts"`
	Hidden     int     `json:"hidden"`
	Dropout    float64 `json:"dropout"`
	Epochs     int     `json:"epochs"`
	// WarmupEpochs is how many of them warmed up (warmupEpochs).
	WarmupEpochs   int     `json:"warmup_epochs"`
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

// StepSplit is a steady-state epoch's time by kernel class (wall seconds
// of the kernel calls, on the training goroutine and its kernel threads),
// with the work each did.
type StepSplit struct {
	GEMMSeconds float64 `json:"gemm_seconds"`
	GEMMGFlops  float64 `json:"gemm_gflops"`
	// GEMMShapes splits GEMMSeconds by the products' shape classes
	// (tensor.KernelStats.GEMMShapes), the longest first: which products
	// fall short of the GEMM ceiling.
	GEMMShapes         []GEMMShape `json:"gemm_shapes"`
	AggregateSeconds   float64     `json:"aggregate_seconds"`
	AggregateValues    int64       `json:"aggregate_values"`
	ElementwiseSeconds float64     `json:"elementwise_seconds"`
	// OtherSeconds is compute time outside the timed kernels (tape
	// bookkeeping, copies, the optimiser, loss, index work).
	OtherSeconds float64 `json:"other_seconds"`
	// GatherSeconds is the loader's feature gathering (its own goroutine,
	// overlapping compute), GatherCPUSeconds its thread's CPU time, and
	// GatheredRows the rows it copied.
	GatherSeconds    float64 `json:"gather_seconds"`
	GatherCPUSeconds float64 `json:"gather_cpu_seconds"`
	GatheredRows     int64   `json:"gathered_rows"`
	// SampleCPUSeconds is the loader's sampling CPU time (its threads').
	SampleCPUSeconds float64 `json:"sample_cpu_seconds"`
	// GatherRatio is the gather's rows per CPU-second inside training over
	// the one-goroutine random-row ceiling's (CPU time, as for the kernel
	// efficiency: the gather's own work, which is what a fresh buffer or
	// page faults would slow); GatherRatioWall the same in wall time,
	// which also charges the time the gather waited for a core while the
	// kernel threads had both.
	GatherRatio     float64 `json:"gather_ratio_to_ceiling"`
	GatherRatioWall float64 `json:"gather_ratio_to_ceiling_wall"`
	// AllocSeconds estimates allocation cost: the bytes allocated times
	// the cost per byte of a fresh allocation (zeroing and first-touch
	// page faults) measured in this run.
	AllocSeconds float64 `json:"alloc_seconds"`
	AllocBytes   int64   `json:"alloc_bytes"`
	// GCSeconds is CPU time of the garbage collector; GCCycles its cycles.
	GCSeconds float64 `json:"gc_cpu_seconds"`
	GCCycles  int64   `json:"gc_cycles"`
	// IdealSeconds is the CPU time GEMM, aggregation and gathering would
	// take at the ceilings (KernelEfficiency × CPU time per epoch);
	// IdealWallSeconds the wall time at the wall ceilings.
	IdealSeconds     float64 `json:"ideal_cpu_seconds"`
	IdealWallSeconds float64 `json:"ideal_wall_seconds"`
}

// GEMMShape is an epoch's products of one shape class.
type GEMMShape struct {
	// Shape is the class: ops and m×n×k ("NT+ 8k-16k×256×200": A and B
	// in parts, m from 8192 to 16383).
	Shape string `json:"shape"`
	// Calls and Seconds are per epoch; GFlops is their rate. A product's
	// time includes the work fused into it: its epilogue (bias, ReLU,
	// dropout), a gradient's mask, and rows of its operand made block by
	// block (GraphSAGE's first weight gradient computes the aggregation's
	// gradient rows as it reads them: tensor.GemmTNMultiReLUBitsRows).
	Calls   float64 `json:"calls"`
	Seconds float64 `json:"seconds"`
	GFlops  float64 `json:"gflops"`
}

// gemmShapes returns the classes of k, averaged over n epochs, the
// longest first.
func gemmShapes(k tensor.KernelStats, n float64) []GEMMShape {
	var out []GEMMShape
	for name, c := range k.GEMMShapes {
		g := GEMMShape{Shape: name, Calls: float64(c.Calls) / n, Seconds: c.Time.Seconds() / n}
		if c.Time > 0 {
			g.GFlops = float64(c.Flops) / c.Time.Seconds() / 1e9
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b GEMMShape) int {
		return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), cmp.Compare(a.Shape, b.Shape))
	})
	return out
}

// Ceilings are the machine rates measured in the run, with the kernel
// threads the training uses.
type Ceilings struct {
	// GEMMGFlops is the faster of the layer's forward product (rows ×
	// features · features × hidden) and its weight gradient's, per wall
	// second with the kernel threads; GEMMGFlopsPerCPU per CPU-second.
	GEMMGFlops       float64 `json:"gemm_gflops"`
	GEMMGFlopsPerCPU float64 `json:"gemm_gflops_per_cpu_s"`
	// AggregateValuesPerSec is random rows of the feature table read and
	// copied, in float32 values per wall second, on the kernel threads;
	// AggregateValuesPerCPU per CPU-second.
	AggregateValuesPerSec float64 `json:"aggregate_values_per_s"`
	AggregateValuesPerCPU float64 `json:"aggregate_values_per_cpu_s"`
	// GatherRowsPerSec is the same on one goroutine (the loader's gather
	// stage), in rows per second; GatherRowsPerCPU per CPU-second.
	GatherRowsPerSec float64 `json:"gather_rows_per_s"`
	GatherRowsPerCPU float64 `json:"gather_rows_per_cpu_s"`
	// FreshBytesPerSec is how fast a fresh allocation is zeroed and
	// faulted in.
	FreshBytesPerSec float64 `json:"fresh_alloc_bytes_per_s"`
}

// Prepare makes sure the synthetic dataset of o exists in o.Dir.
func Prepare(ctx context.Context, o Options) error {
	cfg := synth.Config{Name: "bench-train", Nodes: o.Nodes, Edges: o.Edges, FeatureDim: o.FeatureDim, Classes: 16, Seed: 1,
		TrainFrac: o.TrainFrac, ValFrac: 0.01, TestFrac: 0.01}
	_, err := synth.Ensure(ctx, o.Dir, cfg)
	return err
}

// Run trains and reports throughput (call Prepare first): o.Rounds
// rounds, the one of median kernel efficiency.
func Run(ctx context.Context, o Options) (*Report, error) {
	var reps []*Report
	n := max(o.Rounds, 1)
	for i := range n {
		if o.Round != nil {
			o.Round(i, n)
		}
		rep, err := runRound(ctx, o)
		if err != nil {
			return nil, err
		}
		reps = append(reps, rep)
	}
	med := medianBy(reps, func(r *Report) float64 { return r.KernelEfficiency })
	for _, r := range reps {
		med.KernelEfficiencyRounds = append(med.KernelEfficiencyRounds, r.KernelEfficiency)
	}
	return med, nil
}

// medianBy returns the element of xs (not empty) of median key: the upper
// of the middle two for an even count; equal keys keep their order in xs.
func medianBy[T any](xs []T, key func(T) float64) T {
	s := slices.Clone(xs)
	slices.SortStableFunc(s, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return s[len(s)/2]
}

// runRound is one round of Run: the ceilings and the epochs, measured on
// a training run of its own.
func runRound(ctx context.Context, o Options) (*Report, error) {
	d, err := dataset.Open(o.Dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	d.AdviseHuge()
	cfg := train.Defaults(nn.SAGE)
	cfg.FreeOSMemory = true // as graphmill train: the epochs' memory alone
	cfg.Model.Hidden = o.Hidden
	cfg.Model.Dropout = o.Dropout
	cfg.Model.Layers = len(o.Fanouts)
	cfg.Fanouts, cfg.BatchSize = o.Fanouts, o.BatchSize
	cfg.Epochs, cfg.SkipEval = o.Epochs, true
	cfg.Workers, cfg.Threads = o.Workers, o.Threads
	if o.Threads > 0 {
		defer tensor.SetThreads(tensor.Threads())
		tensor.SetThreads(o.Threads)
	}
	cfg.NormalizeFeatures = false
	ceil, err := measureCeilings(d.Features, o.FeatureDim, o.Hidden, o.BatchSize, 0)
	if err != nil {
		return nil, err
	}
	var (
		start  probe
		steady []epochDelta
		all    []epochDelta
		warmup = 1
	)
	hooks := train.Hooks{
		EpochStart: func(int, int) { start = read() },
		Epoch: func(st train.EpochStats) {
			all = append(all, epochDelta{st, read().sub(start)})
			if st.Epoch == 0 {
				// Three epochs left to measure where the run has them
				// (a machine of many cores keeps many buffers).
				warmup = min(warmupEpochs(st), max(1, o.Epochs-3))
			}
			if st.Epoch >= warmup {
				steady = append(steady, all[len(all)-1])
			}
			if o.Epoch != nil {
				o.Epoch(st)
			}
		},
	}
	tensor.EnableKernelStats(true)
	defer tensor.EnableKernelStats(false)
	r, err := train.NewRunner(d, cfg, hooks)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	res, err := r.Run(ctx)
	if err != nil {
		return nil, err
	}
	s := res.Summary
	if s.Epochs == 0 || len(all) == 0 {
		return nil, fmt.Errorf("trainbench: no epoch ran")
	}
	if len(steady) == 0 {
		// Too few epochs for the warm-up: the last one, or the only one.
		warmup = len(all) - 1
		steady = all[warmup:]
	}
	if len(steady) >= 3 {
		steady = []epochDelta{medianBy(steady, func(e epochDelta) float64 { return e.p.cpu.Seconds() })}
	}
	// Measured twice again after training (features now mapped in, the
	// machine warm): each ceiling is the median of the readings (the mean
	// of two for the gather's). Within a reading each rate is the best of
	// several groups of calls, so first-touch page faults do not lower
	// it; across readings, the best would be the fastest stretch of a
	// machine whose speed drifts by up to 1.6x within seconds (these
	// VMs), which the epochs, seconds long, average over. The gather's ceiling
	// is measured only here: it copies as many rows per batch as the steps
	// gathered, into a buffer of that size (as 'bench sample' measures
	// it), since a smaller buffer would stay in cache and a batch's does
	// not.
	var rows, batches int64
	for _, e := range steady {
		rows, batches = rows+e.st.GatheredRows, batches+int64(e.st.Batches)
	}
	perBatch := int(rows / max(batches, 1))
	readings := []Ceilings{ceil}
	for range 2 {
		if after, err := measureCeilings(d.Features, o.FeatureDim, o.Hidden, o.BatchSize, perBatch); err == nil {
			readings = append(readings, after)
		}
	}
	ceil = medianCeilings(readings)
	rep := &Report{
		Machine: isa.Describe(), Nodes: o.Nodes, Edges: o.Edges, FeatureDim: o.FeatureDim, Seeds: len(d.Train), BatchSize: o.BatchSize,
		Fanouts: o.Fanouts, Hidden: o.Hidden, Dropout: o.Dropout, Epochs: s.Epochs, WarmupEpochs: warmup, Threads: tensor.Threads(), Kernel: tensor.Kernel(),
		Ceilings: ceil,
	}
	rep.summarise(steady)
	return rep, nil
}

// warmupEpochs returns how many epochs warm up, from the first epoch's
// statistics: enough to pass as many batches as the loader keeps buffers
// (at least one epoch). Each buffer's arrays are allocated and their
// pages faulted in the first time a batch is prepared in it, and an epoch
// of fewer batches than buffers leaves some for the next (quick: ten
// batches, twelve buffers). Measured with one warm-up epoch (AMD EPYC Zen
// 5, a 12-epoch run): epochs 1-3 took 294, 294 and 279 ms of CPU time,
// the later ones 260-270; in other runs epoch 2 allocated 2.7 MB and
// faulted in 700-900 more pages than any later epoch.
func warmupEpochs(first train.EpochStats) int {
	if first.Batches <= 0 {
		return 1
	}
	return max(1, (first.Buffers+first.Batches-1)/first.Batches)
}

// epochDelta is one epoch's statistics with the runtime's and kernels'
// counters over it.
type epochDelta struct {
	st train.EpochStats
	p  probe
}

// summarise fills the averages over the steady-state epochs.
func (rep *Report) summarise(steady []epochDelta) {
	var p probe
	var secs, sample, sampleCPU, gather, gatherCPU, compute, wait float64
	var batches, rows int64
	for _, e := range steady {
		p = p.add(e.p)
		secs += e.st.Seconds
		sample += e.st.SampleSeconds
		gather += e.st.GatherSeconds
		gatherCPU += e.st.GatherCPUSeconds
		sampleCPU += e.st.SampleCPUSeconds
		compute += e.st.ComputeSeconds
		wait += e.st.WaitSeconds
		batches += int64(e.st.Batches)
		rows += e.st.GatheredRows
	}
	n := float64(len(steady))
	rep.EpochSeconds = secs / n
	if secs > 0 {
		rep.SeedsPerSecond = float64(rep.Seeds) * n / secs
		rep.WaitFraction = wait / secs
	}
	rep.SampleSeconds, rep.GatherSeconds, rep.ComputeSeconds, rep.WaitSeconds = sample/n, gather/n, compute/n, wait/n
	k := p.kernels
	sp := StepSplit{
		GEMMSeconds: k.GEMM.Seconds() / n, AggregateSeconds: k.Aggregate.Seconds() / n, ElementwiseSeconds: k.Elementwise.Seconds() / n,
		AggregateValues: int64(float64(k.AggregateElems) / n),
		GatherSeconds:   gather / n, GatherCPUSeconds: gatherCPU / n, GatheredRows: int64(float64(rows) / n),
		SampleCPUSeconds: sampleCPU / n,
		AllocBytes:       int64(float64(p.allocBytes) / n),
		GCSeconds:        p.gcCPU / n, GCCycles: int64(float64(p.gcCycles) / n),
	}
	if k.GEMM > 0 {
		sp.GEMMGFlops = float64(k.GEMMFlops) / k.GEMM.Seconds() / 1e9
	}
	sp.GEMMShapes = gemmShapes(k, n)
	sp.OtherSeconds = max(0, rep.ComputeSeconds-sp.GEMMSeconds-sp.AggregateSeconds-sp.ElementwiseSeconds)
	c := rep.Ceilings
	if c.FreshBytesPerSec > 0 {
		sp.AllocSeconds = float64(sp.AllocBytes) / c.FreshBytesPerSec
	}
	if c.GEMMGFlops > 0 && c.AggregateValuesPerSec > 0 && c.GatherRowsPerSec > 0 {
		sp.IdealWallSeconds = float64(k.GEMMFlops)/n/(c.GEMMGFlops*1e9) + float64(sp.AggregateValues)/c.AggregateValuesPerSec + float64(sp.GatheredRows)/c.GatherRowsPerSec
	}
	if c.GEMMGFlopsPerCPU > 0 && c.AggregateValuesPerCPU > 0 && c.GatherRowsPerCPU > 0 {
		sp.IdealSeconds = float64(k.GEMMFlops)/n/(c.GEMMGFlopsPerCPU*1e9) + float64(sp.AggregateValues)/c.AggregateValuesPerCPU + float64(sp.GatheredRows)/c.GatherRowsPerCPU
	}
	if sp.GatherSeconds > 0 && c.GatherRowsPerSec > 0 {
		sp.GatherRatioWall = float64(sp.GatheredRows) / sp.GatherSeconds / c.GatherRowsPerSec
	}
	sp.GatherRatio = sp.GatherRatioWall // where the CPU clock is not available
	if sp.GatherCPUSeconds > 0 && c.GatherRowsPerCPU > 0 {
		if _, ok := cputime.Process(); ok {
			sp.GatherRatio = float64(sp.GatheredRows) / sp.GatherCPUSeconds / c.GatherRowsPerCPU
		}
	}
	rep.Step = sp
	rep.CPUSecondsPerEpoch = p.cpu.Seconds() / n
	if rep.EpochSeconds > 0 {
		rep.KernelEfficiencyWall = sp.IdealWallSeconds / rep.EpochSeconds
	}
	rep.KernelEfficiency = rep.KernelEfficiencyWall // where the CPU clock is not available
	if rep.CPUSecondsPerEpoch > 0 && sp.IdealSeconds > 0 {
		rep.KernelEfficiency = sp.IdealSeconds / rep.CPUSecondsPerEpoch
	}
	rep.LoaderCPUSeconds = sp.SampleCPUSeconds + sp.GatherCPUSeconds
	if step := rep.CPUSecondsPerEpoch - rep.LoaderCPUSeconds; step > 0 && sp.IdealSeconds > 0 && sp.GatherCPUSeconds > 0 {
		gatherIdeal := float64(sp.GatheredRows) / c.GatherRowsPerCPU
		rep.KernelEfficiencyStep = (sp.IdealSeconds - gatherIdeal) / step
	}
	if batches > 0 {
		rep.AllocBytesPerStep = float64(p.allocBytes) / float64(batches)
	}
	if p.cpuTotal > 0 {
		rep.GCCPUFraction = p.gcCPU / p.cpuTotal
	}
}

// probe is a reading of the runtime's and the kernels' counters.
type probe struct {
	allocBytes, gcCycles int64
	gcCPU, cpuTotal      float64
	cpu                  time.Duration // the process's CPU clock
	kernels              tensor.KernelStats
}

var probeNames = []string{"/gc/heap/allocs:bytes", "/gc/cycles/total:gc-cycles", "/cpu/classes/gc/total:cpu-seconds", "/cpu/classes/total:cpu-seconds"}

func read() probe {
	ss := make([]metrics.Sample, len(probeNames))
	for i, n := range probeNames {
		ss[i].Name = n
	}
	metrics.Read(ss)
	u := func(i int) int64 {
		if ss[i].Value.Kind() == metrics.KindUint64 {
			return int64(ss[i].Value.Uint64())
		}
		return 0
	}
	f := func(i int) float64 {
		if ss[i].Value.Kind() == metrics.KindFloat64 {
			return ss[i].Value.Float64()
		}
		return 0
	}
	cpu, _ := cputime.Process()
	return probe{allocBytes: u(0), gcCycles: u(1), gcCPU: f(2), cpuTotal: f(3), cpu: cpu, kernels: tensor.ReadKernelStats()}
}

func (p probe) sub(o probe) probe {
	return probe{p.allocBytes - o.allocBytes, p.gcCycles - o.gcCycles, p.gcCPU - o.gcCPU, p.cpuTotal - o.cpuTotal, p.cpu - o.cpu, p.kernels.Sub(o.kernels)}
}

func (p probe) add(o probe) probe {
	return probe{p.allocBytes + o.allocBytes, p.gcCycles + o.gcCycles, p.gcCPU + o.gcCPU, p.cpuTotal + o.cpuTotal, p.cpu + o.cpu, p.kernels.Add(o.kernels)}
}

// medianCeilings returns each rate's median over the readings that
// measured it (a rate of 0 was not measured; the median of an even count
// is the mean of the middle two).
func medianCeilings(rs []Ceilings) Ceilings {
	med := func(f func(Ceilings) float64) float64 {
		var v []float64
		for _, r := range rs {
			if x := f(r); x > 0 {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			return 0
		}
		slices.Sort(v)
		return (v[(len(v)-1)/2] + v[len(v)/2]) / 2
	}
	return Ceilings{
		GEMMGFlops:            med(func(c Ceilings) float64 { return c.GEMMGFlops }),
		GEMMGFlopsPerCPU:      med(func(c Ceilings) float64 { return c.GEMMGFlopsPerCPU }),
		AggregateValuesPerSec: med(func(c Ceilings) float64 { return c.AggregateValuesPerSec }),
		AggregateValuesPerCPU: med(func(c Ceilings) float64 { return c.AggregateValuesPerCPU }),
		GatherRowsPerSec:      med(func(c Ceilings) float64 { return c.GatherRowsPerSec }),
		GatherRowsPerCPU:      med(func(c Ceilings) float64 { return c.GatherRowsPerCPU }),
		FreshBytesPerSec:      med(func(c Ceilings) float64 { return c.FreshBytesPerSec }),
	}
}

// measureCeilings measures, with the kernel threads the training uses,
// the GEMM rate on the first layer's products, random-row reads of the
// feature table (aggregation: on every kernel thread; gather: on one
// goroutine, as the loader gathers, gatherRows rows per batch into a
// buffer of that many rows; not measured when gatherRows is 0) and the
// cost of a fresh allocation.
func measureCeilings(feats []float32, dim, hidden, batch, gatherRows int) (Ceilings, error) {
	var c Ceilings
	rows := 8 * batch
	r := rng.New(7)
	fill := func(m tensor.Matrix) tensor.Matrix {
		for i := range m.Data {
			m.Data[i] = r.Float32() - 0.5
		}
		return m
	}
	x, w, y := fill(tensor.New(rows, dim)), fill(tensor.New(hidden, dim)), fill(tensor.New(rows, hidden))
	dw := tensor.New(hidden, dim)
	// best returns the shortest wall time of a call and the least CPU time
	// per call over groups of calls (the CPU clock is read per group of
	// calls lasting about 10 ms, so its granularity does not matter).
	best := func(f func() error) (wall, cpu time.Duration, err error) {
		wall, cpu = time.Duration(1<<62), time.Duration(1<<62)
		for range 5 {
			c0, _ := cputime.Process()
			t0 := time.Now()
			calls := 0
			for calls == 0 || time.Since(t0) < 10*time.Millisecond {
				t1 := time.Now()
				if err := f(); err != nil {
					return 0, 0, err
				}
				wall = min(wall, time.Since(t1))
				calls++
			}
			c1, _ := cputime.Process()
			cpu = min(cpu, (c1-c0)/time.Duration(calls))
		}
		return wall, cpu, nil
	}
	flops := 2 * float64(rows) * float64(dim) * float64(hidden)
	fwd, fwdCPU, err := best(func() error { return tensor.Gemm(tensor.NoTrans, tensor.Trans, 1, x, w, 0, y) })
	if err != nil {
		return c, err
	}
	grad, gradCPU, err := best(func() error { return tensor.Gemm(tensor.Trans, tensor.NoTrans, 1, y, x, 1, dw) })
	if err != nil {
		return c, err
	}
	c.GEMMGFlops = flops / min(fwd, grad).Seconds() / 1e9
	if cpu := min(fwdCPU, gradCPU); cpu > 0 {
		c.GEMMGFlopsPerCPU = flops / cpu.Seconds() / 1e9
	}
	if len(feats) >= dim && dim > 0 {
		// Map the table in first (one read per page), so page faults are
		// not measured as memory latency.
		var sum float32
		for i := 0; i < len(feats); i += 1024 {
			sum += feats[i]
		}
		runtime.KeepAlive(sum)
		nt := tensor.Threads()
		agg := membench.RandomRows(feats, dim, rows, nt, 150*time.Millisecond)
		c.AggregateValuesPerSec = agg.PerSec * float64(dim)
		c.AggregateValuesPerCPU = agg.CPUPerSec / float64(nt) * float64(dim)
		if gatherRows > 0 {
			g := membench.RandomRows(feats, dim, gatherRows, 1, 150*time.Millisecond)
			c.GatherRowsPerSec, c.GatherRowsPerCPU = g.PerSec, g.CPUPerSec
		}
	}
	const fresh = 64 << 20
	t0 := time.Now()
	b := make([]byte, fresh)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	c.FreshBytesPerSec = fresh / time.Since(t0).Seconds()
	runtime.KeepAlive(b)
	return c, nil
}
