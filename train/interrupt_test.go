package train

import (
	"context"
	"errors"
	"testing"

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
