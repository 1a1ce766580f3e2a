package trainbench

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/train"
)

// Command is 'graphmill bench train'.
func Command() *cobra.Command {
	var (
		quick, asJSON   bool
		dir             string
		epochs, threads int
		rounds          int
		workers, batch  int
		dropout         float64
	)
	c := &cobra.Command{
		Use:   "train",
		Short: "Measure sampled GraphSAGE training throughput (seeds/s) and its time split",
		Long: `Train GraphSAGE (2 layers, hidden 256, fanouts 25,10, batch 1024) on a synthetic power-law
graph of 1M nodes, 20M edges and 100 features (--quick: 100k nodes, 2M edges, 9 epochs) and report seconds
per epoch, seeds per second, and the epoch split into sampling and gathering (done by the loader's
goroutines, overlapping compute), compute and waiting. The target is waiting < 5% of the epoch.
Steady-state epochs (after the warm-up: enough epochs to pass as many batches as the loader has
buffers, at least one; with three or more, the one of median CPU time) are reported, with where they go: seconds in GEMM
(also by the products' shapes, to show which fall short of the ceiling), aggregation and
element-wise kernels, allocation and garbage collection, the heap allocated per
step, the collector's CPU share, and the kernel efficiency: the CPU time the step's GEMM,
aggregation and gather work would take at ceilings measured in the same run, over the epoch's.
A round is the whole measurement on a training run of its own; with several (--quick: 3), the round
of median kernel efficiency is reported, with every round's efficiency.
The synthetic dataset is generated once into --dir (default: the cache directory) and reused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := Full
			if quick {
				o = Quick
			}
			if cmd.Flags().Changed("epochs") {
				o.Epochs = epochs
			}
			if cmd.Flags().Changed("rounds") {
				if rounds < 1 {
					return fmt.Errorf("--rounds %d: want at least 1", rounds)
				}
				o.Rounds = rounds
			}
			if cmd.Flags().Changed("batch") {
				o.BatchSize = batch
			}
			o.Threads, o.Workers = threads, workers
			if cmd.Flags().Changed("dropout") {
				if !(dropout >= 0 && dropout < 1) {
					return fmt.Errorf("--dropout %v: want a probability in [0, 1)", dropout)
				}
				o.Dropout = dropout
			}
			if err := prepareTrainBench(cmd, &o, dir, asJSON); err != nil {
				return err
			}
			rep, err := Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				return cli.WriteJSON(cmd.OutOrStdout(), rep)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "machine: %s\n", rep.Machine)
			fmt.Fprintf(w, "GraphSAGE hidden %d, dropout %g, fanouts %v, batch %d on %s nodes / %s edges / %d features (%s seeds per epoch), %d threads, %s kernels\n",
				rep.Hidden, rep.Dropout, rep.Fanouts, rep.BatchSize, units.Count(rep.Nodes), units.Count(rep.Edges), rep.FeatureDim, units.Count(rep.Seeds), rep.Threads, rep.Kernel)
			fmt.Fprintf(w, "epoch %s: %s seeds/s\n", units.Duration(cli.Seconds(rep.EpochSeconds)), units.Count(rep.SeedsPerSecond))
			st := rep.Step
			fmt.Fprintf(w, "  compute %s, waiting %s (%.1f%% of the epoch); in the loader's goroutines: sample %s, gather %s (%s rows at %.2f of the ceiling in CPU time, %.2f in wall time)\n",
				units.Duration(cli.Seconds(rep.ComputeSeconds)), units.Duration(cli.Seconds(rep.WaitSeconds)), 100*rep.WaitFraction,
				units.Duration(cli.Seconds(rep.SampleSeconds)), units.Duration(cli.Seconds(rep.GatherSeconds)), units.Count(st.GatheredRows), st.GatherRatio, st.GatherRatioWall)
			fmt.Fprintf(w, "  kernels: GEMM %s (%.0f GFLOP/s), aggregation %s, element-wise %s, other compute %s; allocation %s (%s per step), GC %s CPU\n",
				units.Duration(cli.Seconds(st.GEMMSeconds)), st.GEMMGFlops, units.Duration(cli.Seconds(st.AggregateSeconds)), units.Duration(cli.Seconds(st.ElementwiseSeconds)),
				units.Duration(cli.Seconds(st.OtherSeconds)), units.Duration(cli.Seconds(st.AllocSeconds)), units.Bytes(int64(rep.AllocBytesPerStep)), units.Duration(cli.Seconds(st.GCSeconds)))
			printGEMMShapes(w, st.GEMMShapes)
			printKernelEfficiency(w, rep)
			if len(rep.KernelEfficiencyRounds) > 1 {
				fmt.Fprintf(w, "  the median of %d rounds, whose kernel efficiencies were %.2f\n", len(rep.KernelEfficiencyRounds), rep.KernelEfficiencyRounds)
			}
			if rep.KernelEfficiencyStep > 0 {
				fmt.Fprintf(w, "  the step alone %.2f: GEMM and aggregation at the ceilings over the epoch's CPU less the loader's %s (sampling %s; gathering %s, the input's dropout included)\n",
					rep.KernelEfficiencyStep, units.Duration(cli.Seconds(rep.LoaderCPUSeconds)), units.Duration(cli.Seconds(st.SampleCPUSeconds)), units.Duration(cli.Seconds(st.GatherCPUSeconds)))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&quick, "quick", false, "small graph (100k nodes), nine epochs (the first two warm up; the median of the other seven is reported), three rounds: finishes in under 30 seconds")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	c.Flags().StringVar(&dir, "dir", "", "where to generate (and reuse) the synthetic dataset")
	c.Flags().IntVar(&epochs, "epochs", 2, "epochs to run, the warm-up (one or more, see above) included when there are more (quick: 9)")
	c.Flags().IntVar(&rounds, "rounds", 1, "rounds of the whole measurement, the median reported (quick: 3)")
	cli.PositiveVar(c.Flags(), &batch, "batch", 1024, "seeds per minibatch")
	cli.CountVar(c.Flags(), &threads, "threads", 0, "kernel threads (0 = all cores)")
	cli.CountVar(c.Flags(), &workers, "workers", 0, "sampling goroutines (0 = all cores)")
	c.Flags().Float64Var(&dropout, "dropout", Quick.Dropout, "dropout probability of every layer's input (the training default; 0: none, as in the issue's PyG comparison)")
	return c
}

// prepareTrainBench sets o's dataset directory (dir, or one in the cache
// named by its size), generates the synthetic dataset if it is missing,
// and prints each epoch unless the output is JSON.
func prepareTrainBench(cmd *cobra.Command, o *Options, dir string, asJSON bool) error {
	o.Dir = dir
	if o.Dir == "" {
		o.Dir = filepath.Join(builtin.CacheDir(), fmt.Sprintf("bench-train-%d-%d-%d", o.Nodes, o.Edges, o.FeatureDim))
	}
	if err := cli.Step("synthetic dataset ready", func() error { return Prepare(cmd.Context(), *o) }); err != nil {
		return err
	}
	if !asJSON {
		o.Epoch = func(s train.EpochStats) {
			fmt.Fprintf(cli.Stderr, "epoch %d: %s, loss %.4f\n", s.Epoch, units.Duration(cli.Seconds(s.Seconds)), s.Loss)
		}
		o.Round = func(i, n int) {
			if n > 1 {
				fmt.Fprintf(cli.Stderr, "round %d of %d\n", i+1, n)
			}
		}
	}
	return nil
}

// printGEMMShapes prints the longest four classes of an epoch's products
// on one line (none: nothing).
func printGEMMShapes(w io.Writer, shapes []GEMMShape) {
	if len(shapes) == 0 {
		return
	}
	sep := "  GEMM by shape (ops m×n×k, + for operands in parts):"
	for _, g := range shapes[:min(4, len(shapes))] {
		fmt.Fprintf(w, "%s %s %s (%.0f GFLOP/s)", sep, g.Shape, units.Duration(cli.Seconds(g.Seconds)), g.GFlops)
		sep = ";"
	}
	fmt.Fprintln(w)
}

// printKernelEfficiency prints the kernel efficiency in CPU time beside
// the per-CPU-second ceilings its ideal time was computed from, and in
// wall time beside the wall ceilings (work per wall second with the
// kernel threads) of its own ideal; "-" for what was not measured.
func printKernelEfficiency(w io.Writer, rep *Report) {
	c, st := rep.Ceilings, rep.Step
	rate := func(x float64, unit string) string {
		if x <= 0 {
			return "- " + unit
		}
		if unit == "GFLOP/s" {
			return fmt.Sprintf("%.0f %s", x, unit)
		}
		return units.Count(x) + " " + unit
	}
	dur := func(s float64) string {
		if s <= 0 {
			return "-"
		}
		return units.Duration(cli.Seconds(s))
	}
	cpu := "-"
	if st.IdealSeconds > 0 && rep.CPUSecondsPerEpoch > 0 {
		cpu = cli.Measured(st.IdealSeconds/rep.CPUSecondsPerEpoch, "%.2f")
	}
	fmt.Fprintf(w, "  kernel efficiency %s in CPU time: GEMM, aggregation and gather at the ceilings per CPU-second measured in this run (%s, %s, %s) would take %s of the epoch's %s CPU\n",
		cpu, rate(c.GEMMGFlopsPerCPU, "GFLOP/s"), rate(c.AggregateValuesPerCPU, "values/s"), rate(c.GatherRowsPerCPU, "rows/s"),
		dur(st.IdealSeconds), dur(rep.CPUSecondsPerEpoch))
	fmt.Fprintf(w, "  kernel efficiency %s in wall time: at the wall-clock ceilings with the kernel threads (%s, %s, %s; gather on one goroutine) they would take %s of the epoch's %s\n",
		cli.Measured(rep.KernelEfficiencyWall, "%.2f"), rate(c.GEMMGFlops, "GFLOP/s"), rate(c.AggregateValuesPerSec, "values/s"), rate(c.GatherRowsPerSec, "rows/s"),
		dur(st.IdealWallSeconds), dur(rep.EpochSeconds))
}
