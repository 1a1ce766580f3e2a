package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/job"
	"github.com/graphmill/graphmill/synth"
)

var dataCmd = &cobra.Command{
	Use:   "data",
	Short: "Import, generate and inspect datasets in graphmill's native format",
	Long: `Datasets are directories of numpy .npy files plus meta.json (see README).
"graphmill data import" converts Planetoid, npz, OGB, edge-list and METIS files;
"graphmill data generate" writes synthetic graphs of any size;
"graphmill data pack" renumbers nodes so that rows read together share disk pages;
"graphmill data convert" stores the features as float16 or bfloat16;
"graphmill data info" summarises a dataset and "graphmill data verify" checks every array.`,
}

func init() {
	rootCmd.AddCommand(dataCmd)
	dataCmd.AddCommand(newInfoCmd(), newVerifyCmd(), newGenerateCmd(), newConvertCmd(), newPackCmd())
}

func newInfoCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "info DIR|cora",
		Short: "Summarise a dataset: counts, degrees, features, labels, splits",
		Long: `Print a dataset's counts, in- and out-degree statistics, a feature summary
(over at most 100,000 evenly spaced rows), the label distribution and the split sizes.
DIR is a native dataset directory, or "cora" for the built-in dataset; on a
partitioned dataset (from 'graphmill partition') it shows the partition book.`,
		Args: cli.OneArg("DATASET (a dataset directory, or cora)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if job.IsPartitioned(args[0]) {
				book, err := parts.ReadBook(args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return cli.WriteJSON(cmd.OutOrStdout(), book)
				}
				printBook(cmd.OutOrStdout(), args[0], book)
				return nil
			}
			d, err := builtin.Open(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer d.Close()
			s := d.Summarize()
			if asJSON {
				return cli.WriteJSON(cmd.OutOrStdout(), s)
			}
			printSummary(cmd.OutOrStdout(), s)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON (keys num_nodes, num_edges, feature_dim, num_classes, train_size, ...)")
	return c
}

func newVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify DIR",
		Short: "Check every array of a dataset, including every edge",
		Long:  "Open the dataset (which checks shapes, dtypes, offsets, labels and splits) and then check that every edge's source id is a node.\n\nA partitioned dataset ('graphmill partition') is checked part by part, and across the parts: every node owned by one part, every halo node the node its owner holds.",
		Args:  cli.OneArg("DATASET (a dataset directory, or cora)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if job.IsPartitioned(args[0]) {
				if err := parts.Verify(cmd.Context(), args[0], func(p, n int) { fmt.Fprintf(cli.Stderr, "checking part %d of %d\n", p+1, n) }); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (every part, and the parts together)\n", args[0])
				return nil
			}
			d, err := job.OpenDataset(cmd.Context(), args[0], "data verify")
			if err != nil {
				return err
			}
			defer d.Close()
			if err := cli.Step("checking "+units.Count(d.Meta.NumEdges)+" edges", func() error { return d.Verify(cmd.Context()) }); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%s nodes, %s edges)\n", args[0], units.Count(d.Meta.NumNodes), units.Count(d.Meta.NumEdges))
			return nil
		},
	}
}

func newGenerateCmd() *cobra.Command {
	var (
		cfg              synth.Config
		nodes, edges     string
		out              string
		overwrite, quiet bool
	)
	c := &cobra.Command{
		Use:   "generate [--nodes N] [--edges M] --out DIR",
		Short: "Write a synthetic power-law community graph with learnable features",
		Long: `Generate a synthetic dataset: power-law in- and out-degrees, one community per
class with homophilous edges, features = class centroid + Gaussian noise.
The output is streamed to disk (memory ~65 bytes per node) and is the same for a
seed whatever the number of workers. Counts accept suffixes: 10M, 200M, 1.5k.`,
		Example: "  graphmill data generate --nodes 10M --edges 200M --feature-dim 128 --out /data/syn10m",
		Args:    cli.NoArgs("give the output directory with --out DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := units.ParseCount(nodes)
			if err != nil {
				return fmt.Errorf("--nodes: %w", err)
			}
			m, err := units.ParseCount(edges)
			if err != nil {
				return fmt.Errorf("--edges: %w", err)
			}
			if out == "" {
				return fmt.Errorf("--out DIR is required")
			}
			if err := dataset.CheckDest(out, overwrite); err != nil {
				return err
			}
			cfg.Nodes, cfg.Edges = int(n), m
			// One bar (nodes written, rate, time left); no spinner beside it.
			bar := cli.NewBar(n, "generating", "nodes")
			if !quiet {
				cfg.Progress = func(done, _ int64) { bar.Set(done) }
			}
			start := time.Now()
			meta, err := synth.Generate(cmd.Context(), out, cfg, overwrite)
			bar.Finish()
			if err != nil {
				return err
			}
			el := time.Since(start)
			fmt.Fprintf(cli.Stderr, "generated %s nodes, %s edges in %s%s\n", units.Count(n), units.Count(m), units.Duration(el), strings.TrimSuffix(" ("+cli.Rate(m, 0, el, "edges")+")", " ()"))
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s nodes, %s edges, %d features, %d classes\n",
				out, units.Count(meta.NumNodes), units.Count(meta.NumEdges), meta.FeatureDim, meta.NumClasses)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&nodes, "nodes", "100k", "number of nodes (suffixes k, M, G)")
	f.StringVar(&edges, "edges", "2M", "number of directed edges, exactly (suffixes k, M, G)")
	f.IntVar(&cfg.FeatureDim, "feature-dim", 128, "features per node (0 for none)")
	f.StringVar(&cfg.FeatureDType, "feature-dtype", "float32", "store the features as float32, float16 or bfloat16 (half the bytes on disk and in memory)")
	f.IntVar(&cfg.Classes, "classes", 16, "number of classes (= communities)")
	f.Float64Var(&cfg.Homophily, "homophily", 0.8, "probability that an edge stays inside its class")
	f.Float64Var(&cfg.Exponent, "exponent", 2.5, "power-law exponent of the degree distribution (> 1)")
	f.Float64Var(&cfg.Signal, "signal", 0.15, "scale of the class centroids against unit feature noise (higher = easier)")
	f.Float64Var(&cfg.TrainFrac, "train-frac", 0.1, "fraction of nodes in the training split")
	f.Float64Var(&cfg.ValFrac, "val-frac", 0.05, "fraction of nodes in the validation split")
	f.Float64Var(&cfg.TestFrac, "test-frac", 0.1, "fraction of nodes in the test split")
	f.Uint64Var(&cfg.Seed, "seed", 0, "random seed (the output depends only on it and the sizes)")
	cli.CountVar(f, &cfg.Workers, "workers", 0, "generator goroutines (0 = all cores)")
	f.StringVar(&cfg.Name, "name", "synthetic", "dataset name stored in meta.json")
	f.StringVar(&out, "out", "", "output dataset directory (required)")
	f.BoolVar(&overwrite, "overwrite", false, "replace an existing graphmill dataset at --out (atomically); anything else there is refused")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	return c
}

