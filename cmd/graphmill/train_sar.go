package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/sar"
	"github.com/graphmill/graphmill/train"
)

// sarComm joins the launcher's group, or makes a group of one for a plain
// process, so that SAR runs the same code under any number of ranks.
func sarComm(cmd *cobra.Command, f *distFlags) (dist.Comm, error) {
	comm, _, err := f.join(cmd.Context())
	if err != nil || comm != nil {
		return comm, err
	}
	gs, err := dist.LocalGroup(cmd.Context(), 1, dist.Options{})
	if err != nil {
		return nil, err
	}
	return gs[0], nil
}

// runTrainSAR is "graphmill train --mode sar|sa|one-shot": distributed
// full-graph training over a partitioned dataset (package sar).
func runTrainSAR(cmd *cobra.Command, f *trainFlags, cfg train.Config, mode sar.Mode) error {
	for _, name := range []string{"fanouts", "batch", "prefetch", "workers", "parts", "parts-per-batch", "half-history", "max-memory", "feature-cache", "cache-policy", "superbatch", "graph-on-disk", "feature-dtype", "overlap-eval"} {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s does not apply to --mode %s (full-graph steps over the ranks' parts)", name, mode)
		}
	}
	if !isPartitioned(f.dataset) {
		return fmt.Errorf("--mode %s trains over a partitioned dataset, and %s is not one: make one with 'graphmill partition --parts N %s --out DIR' (N a multiple of the number of ranks) and give --dataset DIR", mode, f.dataset, f.dataset)
	}
	if err := checkOutputs(f); err != nil {
		return err
	}
	if cfg.Parallel != nil {
		return fmt.Errorf("--mode %s: internal error: data-parallel settings given", mode)
	}
	comm, err := sarComm(cmd, &f.dist)
	if err != nil {
		return err
	}
	defer comm.Close()
	out := cmd.OutOrStdout()
	if comm.Rank() != 0 { // rank 0 alone reports and writes
		f.quiet, f.metricsOut, f.plotOut, f.save, out = true, "", "", "", io.Discard
	}
	defer applyProcessSettings(cfg, 0)()
	ctx := cmd.Context()
	s, err := sar.Open(ctx, comm, f.dataset, sar.ShardOptions{Normalize: cfg.NormalizeFeatures})
	if err != nil {
		return err
	}
	cfg.NormalizeFeatures = s.Normalized
	e := sar.NewEngine(s, mode)
	e.MFG = f.mfg
	if !f.quiet {
		fmt.Fprintf(out, "training %s (%s mode, full graph) on %s over %d ranks: %d nodes, %d features, %d classes; split %d/%d/%d; rank 0 holds parts %v: %s nodes, %s in-edges, sends %s boundary rows and fetches %s per exchange\n",
			cfg.Model.Kind, mode, s.Name, s.Size, s.NumNodes, s.FeatureDim, s.NumClasses, s.NumTrain, s.NumVal, s.NumTest,
			s.Parts, units.Count(s.NumInner()), units.Count(s.NumEdges()), units.Count(s.Boundary()), units.Count(s.Fetched()))
	}
	var bar *cli.Bar
	hooks := train.Hooks{}
	logEvery := f.logEvery
	if logEvery <= 0 {
		logEvery = 10
	}
	evals := 0
	if !f.quiet {
		bar = cli.NewBar(int64(cfg.Epochs), "training", "epochs")
		hooks.Epoch = func(st train.EpochStats) {
			bar.Set(int64(st.Epoch + 1))
			bar.Describe(fmt.Sprintf("loss %.4f", st.Loss))
			if st.ValAcc != nil {
				evals++
				if evals%logEvery == 0 {
					printEpoch(out, st)
				}
			}
		}
	}
	res, err := sar.Run(ctx, e, cfg, hooks)
	if bar != nil {
		bar.Finish()
	}
	stopped := err
	if err != nil && !(errors.Is(err, train.ErrInterrupted) && res != nil) {
		return fmt.Errorf("rank %d: %w", comm.Rank(), err)
	}
	if stopped != nil {
		fmt.Fprintf(out, "interrupted after %d epochs: keeping the best model so far\n", res.Summary.Epochs)
	}
	printSummary2(out, res.Summary)
	if stopped == nil && s.Size > 1 {
		// A collective: every rank gathers, rank 0 alone prints (also
		// with --quiet, as the summary) and writes. An interrupted run
		// skips it (its context is done).
		g, err := e.GatherTraffic(ctx)
		if err != nil {
			return fmt.Errorf("rank %d: gathering the bytes sent: %w", comm.Rank(), err)
		}
		if res.Summary.Epochs > 0 {
			res.Summary.Traffic = g.PerEpoch(res.Summary.Epochs)
			printTraffic(out, res.Summary.Traffic, !e.MFG)
		}
	}
	if f.save != "" {
		meta := map[string]string{
			"dataset":            s.Name,
			"normalize_features": strconv.FormatBool(cfg.NormalizeFeatures),
			"best_val_acc":       strconv.FormatFloat(res.Summary.BestValAcc, 'f', 4, 64),
			"test_acc":           strconv.FormatFloat(res.Summary.TestAcc, 'f', 4, 64),
		}
		if err := saveModel(out, res.Model, f.save, meta); err != nil {
			return err
		}
	}
	if err := writeOutputs(out, f, cfg, s.Name, res); err != nil {
		return err
	}
	return stopped
}

// printTraffic prints what all ranks sent per epoch: the rows and
// gradients of the training steps beside their analytic minimum (when
// withMin: full-graph steps), evaluation's rows, the all-reduces, and the
// busiest rank.
func printTraffic(w io.Writer, t *train.Traffic, withMin bool) {
	lo := ""
	if withMin {
		lo = ", analytic minimum " + units.Bytes(t.MinStepExchange)
	}
	fmt.Fprintf(w, "sent per epoch: all %d ranks %s (rows and gradients %s: training steps %s%s, evaluation %s; all-reduce %s); busiest rank %d: %s\n",
		t.Ranks, units.Bytes(t.Sent), units.Bytes(t.Exchange), units.Bytes(t.StepExchange), lo, units.Bytes(t.Exchange-t.StepExchange),
		units.Bytes(t.Reduce), t.BusiestRank, units.Bytes(t.RankSent[t.BusiestRank]))
}
