package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/atomicfile"
	"github.com/graphmill/graphmill/job"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/train"
)

func newEvalCmd() *cobra.Command {
	var (
		load, ds, maxMem string
		batch            int
		asJSON           bool
		sf               sarEval
	)
	c := &cobra.Command{
		Use:   "eval --load MODEL.safetensors [--dataset DIR|cora]",
		Short: "Evaluate a saved model on a dataset's validation and test splits",
		Long: `Load a checkpoint written by 'graphmill train --save', run full-neighbour (layer-wise) inference and print validation and test accuracy.

On a partitioned dataset ('graphmill partition'), under any launcher (or alone), the ranks share the
parts and run the layers across them (package sar); rank 0 prints the accuracies over all nodes:
  graphmill launch -n 4 -- graphmill eval --load gcn.safetensors --dataset data/cs-4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if load == "" {
				return fmt.Errorf("--load MODEL.safetensors is required")
			}
			if job.IsPartitioned(ds) {
				return runEvalSAR(cmd, &sf, ds, load, asJSON)
			}
			d, r, m, err := openCheckpoint(cmd, ds, load, batch, maxMem)
			if err != nil {
				return err
			}
			defer d.Close()
			ev, err := r.Evaluate(cmd.Context(), m)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"val_acc": ev.ValAcc, "test_acc": ev.TestAcc, "val_loss": ev.ValLoss, "dataset": d.Meta.Name, "model": string(m.Config.Kind)})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s on %s: validation accuracy %.2f%%, test accuracy %.2f%%\n", m.Config.Kind, d.Meta.Name, 100*ev.ValAcc, 100*ev.TestAcc)
			return nil
		},
	}
	c.Flags().StringVar(&load, "load", "", "checkpoint to evaluate (required)")
	c.Flags().StringVar(&ds, "dataset", "cora", "dataset directory, or \"cora\" for the built-in Cora")
	c.Flags().IntVar(&batch, "batch", 4096, "nodes per batch in layer-wise inference")
	c.Flags().StringVar(&maxMem, "max-memory", "", inferMemoryHelp)
	c.Flags().BoolVar(&asJSON, "json", false, "print the accuracies as JSON")
	sf.add(c)
	return c
}

func newPredictCmd() *cobra.Command {
	var (
		load, ds, out, maxMem string
		batch                 int
		sf                    sarEval
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if load == "" || out == "" {
				return fmt.Errorf("--load and --out are required")
			}
			if job.IsPartitioned(ds) {
				return runPredictSAR(cmd, &sf, ds, load, out)
			}
			// Checked before the model runs: --out may only be new, empty or
			// an earlier predict output.
			if err := atomicfile.CheckDest(filepath.Clean(out), true, predictionsKind); err != nil {
				return err
			}
			d, r, m, err := openCheckpoint(cmd, ds, load, batch, maxMem)
			if err != nil {
				return err
			}
			defer d.Close()
			logits, err := r.Predict(cmd.Context(), m)
			if err != nil {
				return err
			}
			probs := tensor.New(logits.Rows, logits.Cols)
			if err := tensor.LogSoftmax(probs, logits); err != nil {
				return err
			}
			pred := make([]int32, logits.Rows)
			if err := tensor.RowArgmax(pred, logits); err != nil {
				return err
			}
			for i, v := range probs.Data {
				probs.Data[i] = float32(math.Exp(float64(v)))
			}
			manifest := predictionsManifest{Format: predictionsFormat, Model: load, Dataset: d.Dir, NumNodes: logits.Rows, NumClasses: logits.Cols}
			// By original node id, also for a packed dataset.
			pred, probs.Data = dataset.InOriginalOrder(d, pred, 1), dataset.InOriginalOrder(d, probs.Data, logits.Cols)
			if err := writePredictions(out, manifest, pred, probs.Data); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/predictions.npy and probabilities.npy for %d nodes\n", out, logits.Rows)
			return nil
		},
	}
	c.Flags().StringVar(&load, "load", "", "checkpoint to run (required)")
	c.Flags().StringVar(&ds, "dataset", "cora", "dataset directory, or \"cora\" for the built-in Cora")
	c.Flags().StringVar(&out, "out", "", "output directory (required)")
	c.Flags().IntVar(&batch, "batch", 4096, "nodes per batch in layer-wise inference")
	c.Flags().StringVar(&maxMem, "max-memory", "", inferMemoryHelp)
	sf.add(c)
	return c
}

// openCheckpoint opens the dataset and loads the checkpoint's model for it.
func openCheckpoint(cmd *cobra.Command, ds, load string, batch int, maxMem string) (*dataset.Dataset, *train.Runner, *nn.Model, error) {
	bound, err := parseMaxMemory(maxMem)
	if err != nil {
		return nil, nil, nil, err
	}
	d, err := job.OpenDataset(cmd.Context(), ds, cmd.Name())
	if err != nil {
		return nil, nil, nil, err
	}
	r, m, err := train.Load(d, load, batch, bound)
	if err != nil {
		d.Close()
		return nil, nil, nil, err
	}
	return d, r, m, nil
}

const predictionsFormat = "graphmill-predictions"

// predictionsManifest is predictions.json, which marks a predict output.
type predictionsManifest struct {
	Format     string `json:"format"`
	Model      string `json:"model"`
	Dataset    string `json:"dataset"`
	NumNodes   int    `json:"num_nodes"`
	NumClasses int    `json:"num_classes"`
}

// predictionsKind recognises an earlier predict output: predictions.json
// of this format, or (written by older versions) a folder holding only
// predictions.npy and probabilities.npy.
var predictionsKind = atomicfile.Kind{Name: "graphmill predictions folder", Is: func(dir string) bool {
	if b, err := os.ReadFile(filepath.Join(dir, "predictions.json")); err == nil {
		var m predictionsManifest
		return json.Unmarshal(b, &m) == nil && m.Format == predictionsFormat
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return false
	}
	for _, e := range ents {
		if n := e.Name(); n != "predictions.npy" && n != "probabilities.npy" {
			return false
		}
	}
	return true
}}

// writePredictions writes the three output files into a temporary folder
// and swaps it with dir atomically: a failure (a full disk) leaves the
// previous output whole.
func writePredictions(dir string, m predictionsManifest, pred []int32, probs []float32) error {
	o, err := atomicfile.Begin(dir, true, predictionsKind)
	if err != nil {
		return err
	}
	defer o.Abort()
	if err := npy.WriteFile(filepath.Join(o.Tmp, "predictions.npy"), pred, m.NumNodes); err != nil {
		return fmt.Errorf("writing %s/predictions.npy: %w", dir, err)
	}
	if err := npy.WriteFile(filepath.Join(o.Tmp, "probabilities.npy"), probs, m.NumNodes, m.NumClasses); err != nil {
		return fmt.Errorf("writing %s/probabilities.npy: %w", dir, err)
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := atomicfile.WriteSynced(filepath.Join(o.Tmp, "predictions.json"), append(b, '\n')); err != nil {
		return fmt.Errorf("writing %s/predictions.json: %w", dir, err)
	}
	return o.Commit()
}
