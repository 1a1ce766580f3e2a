package sar

import (
	"context"
	"errors"
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
// are not used). Every rank calls it and gets the same result: the
// history, the summary and the model with the best validation weights.
// Its steps draw the single process's dropout masks, so the run follows
// "graphmill train --mode full" on the whole dataset up to float32
// rounding.
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
	res := &train.Result{Summary: train.Summary{
		Model: string(cfg.Model.Kind), Mode: string(e.Mode), Dataset: s.Name,
		NumParams: model.NumParams(), Seed: cfg.Seed, Threads: tensor.Threads(), BestEpoch: -1,
		BaseHeapBytes: memstat.HeapInUse(),
	}}
	start := time.Now()
	sel := train.NewSelection()
	var bestModel *nn.Model
	epochs := 0
	var trainSecs float64
	finalize := func() *train.Result {
		if bestModel != nil {
			model = bestModel
		}
		sm := &res.Summary
		sm.Epochs = epochs
		if epochs > 0 {
			sm.EpochSeconds = trainSecs / float64(epochs)
			sm.ComputeSeconds = sm.EpochSeconds
			sm.SeedsPerSecond = float64(s.NumTrain*epochs) / trainSecs
		}
		sm.TotalSeconds = time.Since(start).Seconds()
		res.Model = model
		return res
	}
	interrupted := func(err error) (*train.Result, error) {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return finalize(), fmt.Errorf("%w after %d epochs: %w", train.ErrInterrupted, epochs, cerr)
		}
		return nil, err
	}
	for epoch := 0; epoch < cfg.Epochs; epoch++ {
		if err := ctx.Err(); err != nil {
			return interrupted(err)
		}
		lr := cfg.LR(epoch)
		opt.SetLR(lr)
		t0 := time.Now()
		memstat.ResetPeak()
		out, err := e.Grad(ctx, model, rng.Derive(cfg.Seed, uint64(epoch)))
		if err != nil {
			return interrupted(fmt.Errorf("epoch %d: %w", epoch, err))
		}
		heap := memstat.HeapInUse()
		opt.Step(model.Params())
		st := train.EpochStats{Epoch: epoch, Loss: out.Loss, TrainAcc: float64(out.Correct) / float64(max(out.Total, 1)), LR: lr, Batches: 1, MicroBatches: 1,
			PeakHeapBytes: heap, PeakRSSBytes: memstat.Peak()}
		st.Seconds = time.Since(t0).Seconds()
		st.ComputeSeconds = st.Seconds
		trainSecs += st.Seconds
		epochs++
		res.Summary.Batches++
		res.Summary.MicroBatches++
		res.Summary.PeakHeapBytes = max(res.Summary.PeakHeapBytes, st.PeakHeapBytes)
		res.Summary.PeakRSSBytes = max(res.Summary.PeakRSSBytes, st.PeakRSSBytes)
		if !cfg.SkipEval && ((epoch+1)%cfg.EvalEvery == 0 || epoch == cfg.Epochs-1) {
			t1 := time.Now()
			ev, err := e.Evaluate(ctx, model)
			if err != nil {
				return interrupted(err)
			}
			st.EvalSeconds = time.Since(t1).Seconds()
			st.ValAcc, st.TestAcc, st.ValLoss = &ev.ValAcc, &ev.TestAcc, &ev.ValLoss
			if sel.Observe(ev) {
				bestModel = cloneModel(model)
				res.Summary.BestValAcc, res.Summary.BestValLoss = ev.ValAcc, ev.ValLoss
				res.Summary.TestAcc, res.Summary.BestEpoch = ev.TestAcc, epoch
			}
		}
		res.History = append(res.History, st)
		if hooks.Epoch != nil {
			hooks.Epoch(st)
		}
		if sel.Exhausted(cfg.Patience) {
			res.Summary.StoppedEarly = true
			break
		}
	}
	return finalize(), nil
}

// cloneModel copies m's weights into a new model of the same config.
func cloneModel(m *nn.Model) *nn.Model {
	c, err := m.Clone([]float32{})
	if err != nil {
		panic(err) // m was built from the same config
	}
	return c
}

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