func printSummary(w io.Writer, s dataset.Summary) {
	fmt.Fprintf(w, "%s  (%s, format v%d, %s on disk)\n", s.Name, s.Dir, s.FormatVersion, units.Bytes(s.Bytes))
	fmt.Fprintf(w, "  nodes       %d\n", s.NumNodes)
	var props []string
	if s.Symmetrized {
		props = append(props, "symmetrized")
	}
	props = append(props, "self-loops: "+s.SelfLoops)
	if s.HasWeights {
		props = append(props, "weighted")
	}
	fmt.Fprintf(w, "  edges       %d  (%s)\n", s.NumEdges, strings.Join(props, ", "))
	deg := func(name string, d dataset.DegreeSummary) {
		fmt.Fprintf(w, "  %-11s min %d  median %d  mean %.2f  max %d  (%d nodes with none)\n", name, d.Min, d.Median, d.Mean, d.Max, d.Isolated)
	}
	deg("in-degree", s.InDegree)
	deg("out-degree", s.OutDegree)
	if s.FeatureDim > 0 {
		fmt.Fprintf(w, "  features    %d x %s", s.FeatureDim, s.FeatureDType)
		if f := s.Features; f != nil {
			fmt.Fprintf(w, ": mean %.4g  std %.4g  range [%.4g, %.4g]  %.1f%% non-zero  (%d rows scanned)",
				f.Mean, f.Std, f.Min, f.Max, 100*f.NonZero, f.Rows)
			if f.NonFinite > 0 {
				fmt.Fprintf(w, "  WARNING: %d NaN/Inf values", f.NonFinite)
			}
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "  features    none\n")
	}
	if s.NumClasses > 0 {
		counts := make([]string, len(s.LabelCounts))
		for i, c := range s.LabelCounts {
			counts[i] = fmt.Sprint(c)
		}
		fmt.Fprintf(w, "  classes     %d: %s", s.NumClasses, strings.Join(counts, " "))
		if s.Unlabelled > 0 {
			fmt.Fprintf(w, "  (%d unlabelled)", s.Unlabelled)
		}
		fmt.Fprintln(w)
	}
	if len(s.Splits) > 0 {
		fmt.Fprintf(w, "  splits      train %d  val %d  test %d\n", s.TrainSize, s.ValSize, s.TestSize)
	}
	if p := s.Packed; p != nil {
		fmt.Fprintf(w, "  packed      nodes renumbered by %s order from %s (ids in and out stay the original ones)\n", p.Method, p.From)
	}
}

// newConvertCmd is "graphmill data convert": a copy of a dataset with its
// features stored in another dtype (feature.ConvertDataset).
func newConvertCmd() *cobra.Command {
	var (
		dtype, out string
		overwrite  bool
	)
	c := &cobra.Command{
		Use:   "convert DATASET --feature-dtype float16|bfloat16|float32 --out DIR",
		Short: "Write a copy of a dataset with its features stored as float16, bfloat16 or float32",
		Long: `Write a copy of a dataset whose features are stored in another dtype: float16 (numpy's rounding) or
bfloat16 take half of float32's bytes, on disk and in memory, so features that do not fit in memory as
float32 may as half precision, and features read from disk read half the bytes. The other arrays are
copied unchanged; the copy is written atomically.`,
		Example: "  graphmill data convert /data/big --feature-dtype float16 --out /data/big-f16",
		Args:    cli.OneArg("DATASET (a dataset directory, or cora)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			to, err := feature.ParseDType(dtype)
			if err != nil {
				return fmt.Errorf("--feature-dtype: %w", err)
			}
			if out == "" {
				return fmt.Errorf("--out DIR is required")
			}
			if err := dataset.CheckDest(out, overwrite); err != nil {
				return err
			}
			d, err := job.OpenDataset(cmd.Context(), args[0], "convert")
			if err != nil {
				return err
			}
			defer d.Close()
			if err := feature.ConvertDataset(cmd.Context(), d, out, to, overwrite); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: features as %v\n", out, to)
			return nil
		},
	}
	c.Flags().StringVar(&dtype, "feature-dtype", "float16", "the features' dtype in the copy: float16, bfloat16 or float32")
	c.Flags().StringVar(&out, "out", "", "output dataset directory (required)")
	c.Flags().BoolVar(&overwrite, "overwrite", false, "replace an existing graphmill dataset at --out (atomically)")
	return c
}
