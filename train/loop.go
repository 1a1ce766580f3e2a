package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/nn"
)

// Stepper is one training mode: the steps of an epoch, and evaluation.
// Loop drives it; Runner's full, sampled and GNNAutoScale modes are
// Steppers, and so is SAR's distributed full-graph engine (package sar).
type Stepper interface {
	// Epoch trains one epoch (the optimiser's learning rate already set)
	// and returns its figures; Loop fills in the epoch, the learning
	// rate, the time, and the peak memory where the stepper leaves them 0.
	Epoch(ctx context.Context, epoch int) (EpochStats, error)
	// Evaluate scores a snapshot of the model's weights.
	Evaluate(ctx context.Context, m *nn.Model) (Evaluation, error)
	// Close releases what the stepper holds.
	Close()
}

// Loop is the training loop every mode shares: the learning-rate
// schedule, evaluation every Config.EvalEvery epochs (in the background
// with Config.OverlapEval), model selection and early stopping
// (Selection, Config.Patience), interruption by the context, the history
// and the summary.
type Loop struct {
	Config    Config
	Model     *nn.Model
	Optimizer nn.Optimizer
	Stepper   Stepper
	// Hooks: Loop calls EpochStart before each epoch (with the stepper's
	// NumBatches() when it has that method, 1 otherwise: one full-graph
	// step, as SAR's) and Epoch after it; Batch and Fill are the
	// stepper's to call (the Runner's steppers do).
	Hooks Hooks
	// Summary describes the run (model, mode, dataset, ...); Loop adds the
	// figures.
	Summary Summary
	// Seeds is the number of training seeds an epoch visits.
	Seeds int
	// Clone snapshots the weights for an evaluation (nil: Model.Clone
	// with the model's own degree table, Model.Degrees).
	Clone func(*nn.Model) *nn.Model
	// Finalize, when set, adds the stepper's own figures to the summary.
	Finalize func(*Summary)
	// StateFile, when set, is where Loop writes the training state (see
	// ReadState) after every StateEvery epochs (< 1: every epoch) and
	// after the last, atomically: a crash mid-write leaves the previous
	// state whole. An overlapped evaluation (Config.OverlapEval) is
	// waited for before a write, so that the state holds it. Interrupted
	// between epochs, Loop also writes the last epoch's state if it has
	// not. A failed write ends the run with its error; the previous state
	// is still there to resume.
	StateFile  string
	StateEvery int
	// Resume, when set, continues the run the state describes (ReadState)
	// from its epoch: weights, optimiser state, best model, selection and
	// early stopping, history and totals. Another configuration
	// (Config.SharedHash) or another Dataset is refused (State.Check),
	// except another number of epochs under a constant learning rate.
	Resume *State
	// Dataset identifies the dataset, recorded in the state and checked
	// against Resume's.
	Dataset DatasetID
}

