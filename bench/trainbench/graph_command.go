package trainbench

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/internal/cli"

	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/partition"
	"github.com/graphmill/graphmill/train"
)

// GraphCommand is 'graphmill bench graph'.
func GraphCommand() *cobra.Command {
	var (
		quick, asJSON   bool
		dir, model, ds  string
		mode            string
		epochs, threads int
	)
	c := &cobra.Command{
		Use:   "graph",
		Short: "Measure full-graph and GNNAutoScale training (GCN, GAT): ms per epoch, allocation, GC",
		Long: `Train GCN or GAT with their default settings (GCN: hidden 16; GAT: 8 heads x 8 hidden, dropout 0.6
on inputs and attention) on the synthetic graph of 'bench train' (1M nodes, 20M edges, 100 features;
--quick: 100k nodes, 2M edges), one step per epoch on the whole graph (--mode full) or GNNAutoScale
batches of parts with historical embeddings (--mode gas: 40 parts, 10 per batch), without evaluation.
Reported over the steady-state epochs (all but the first): wall and CPU milliseconds per epoch, the
Go heap allocated per epoch, the garbage collector's CPU share, and the time in GEMM, aggregation and
element-wise kernels, and the aggregation kernels' rate against random-row reads of rows as wide as
the hidden layer's, measured in the same run. The synthetic dataset is generated once into --dir and reused;
--dataset trains on another (bench graph --dataset cora --threads 1 --epochs 100: a small graph's epoch,
whose kernels are short, split into kernels and what lies outside them).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kind, err := nn.ParseKind(model)
			if err != nil {
				return err
			}
			o := GraphOptions{Options: Full, Model: kind, Mode: train.Mode(mode), Partitioner: partition.Assign}
			if quick {
				o.Options = Quick
			}
			o.Epochs, o.Threads = epochs, threads
			if ds != "" {
				// A dataset of the user's (a small one: the split of an
				// epoch into kernels and overhead).
				if o.Dir, err = builtin.Resolve(cmd.Context(), ds); err != nil {
					return err
				}
			} else if err := prepareTrainBench(cmd, &o.Options, dir, asJSON); err != nil {
				return err
			}
			rep, err := RunGraph(cmd.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				return cli.WriteJSON(cmd.OutOrStdout(), rep)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "machine: %s\n", rep.Machine)
			fmt.Fprintf(w, "%s, %s mode, on %s nodes / %s edges / %d features, %d threads, %s kernels (%d steps per epoch)\n",
				rep.Model, rep.Mode, units.Count(rep.Nodes), units.Count(rep.Edges), rep.FeatureDim, rep.Threads, rep.Kernel, rep.StepsPerEpoch)
			fmt.Fprintf(w, "epoch %.0f ms wall, %.0f ms CPU; allocated %s per epoch, GC %.1f%% of the CPU (%.1f cycles per epoch)\n",
				rep.MsPerEpoch, rep.CPUMsPerEpoch, units.Bytes(int64(rep.AllocBytesPerEpoch)), 100*rep.GCCPUFraction, rep.GCCyclesPerEpoch)
			fmt.Fprintf(w, "  kernels: GEMM %s, aggregation %s, element-wise %s; outside them %s\n",
				units.Duration(cli.Seconds(rep.GEMMSeconds)), units.Duration(cli.Seconds(rep.AggregateSeconds)), units.Duration(cli.Seconds(rep.ElementwiseSeconds)),
				units.Duration(cli.Seconds(rep.OverheadMsPerEpoch/1000)))
			printGEMMShapes(w, rep.GEMMShapes)
			fmt.Fprintf(w, "  aggregation %s values/s: %.2f of random-row reads of %d values from %s rows (%s values/s, measured in this run)\n",
				units.Count(rep.AggregateValuesPerSec), rep.AggregateRatio, rep.CeilingWidth, units.Count(rep.CeilingRows), units.Count(rep.CeilingValuesPerSec))
			return nil
		},
	}
	c.Flags().StringVar(&model, "model", "gcn", "gcn or gat")
	c.Flags().StringVar(&mode, "mode", "full", "full (whole graph per step) or gas (GNNAutoScale)")
	c.Flags().BoolVar(&quick, "quick", false, "small graph (100k nodes, 2M edges)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	c.Flags().StringVar(&dir, "dir", "", "where to generate (and reuse) the synthetic dataset")
	c.Flags().StringVar(&ds, "dataset", "", `train on this dataset instead of the synthetic one ("cora" or a directory): a small graph's epoch split into kernels and overhead`)
	c.Flags().IntVar(&epochs, "epochs", 4, "epochs to run; the first is a warm-up")
	cli.CountVar(c.Flags(), &threads, "threads", 0, "kernel threads (0 = all cores)")
	return c
}
