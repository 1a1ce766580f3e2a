package job

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/sar"
	"github.com/graphmill/graphmill/train"
)

// trainSAR runs (after Spec.Check) SAR's distributed full-graph training (package sar) over
// the partitioned dataset s.Dataset, on s.Comm's ranks or, without one, in
// a group of one. The summary's Traffic holds what all ranks sent per
// epoch (gathered from every rank).
func trainSAR(ctx context.Context, s Spec, mode sar.Mode) (*Result, error) {
	cfg := s.Config
	comm := s.Comm
	if comm == nil {
		gs, err := dist.LocalGroup(ctx, 1, dist.Options{})
		if err != nil {
			return nil, err
		}
		comm = gs[0]
		defer comm.Close()
	}
	if s.Setup != nil {
		defer s.Setup(cfg, 0)()
	}
	sh, err := sar.Open(ctx, comm, s.Dataset, sar.ShardOptions{Normalize: cfg.NormalizeFeatures})
	if err != nil {
		return nil, err
	}
	cfg.NormalizeFeatures = sh.Normalized
	e := sar.NewEngine(sh, mode)
	e.MFG = s.MFG
	logf(s.Log, "training %s (%s mode, full graph) on %s over %d ranks: %d nodes, %d features, %d classes; split %d/%d/%d; rank 0 holds parts %v: %s nodes, %s in-edges, sends %s boundary rows and fetches %s per exchange\n",
		cfg.Model.Kind, mode, sh.Name, sh.Size, sh.NumNodes, sh.FeatureDim, sh.NumClasses, sh.NumTrain, sh.NumVal, sh.NumTest,
		sh.Parts, units.Count(sh.NumInner()), units.Count(sh.NumEdges()), units.Count(sh.Boundary()), units.Count(sh.Fetched()))
	res, err := sar.Run(ctx, e, cfg, s.Hooks)
	if err != nil && !(train.Stopped(err) && res != nil) {
		return nil, fmt.Errorf("rank %d: %w", comm.Rank(), err)
	}
	if err == nil && sh.Size > 1 {
		// A collective: every rank gathers. An interrupted run skips it
		// (its context is done).
		g, gerr := e.GatherTraffic(ctx)
		if gerr != nil {
			return nil, fmt.Errorf("rank %d: gathering the bytes sent: %w", comm.Rank(), gerr)
		}
		if res.Summary.Epochs > 0 {
			res.Summary.Traffic = g.PerEpoch(res.Summary.Epochs)
		}
	}
	return &Result{Result: res, Config: cfg, Dataset: sh.Name}, err
}
