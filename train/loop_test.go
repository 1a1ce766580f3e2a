package train

import (
	"context"
	"testing"

	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/nn"
)

// instantStepper's epochs take no time.
type instantStepper struct{}

func (instantStepper) Epoch(context.Context, int) (EpochStats, error) {
	return EpochStats{Batches: 1}, nil
}
func (instantStepper) Evaluate(context.Context, *nn.Model) (Evaluation, error) {
	return Evaluation{}, nil
}
func (instantStepper) Close() {}

// TestLoopPeakRSSShortEpochs: over epochs far shorter than peakEvery the
// resident-set mark is read now and then only, and every epoch still
// reports one (the last read), the summary the largest.
func TestLoopPeakRSSShortEpochs(t *testing.T) {
	if memstat.Peak() == 0 {
		t.Skip("no resident-set high-water mark on this system")
	}
	cfg := Defaults(nn.GCN)
	cfg.Epochs, cfg.SkipEval, cfg.Patience = 40, true, 0
	res, err := Loop{Config: cfg, Optimizer: &nn.Adam{}, Stepper: instantStepper{}}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var most int64
	for _, h := range res.History {
		if h.PeakRSSBytes <= 0 {
			t.Fatalf("epoch %d reports no resident-set peak", h.Epoch)
		}
		most = max(most, h.PeakRSSBytes)
	}
	if len(res.History) != 40 || res.Summary.PeakRSSBytes != most {
		t.Fatalf("%d epochs, summary peak %d, largest epoch's %d", len(res.History), res.Summary.PeakRSSBytes, most)
	}
}
