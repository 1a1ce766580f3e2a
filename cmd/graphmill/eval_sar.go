package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/atomicfile"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/sar"
	"github.com/graphmill/graphmill/tensor"
)

// sarEval is what eval and predict need on a partitioned dataset.
type sarEval struct {
	mode string
	dist distFlags
}

func (f *sarEval) add(c *cobra.Command) {
	c.Flags().StringVar(&f.mode, "mode", "sar", "on a partitioned dataset: how layers reach other ranks' rows (sar, sa or one-shot)")
	f.dist.add(c.Flags())
}

// open joins the ranks, opens this rank's shard of the partitioned dataset
// dir and loads the checkpoint for it.
func (f *sarEval) open(cmd *cobra.Command, dir, load string) (*sar.Engine, *nn.Model, func(), error) {
	mode, err := sar.ParseMode(f.mode)
	if err != nil {
		return nil, nil, nil, err
	}
	mc, file, err := nn.ReadConfig(load)
	if err != nil {
		return nil, nil, nil, err
	}
	normalize := true
	if v, ok := file.Metadata["normalize_features"]; ok {
		if normalize, err = strconv.ParseBool(v); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: bad normalize_features %q", load, v)
		}
	}
	comm, err := sarComm(cmd, &f.dist)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := sar.Open(cmd.Context(), comm, dir, sar.ShardOptions{Normalize: normalize})
	if err != nil {
		comm.Close()
		return nil, nil, nil, err
	}
	if mc.In != s.FeatureDim || mc.Out != s.NumClasses {
		comm.Close()
		return nil, nil, nil, fmt.Errorf("%s: the model takes %d features and predicts %d classes, but dataset %s has %d features and %d classes",
			load, mc.In, mc.Out, s.Name, s.FeatureDim, s.NumClasses)
	}
	m, err := sar.NewModel(s, mc)
	if err == nil {
		err = m.LoadParams(file, load)
	}
	if err != nil {
		comm.Close()
		return nil, nil, nil, err
	}
	return sar.NewEngine(s, mode), m, func() { comm.Close() }, nil
}

// runEvalSAR is 'graphmill eval' on a partitioned dataset: distributed
// full-neighbourhood inference; rank 0 prints the accuracies over all
// nodes.
func runEvalSAR(cmd *cobra.Command, f *sarEval, dir, load string, asJSON bool) error {
	e, m, done, err := f.open(cmd, dir, load)
	if err != nil {
		return err
	}
	defer done()
	ev, err := e.Evaluate(cmd.Context(), m)
	if err != nil {
		return err
	}
	s := e.Shard
	if s.Rank != 0 {
		return nil
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"val_acc": ev.ValAcc, "test_acc": ev.TestAcc, "val_loss": ev.ValLoss, "dataset": s.Name, "model": string(m.Config.Kind), "ranks": s.Size})
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s on %s (%d ranks, %s mode): validation accuracy %.2f%%, test accuracy %.2f%%\n", m.Config.Kind, s.Name, s.Size, e.Mode, 100*ev.ValAcc, 100*ev.TestAcc)
	return nil
}

// rankPredictions is predictions.json of one rank's predictions.
type rankPredictions struct {
	predictionsManifest
	Rank  int   `json:"rank"`
	Ranks int   `json:"ranks"`
	Parts []int `json:"parts"`
}

// runPredictSAR is 'graphmill predict' on a partitioned dataset: every
// rank writes the predictions of the nodes it owns, in original node
// order, with their original ids, into OUT/rank-R.
func runPredictSAR(cmd *cobra.Command, f *sarEval, dir, load, out string) error {
	e, m, done, err := f.open(cmd, dir, load)
	if err != nil {
		return err
	}
	defer done()
	s := e.Shard
	dest := filepath.Join(out, fmt.Sprintf("rank-%05d", s.Rank))
	if err := atomicfile.CheckDest(dest, true, predictionsKind); err != nil {
		return err
	}
	logits, err := e.Logits(cmd.Context(), m)
	if err != nil {
		return err
	}
	order := make([]int32, s.NumInner())
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return int(s.GlobalIDs[a]) - int(s.GlobalIDs[b]) })
	c := logits.Cols
	ids := make([]int32, len(order))
	pred := make([]int32, len(order))
	probs := make([]float32, len(order)*c)
	row := tensor.New(1, c)
	for i, v := range order {
		ids[i] = s.GlobalIDs[v]
		x := tensor.Matrix{Rows: 1, Cols: c, Data: logits.Row(int(v))}
		if err := tensor.LogSoftmax(row, x); err != nil {
			return err
		}
		best := 0
		for j, lp := range row.Data {
			probs[i*c+j] = float32(math.Exp(float64(lp)))
			if x.Data[j] > x.Data[best] {
				best = j
			}
		}
		pred[i] = int32(best)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	man := rankPredictions{predictionsManifest{Format: predictionsFormat, Model: load, Dataset: dir, NumNodes: len(order), NumClasses: c}, s.Rank, s.Size, s.Parts}
	o, err := atomicfile.Begin(dest, true, predictionsKind)
	if err != nil {
		return err
	}
	defer o.Abort()
	if err := npy.WriteFile(filepath.Join(o.Tmp, "node_ids.npy"), ids, len(ids)); err != nil {
		return fmt.Errorf("writing %s/node_ids.npy: %w", dest, err)
	}
	if err := npy.WriteFile(filepath.Join(o.Tmp, "predictions.npy"), pred, len(pred)); err != nil {
		return fmt.Errorf("writing %s/predictions.npy: %w", dest, err)
	}
	if err := npy.WriteFile(filepath.Join(o.Tmp, "probabilities.npy"), probs, len(order), c); err != nil {
		return fmt.Errorf("writing %s/probabilities.npy: %w", dest, err)
	}
	b, _ := json.MarshalIndent(man, "", "  ")
	if err := atomicfile.WriteSynced(filepath.Join(o.Tmp, "predictions.json"), append(b, '\n')); err != nil {
		return fmt.Errorf("writing %s/predictions.json: %w", dest, err)
	}
	if err := o.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "rank %d: wrote %s/predictions.npy, probabilities.npy and node_ids.npy for its %d nodes (original order)\n", s.Rank, dest, len(order))
	return nil
}
