package train

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/graphmill/graphmill/nn"
)

// TestRunInterruptedKeepsBestModel cancels the context during training (as
// Ctrl-C does) in each mode: Run must stop at the end of a step and return
// the best model evaluated so far with an error that is both
// ErrInterrupted and context.Canceled.
func TestRunInterruptedKeepsBestModel(t *testing.T) {
	d := cora(t)
	for _, c := range []struct {
		kind nn.Kind
		mode Mode
	}{{nn.GCN, Full}, {nn.SAGE, Sampled}, {nn.GCN, GAS}} {
		t.Run(string(c.mode), func(t *testing.T) {
			cfg := Defaults(c.kind)
			cfg.Mode, cfg.Epochs = c.mode, 50
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			epochsSeen := 0
			hooks := Hooks{Epoch: func(s EpochStats) {
				epochsSeen++
				if s.Epoch == 2 {
					cancel()
				}
			}}
			r, err := NewRunner(d, cfg, hooks, withTestParts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Run(ctx)
			if !errors.Is(err, ErrInterrupted) || !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want ErrInterrupted wrapping context.Canceled", err)
			}
			if res == nil || res.Model == nil {
				t.Fatal("no model returned")
			}
			if res.Summary.Epochs != 3 || epochsSeen != 3 {
				t.Fatalf("ran %d epochs (%d seen), want to stop after epoch 2", res.Summary.Epochs, epochsSeen)
			}
			if res.Summary.BestEpoch < 0 || res.Summary.BestEpoch > 2 || res.Summary.BestValAcc <= 0 {
				t.Fatalf("best epoch %d, val acc %v", res.Summary.BestEpoch, res.Summary.BestValAcc)
			}
			ev, err := r.Evaluate(context.Background(), res.Model)
			if err != nil {
				t.Fatal(err)
			}
			if ev.ValAcc != res.Summary.BestValAcc {
				t.Fatalf("returned model's validation accuracy %v, best recorded %v", ev.ValAcc, res.Summary.BestValAcc)
			}
		})
	}
}

// TestCancelledBeforeRun: a context cancelled before Run gives an error
// wrapping ErrInterrupted in every mode.
func TestCancelledBeforeRun(t *testing.T) {
	d := cora(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, mode := range []Mode{Full, Sampled, GAS} {
		cfg := Defaults(nn.GCN)
		cfg.Mode, cfg.Epochs = mode, 2
		r, err := NewRunner(d, cfg, Hooks{}, withTestParts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Run(ctx); !errors.Is(err, ErrInterrupted) {
			t.Errorf("%s: %v, want an error wrapping ErrInterrupted", mode, err)
		}
		r.Close()
	}
}

// TestNoStepAfterCancel cancels the context from the Batch hook, the
// step slower than the pipeline so that batches are queued: no step may
// start after the cancellation (the pipeline's queued batches are not
// handed out), with or without overlapped evaluation.
func TestNoStepAfterCancel(t *testing.T) {
	d := cora(t)
	for _, c := range []struct {
		mode    Mode
		overlap bool
	}{{Sampled, false}, {Sampled, true}, {GAS, false}} {
		cfg := Defaults(nn.SAGE)
		cfg.Mode, cfg.OverlapEval, cfg.BatchSize, cfg.Parts, cfg.PartsPerBatch = c.mode, c.overlap, 4, 40, 2
		ctx, cancel := context.WithCancel(context.Background())
		steps, after, cancelled := 0, 0, false
		r, err := NewRunner(d, cfg, Hooks{Batch: func(_, _ int, _ float64) {
			steps++
			if cancelled {
				after++
			}
			time.Sleep(5 * time.Millisecond) // a bigger model's step: the pipeline runs ahead
			if steps == 5 {
				cancel()
				cancelled = true
			}
		}}, withTestParts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Run(ctx)
		r.Close()
		cancel()
		if !errors.Is(err, ErrInterrupted) || after != 0 {
			t.Errorf("%s (overlap %v): %d steps after the cancellation, error %v; want none and ErrInterrupted", c.mode, c.overlap, after, err)
		}
	}
}
