package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/internal/atomicfile"
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
	)
	c := &cobra.Command{
		Use:   "eval --load MODEL.safetensors [--dataset DIR|cora]",
		Short: "Evaluate a saved model on a dataset's validation and test splits",
		Long:  "Load a checkpoint written by 'graphmill train --save', run full-neighbour (layer-wise) inference and print validation and test accuracy.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if load == "" {
				return fmt.Errorf("--load MODEL.safetensors is required")
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
	c.Flags().StringVar(&maxMem, "max-memory", "", maxMemoryHelp)
	c.Flags().BoolVar(&asJSON, "json", false, "print the accuracies as JSON")
	return c
}

func newPredictCmd() *cobra.Command {
	var (
		load, ds, out, maxMem string
		batch                 int
	)
	c := &cobra.Command{
		Use:   "predict --load MODEL.safetensors --out DIR [--dataset DIR|cora]",
		Short: "Write every node's predicted class and class probabilities as .npy files",
		Long: `Run a saved model on every node and write, into --out:
  predictions.npy    int32 [num_nodes]              the predicted class of each node
  probabilities.npy  float32 [num_nodes, classes]   softmax class probabilities
Each file is written atomically.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if load == "" || out == "" {
				return fmt.Errorf("--load and --out are required")
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
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			if err := writeNpyAtomic(filepath.Join(out, "predictions.npy"), pred); err != nil {
				return err
			}
			if err := writeNpyAtomic(filepath.Join(out, "probabilities.npy"), probs.Data, probs.Rows, probs.Cols); err != nil {
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
	c.Flags().StringVar(&maxMem, "max-memory", "", maxMemoryHelp)
	return c
}

// openCheckpoint opens the dataset and loads the checkpoint's model for it.
func openCheckpoint(cmd *cobra.Command, ds, load string, batch int, maxMem string) (*dataset.Dataset, *train.Runner, *nn.Model, error) {
	bound, err := parseMaxMemory(maxMem)
	if err != nil {
		return nil, nil, nil, err
	}
	d, err := builtin.Open(cmd.Context(), ds)
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

func writeNpyAtomic[T npy.Elem](path string, data []T, shape ...int) error {
	if shape == nil {
		shape = []int{len(data)}
	}
	hdr, err := npy.EncodeHeader(npy.DTypeOf[T](), shape)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		_, err := w.Write(npy.AsBytes(data))
		return err
	})
}
