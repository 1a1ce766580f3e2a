package main

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/atomicfile"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/job"
	"github.com/graphmill/graphmill/sar"
)

// inferFlags are eval's and predict's flags.
type inferFlags struct {
	load, ds, maxMem, mode string
	batch                  int
	dist                   job.DistFlags
}

func (f *inferFlags) add(c *cobra.Command, what string) {
	c.Flags().StringVar(&f.load, "load", "", what+" (required)")
	c.Flags().StringVar(&f.ds, "dataset", "cora", "dataset directory, or \"cora\" for the built-in Cora")
	cli.PositiveVar(c.Flags(), &f.batch, "batch", 4096, "nodes per batch in layer-wise inference")
	c.Flags().StringVar(&f.maxMem, "max-memory", "", inferMemoryHelp)
	c.Flags().StringVar(&f.mode, "mode", "sar", "on a partitioned dataset: how layers reach other ranks' rows (sar, sa or one-shot)")
	f.dist.Add(c.Flags())
}

// spec turns the flags into an InferSpec, joining the launcher's ranks on
// a partitioned dataset; done releases them.
func (f *inferFlags) spec(cmd *cobra.Command) (s job.InferSpec, done func(), err error) {
	if f.load == "" {
		return s, nil, fmt.Errorf("--load MODEL.safetensors is required")
	}
	s = job.InferSpec{Dataset: f.ds, Checkpoint: f.load, BatchSize: f.batch}
	if s.MaxMemoryBytes, err = cli.ParseMaxMemory(f.maxMem); err != nil {
		return s, nil, err
	}
	if s.Mode, err = sar.ParseMode(f.mode); err != nil { // checked on any dataset
		return s, nil, err
	}
	done = func() {}
	if cmd.Flags().Changed("mode") && !job.IsPartitioned(f.ds) {
		return s, nil, fmt.Errorf("--mode applies to a partitioned dataset ('graphmill partition'); %s is not one", f.ds)
	}
	if job.IsPartitioned(f.ds) {
		comm, err := f.dist.JoinOrAlone(cmd.Context())
		if err != nil {
			return s, nil, err
		}
		s.Comm, done = comm, func() { comm.Close() }
	}
	return s, done, nil
}

func newEvalCmd() *cobra.Command {
	var (
		f      inferFlags
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "eval --load MODEL.safetensors [--dataset DIR|cora]",
		Short: "Evaluate a saved model on a dataset's validation and test splits",
		Long: `Load a checkpoint written by 'graphmill train --save', run full-neighbour (layer-wise) inference and print validation and test accuracy.

On a partitioned dataset ('graphmill partition'), under any launcher (or alone), the ranks share the
parts and run the layers across them (package sar); rank 0 prints the accuracies over all nodes:
  graphmill launch -n 4 -- graphmill eval --load gcn.safetensors --dataset data/cs-4`,
		Args: cli.NoArgs("give the dataset with --dataset DIR and the checkpoint with --load FILE"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, done, err := f.spec(cmd)
			if err != nil {
				return err
			}
			defer done()
			ev, err := job.Eval(cmd.Context(), s)
			if err != nil || ev.Rank != 0 {
				return err
			}
			if asJSON {
				out := map[string]any{"val_acc": ev.ValAcc, "test_acc": ev.TestAcc, "val_loss": ev.ValLoss, "dataset": ev.Dataset, "model": string(ev.Model)}
				if ev.Mode != "" {
					out["ranks"] = ev.Ranks
				}
				return cli.WriteJSON(cmd.OutOrStdout(), out)
			}
			on := ev.Dataset
			if ev.Mode != "" {
				on = fmt.Sprintf("%s (%d ranks, %s mode)", ev.Dataset, ev.Ranks, ev.Mode)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s on %s: validation accuracy %s, test accuracy %s\n", ev.Model, on, percent(ev.ValAcc), percent(ev.TestAcc))
			return nil
		},
	}
	f.add(c, "checkpoint to evaluate")
	c.Flags().BoolVar(&asJSON, "json", false, "print the accuracies as JSON")
	return c
}

// percent formats an accuracy; NaN (a split without nodes) is "n/a".
func percent(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f%%", 100*x)
}

func newPredictCmd() *cobra.Command {
	var (
		f   inferFlags
		out string
	)
	c := &cobra.Command{
		Use:   "predict --load MODEL.safetensors --out DIR [--dataset DIR|cora]",
		Short: "Write every node's predicted class and class probabilities as .npy files",
		Long: `Run a saved model on every node and write, into --out:
  predictions.npy    int32 [num_nodes]              the predicted class of each node
  probabilities.npy  float32 [num_nodes, classes]   softmax class probabilities
  predictions.json   what was run (model, dataset, counts)
The three are written together: into a temporary folder swapped with --out in
one step, so --out never holds files of two different runs. --out must be new,
empty, or an earlier predict output (which is replaced); anything else is refused.

On a partitioned dataset ('graphmill partition'), under any launcher (or alone), every rank
writes the nodes of its parts into --out/rank-R (R zero-padded): the same three files for those
nodes in original node order, and node_ids.npy, their original ids.`,
		Args: cli.NoArgs("give the dataset with --dataset DIR and the checkpoint with --load FILE"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.load == "" || out == "" {
				return fmt.Errorf("--load and --out are required")
			}
			s, done, err := f.spec(cmd)
			if err != nil {
				return err
			}
			defer done()
			dest := filepath.Clean(out)
			if s.Comm != nil {
				if dest, err = job.RankDest(dest, s.Comm.Rank(), s.Comm.Size()); err != nil {
					return err
				}
			}
			// Checked before the model runs: the output may only be new,
			// empty or an earlier predict output.
			if err := atomicfile.CheckDest(dest, true, job.PredictionsKind); err != nil {
				return err
			}
			p, err := job.Predict(cmd.Context(), s)
			if err != nil {
				return err
			}
			if err := p.Write(dest); err != nil {
				return err
			}
			if p.NodeIDs != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "rank %d: wrote %s/predictions.npy, probabilities.npy, node_ids.npy and predictions.json for its %d nodes (original order)\n", p.Rank, dest, len(p.Pred))
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/predictions.npy, probabilities.npy and predictions.json for %d nodes\n", dest, len(p.Pred))
			}
			return nil
		},
	}
	f.add(c, "checkpoint to run")
	c.Flags().StringVar(&out, "out", "", "output directory (required)")
	return c
}
