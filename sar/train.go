package sar

import (
	"context"
	"fmt"
	"time"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/train"
)

// Run trains cfg.Model by full-graph steps over the ranks' shards, with
// the selection, patience and learning-rate schedule of train's full mode
// (cfg.Mode, the sampling and GNNAutoScale settings and the memory bound
// are not used): train.Loop drives the engine as one more Stepper. Every
// rank calls it and gets the same result: the history, the summary and
// the model with the best validation weights. Its steps draw the single
// process's dropout masks, so the run follows "graphmill train --mode
// full" on the whole dataset up to float32 rounding.
func Run(ctx context.Context, e *Engine, cfg train.Config, hooks train.Hooks) (*train.Result, error) {
	s := e.Shard
	if s.NumTrain == 0 {
		return nil, fmt.Errorf("dataset %s has an empty training split", s.Name)
	}
	if s.NumClasses < 2 {
		return nil, fmt.Errorf("dataset %s has no labels to train on", s.Name)
	}
	if cfg.Epochs < 1 || cfg.EvalEvery < 1 || cfg.Patience < 0 {
		return nil, fmt.Errorf("sar: epochs and eval-every must be >= 1 and patience >= 0, got %d, %d and %d", cfg.Epochs, cfg.EvalEvery, cfg.Patience)
	}
	model, err := NewModel(s, cfg.Model)
	if err != nil {
		return nil, err
	}
	opt, err := cfg.NewOptimizer(model)
	if err != nil {
		return nil, err
	}
	return train.Loop{
		Config: cfg, Model: model, Optimizer: opt, Hooks: hooks,
		Stepper: &stepper{e: e, m: model, opt: opt, seed: cfg.Seed},
		Summary: train.Summary{
			Model: string(cfg.Model.Kind), Mode: string(e.Mode), Dataset: s.Name,
			NumParams: model.NumParams(), Seed: cfg.Seed, Threads: tensor.Threads(), BaseHeapBytes: memstat.HeapInUse(),
		},
		Seeds: s.NumTrain,
	}.Run(ctx)
}

// stepper is the engine as a train.Stepper: one full-graph step an epoch.
type stepper struct {
	e    *Engine
	m    *nn.Model
	opt  nn.Optimizer
	seed uint64
}

func (st *stepper) Epoch(ctx context.Context, epoch int) (train.EpochStats, error) {
	t := time.Now()
	out, err := st.e.Grad(ctx, st.m, rng.Derive(st.seed, uint64(epoch)))
	if err != nil {
		return train.EpochStats{}, fmt.Errorf("epoch %d: %w", epoch, err)
	}
	heap := memstat.HeapInUse()
	st.opt.Step(st.m.Params())
	return train.EpochStats{Loss: out.Loss, TrainAcc: float64(out.Correct) / float64(max(out.Total, 1)), Batches: 1, MicroBatches: 1,
		PeakHeapBytes: heap, ComputeSeconds: time.Since(t).Seconds()}, nil
}

func (st *stepper) Evaluate(ctx context.Context, m *nn.Model) (train.Evaluation, error) {
	return st.e.Evaluate(ctx, m)
}

func (st *stepper) Close() {}

// Evaluate returns the validation and test accuracy and the validation
// loss of m over all ranks' nodes. Every rank calls it.
func (e *Engine) Evaluate(ctx context.Context, m *nn.Model) (train.Evaluation, error) {
	logits, err := e.Logits(ctx, m)
	if err != nil {
		return train.Evaluation{}, err
	}
	return e.Score(ctx, logits)
}

// Score turns the inner nodes' logits into the metrics over all ranks.
func (e *Engine) Score(ctx context.Context, logits tensor.Matrix) (train.Evaluation, error) {
	s := e.Shard
	var v [5]float64 // val correct, val labelled, test correct, test labelled, val loss sum
	count := func(ids []int32, correct, total int) {
		for _, i := range ids {
			y := s.Labels[i]
			if y < 0 {
				continue
			}
			v[total]++
			row := logits.Row(int(i))
			if engine.Argmax(row) == y {
				v[correct]++
			}
			if correct == 0 {
				v[4] += engine.NLL(row, y)
			}
		}
	}
	count(s.Val, 0, 1)
	count(s.Test, 2, 3)
	buf := v[:]
	if s.Size > 1 {
		if err := e.comm.AllReduce(ctx, buf, dist.Sum); err != nil {
			return train.Evaluation{}, err
		}
	}
	var ev train.Evaluation
	if buf[1] > 0 {
		ev.ValAcc, ev.ValLoss = buf[0]/buf[1], buf[4]/buf[1]
	}
	if buf[3] > 0 {
		ev.TestAcc = buf[2] / buf[3]
	}
	return ev, nil
}
