package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/job"
	"github.com/graphmill/graphmill/layout"
	"github.com/graphmill/graphmill/sample"
)

// newPackCmd is "graphmill data pack": a copy of a dataset with its nodes
// renumbered for locality on disk (package layout).
func newPackCmd() *cobra.Command {
	var (
		out, method      string
		fanouts          sample.Fanouts
		cfg              layout.Config
		overwrite, quiet bool
	)
	c := &cobra.Command{
		Use:   "pack DATASET --out DIR",
		Short: "Write a copy of a dataset whose nodes are renumbered so that rows read together share disk pages",
		Long: `Write a copy of a dataset for training from disk (--features-in-memory no): its nodes are renumbered
so that the feature rows that batches read together lie on the same pages, and its features start on a
page boundary, so that a row of up to 4 KiB is never split over two pages.

  --method sample     (default) offline sampling as DiskGNN and GNNLab do: one epoch of batches over the
                      training seeds with --fanouts and --batch counts how often each row is read, and
                      rows read equally often are placed side by side, most read first
  --method degree     by out-degree, highest first (no sampling)
  --method partition  by part of graphmill's partitioner (--parts), then as sample within a part: for
                      graphs whose neighbourhoods are local

The renumbering is invisible: the copy keeps every node's original id (orig_ids.npy), splits are kept
(their order too), and the ids that come out ('graphmill predict', 'graphmill partition --assignment',
the Python loaders' n_id) and go in are the original ones. 'bench disk' measures the pages each layout
reads. The copy is written atomically; the source's rows are read with many reads in flight.`,
		Example: "  graphmill data pack /data/big --out /data/big-packed\n  graphmill train --dataset /data/big-packed --features-in-memory no",
		Args:    cli.OneArg("DATASET (a dataset directory, or cora)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := layout.ParseMethod(method)
			if err != nil {
				return fmt.Errorf("--method: %w", err)
			}
			cfg.Method = m
			cfg.Fanouts = fanouts
			if out == "" {
				return fmt.Errorf("--out DIR is required")
			}
			if err := dataset.CheckDest(out, overwrite); err != nil {
				return err
			}
			d, err := job.OpenDataset(cmd.Context(), args[0], "data pack")
			if err != nil {
				return err
			}
			defer d.Close()
			start := time.Now()
			var order []int32
			err = cli.Step(fmt.Sprintf("ordering %s nodes by %s", units.Count(d.Meta.NumNodes), m), func() error {
				order, err = layout.Order(cmd.Context(), d, cfg)
				return err
			})
			if err != nil {
				return err
			}
			var bar *cli.Bar
			wo := layout.WriteOptions{Method: m, Overwrite: overwrite}
			if !quiet && d.FeatureArray != nil {
				bar = cli.NewBar(int64(len(d.FeatureArray.Data)), "writing", "bytes")
				wo.Progress = func(done, _ int64) { bar.Set(done) }
			}
			err = layout.Write(cmd.Context(), d, out, order, wo)
			if bar != nil {
				bar.Finish()
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s nodes in %s order, in %s\n", out, units.Count(d.Meta.NumNodes), m, units.Duration(time.Since(start)))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "", "output dataset directory (required)")
	f.StringVar(&method, "method", string(layout.Sample), fmt.Sprintf("how nodes are ordered: %v", layout.Methods))
	job.FanoutsFlag(f, &fanouts, []int{25, 10}, "sample, partition: the training the layout is for")
	cli.PositiveVar(f, &cfg.BatchSize, "batch", 1024, "sample, partition: the batch size of that training (give the --batch you train with; train's default is 64)")
	cli.PositiveVar(f, &cfg.Epochs, "epochs", 1, "sample, partition: sampled epochs counted")
	f.IntVar(&cfg.Parts, "parts", 0, "partition: number of parts (0: one per 65,536 nodes)")
	f.Uint64Var(&cfg.Seed, "seed", 0, "random seed of the sampled epochs and the partition")
	cli.CountVar(f, &cfg.Workers, "workers", 0, "goroutines (0 = all cores)")
	f.BoolVar(&overwrite, "overwrite", false, "replace an existing graphmill dataset at --out (atomically)")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	return c
}