// Run trains up to Config.Epochs epochs and returns the history, the
// summary and the model with the best validation weights. When the
// context is cancelled it returns the result so far with an error that
// wraps ErrInterrupted; when a step's loss is not finite after an
// evaluation, the result so far with the step's error (ErrDiverged).
func (l Loop) Run(ctx context.Context) (*Result, error) {
	cfg, model, step := l.Config, l.Model, l.Stepper
	clone := l.Clone
	if clone == nil {
		clone = func(m *nn.Model) *nn.Model {
			c, err := m.Clone(m.Degrees())
			if err != nil {
				panic(err) // m was built from the same config and table
			}
			return c
		}
	}
	res := &Result{Summary: l.Summary, Config: cfg}
	res.Summary.BestEpoch = -1
	start := time.Now()
	sel := NewSelection()
	var bestModel *nn.Model
	var pending *evalJob
	var pendingStats *EpochStats
	finish := func(j *evalJob, st *EpochStats) error {
		<-j.done
		if j.err != nil {
			return j.err
		}
		ev := j.ev
		st.ValAcc, st.TestAcc, st.ValLoss, st.EvalSeconds = &ev.ValAcc, &ev.TestAcc, &ev.ValLoss, j.secs
		if sel.Observe(ev) {
			bestModel = j.snapshot
			res.Summary.BestValAcc, res.Summary.BestValLoss = ev.ValAcc, ev.ValLoss
			res.Summary.TestAcc, res.Summary.BestEpoch = ev.TestAcc, j.epoch
		}
		res.History = append(res.History, *st)
		if l.Hooks.Epoch != nil {
			l.Hooks.Epoch(*st)
		}
		return nil
	}
	var acc progress // the totals, epochs done included
	done := false    // a resumed run that had ended
	if _, ok := l.Optimizer.(nn.StatefulOptimizer); !ok && l.StateFile != "" {
		// Found before an epoch's work, not at the first write.
		return nil, fmt.Errorf("training state: the optimiser (%T) cannot give its state (nn.StatefulOptimizer)", l.Optimizer)
	}
	if l.Resume != nil {
		var err error
		if bestModel, err = l.restore(l.Resume, sel, res, &acc, clone); err != nil {
			return nil, err
		}
		done = l.Resume.Ended(cfg)
	}
	first, saved := acc.Epochs, acc.Epochs // saved: the epochs the state file holds
	every := max(l.StateEvery, 1)
	var historyJSON []json.RawMessage // the records' JSON written so far (saveState)
	// writeState writes the state after acc.Epochs epochs, waiting for an
	// overlapped evaluation first.
	writeState := func(ended bool) error {
		if pending != nil {
			if err := finish(pending, pendingStats); err != nil {
				return err
			}
			pending, pendingStats = nil, nil
		}
		t := time.Now()
		ss := &saveState{l: &l, sel: sel, res: res, best: bestModel, acc: acc, epoch: acc.Epochs, done: ended, history: &historyJSON}
		ss.acc.TotalSeconds += time.Since(start).Seconds()
		if st, ok := step.(stateStepper); ok {
			ss.stepState = st.stateTensors()
		}
		n, err := ss.write()
		if err != nil {
			return err
		}
		saved = acc.Epochs
		res.Summary.StateWrites++
		res.Summary.StateSeconds += time.Since(t).Seconds()
		res.Summary.StateBytes = n
		return nil
	}
	finalize := func() *Result {
		if bestModel != nil {
			model = bestModel
		}
		s := &res.Summary
		epochs := acc.Epochs
		s.Epochs = epochs
		if epochs > 0 {
			s.EpochSeconds = acc.TrainSeconds / float64(epochs)
			s.SampleSeconds, s.GatherSeconds = acc.SampleSeconds/float64(epochs), acc.GatherSeconds/float64(epochs)
			s.ComputeSeconds, s.WaitSeconds = acc.ComputeSeconds/float64(epochs), acc.WaitSeconds/float64(epochs)
			s.FirstWaitSeconds = acc.FirstWait / float64(epochs)
			s.SeedsPerSecond = float64(acc.Seeds) / acc.TrainSeconds
		}
		s.TotalSeconds = acc.TotalSeconds + time.Since(start).Seconds()
		if l.Finalize != nil {
			l.Finalize(s)
		}
		res.Model = model
		return res
	}
	// unscored records epochs whose evaluation an interruption cut short,
	// without their scores.
	unscored := func(sts ...EpochStats) {
		for _, st := range sts {
			st.ValAcc, st.TestAcc, st.ValLoss = nil, nil, nil
			res.History = append(res.History, st)
		}
	}
	// interrupted returns the result so far when err is the context's
	// cancellation, and err alone otherwise.
	interrupted := func(err error) (*Result, error) {
		if pending != nil {
			// An overlapped evaluation still reads the runner's graph and
			// features, which the caller frees once this returns. Its
			// epoch is recorded, scored if it ended before the signal.
			if ferr := finish(pending, pendingStats); ferr != nil {
				unscored(*pendingStats)
			}
			pending, pendingStats = nil, nil
		}
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return finalize(), fmt.Errorf("%w after %d epochs: %w", ErrInterrupted, acc.Epochs, cerr)
		}
		if errors.Is(err, ErrDiverged) && bestModel != nil {
			return finalize(), err // the best evaluated weights are still good
		}
		return nil, err
	}
	if done && l.StateFile != "" && l.StateFile != l.Resume.Path {
		// A finished run given another state file: it gets the state too.
		if err := writeState(true); err != nil {
			return finalize(), fmt.Errorf("%w after %d epochs: %w", ErrStateWrite, acc.Epochs, err)
		}
	}
	// The resident-set mark is reset before an epoch and read after it,
	// through /proc (about 80 µs): over epochs shorter than peakEvery
	// (full-graph Cora's take 2-3 ms) once per peakEvery instead, an
	// epoch in between reporting the mark last read. since is when the
	// mark was last reset, zero once it has been read.
	var peak int64
	var since time.Time
	for epoch := first; epoch < cfg.Epochs && !done; epoch++ {
		if err := ctx.Err(); err != nil {
			if l.StateFile != "" && saved < acc.Epochs && pending == nil {
				// Between epochs: the weights are the last epoch's.
				if serr := writeState(false); serr != nil {
					res, _ := interrupted(err)
					return res, fmt.Errorf("%w after %d epochs: %w; and writing the training state: %w", ErrInterrupted, acc.Epochs, err, serr)
				}
			}
			return interrupted(err)
		}
		lr := cfg.LR(epoch)
		l.Optimizer.SetLR(lr)
		t0 := time.Now()
		if since.IsZero() {
			memstat.ResetPeak()
			since = t0
		}
		if l.Hooks.EpochStart != nil {
			l.Hooks.EpochStart(epoch, epochBatches(step))
		}
		st, err := step.Epoch(ctx, epoch)
		if err != nil {
			return interrupted(err)
		}
		if st.PeakHeapBytes == 0 {
			st.PeakHeapBytes = memstat.HeapInUse()
		}
		if time.Since(since) >= peakEvery || epoch == cfg.Epochs-1 || peak == 0 {
			peak, since = memstat.Peak(), time.Time{}
		}
		st.PeakRSSBytes = peak
		res.Summary.PeakHeapBytes = max(res.Summary.PeakHeapBytes, st.PeakHeapBytes)
		res.Summary.PeakRSSBytes = max(res.Summary.PeakRSSBytes, st.PeakRSSBytes)
		st.Epoch, st.LR = epoch, lr
		st.Seconds = time.Since(t0).Seconds()
		acc.TrainSeconds += st.Seconds
		acc.SampleSeconds += st.SampleSeconds
		acc.GatherSeconds += st.GatherSeconds
		acc.ComputeSeconds += st.ComputeSeconds
		acc.WaitSeconds += st.WaitSeconds
		acc.FirstWait += st.FirstWaitSeconds
		acc.Seeds += int64(l.Seeds)
		acc.Epochs++
		res.Summary.Batches += st.Batches
		res.Summary.MicroBatches += st.MicroBatches
		// The previous epoch's overlapped evaluation has finished running
		// alongside this epoch: account for it first.
		if pending != nil {
			if err := finish(pending, pendingStats); err != nil {
				// Interrupted during that evaluation: both epochs were
				// trained, neither scored (the history has every epoch
				// the summary counts).
				unscored(*pendingStats, st)
				pending = nil
				return interrupted(err)
			}
			pending, pendingStats = nil, nil
		}
		if !cfg.SkipEval && ((epoch+1)%cfg.EvalEvery == 0 || epoch == cfg.Epochs-1) {
			j := &evalJob{epoch: epoch, snapshot: clone(model), done: make(chan struct{})}
			run := func() {
				defer close(j.done)
				t := time.Now()
				j.ev, j.err = step.Evaluate(ctx, j.snapshot)
				j.secs = time.Since(t).Seconds()
			}
			stc := st
			if cfg.OverlapEval && epoch < cfg.Epochs-1 {
				go run()
				pending, pendingStats = j, &stc
			} else {
				run()
				if err := finish(j, &stc); err != nil {
					unscored(stc)
					return interrupted(err)
				}
			}
		} else {
			res.History = append(res.History, st)
			if l.Hooks.Epoch != nil {
				l.Hooks.Epoch(st)
			}
		}
		stop := sel.Exhausted(cfg.Patience)
		if stop {
			res.Summary.StoppedEarly = true
		}
		// The last epoch's state is always written: it marks the run done.
		if last := stop || epoch == cfg.Epochs-1; l.StateFile != "" && (last || (epoch+1)%every == 0) {
			if err := writeState(last); err != nil {
				if pending != nil {
					<-pending.done // it reads the runner's graph and features
				}
				return finalize(), fmt.Errorf("%w after %d epochs: %w", ErrStateWrite, acc.Epochs, err)
			}
		}
		if stop {
			break
		}
	}
	if pending != nil {
		if err := finish(pending, pendingStats); err != nil {
			return interrupted(err) // which records its epoch, unscored
		}
	}
	return finalize(), nil
}

// epochBatches is the number of batches a stepper's epoch runs, for
// Hooks.EpochStart: its NumBatches() when it has one, else 1.
func epochBatches(s Stepper) int {
	if n, ok := s.(interface{ NumBatches() int }); ok {
		return n.NumBatches()
	}
	return 1
}

// peakEvery is the least time between two readings of the resident-set
// high-water mark (see Loop.Run).
const peakEvery = 50 * time.Millisecond
