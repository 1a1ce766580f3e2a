package engine

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/nn"
)

// Evaluation holds the metrics of one evaluation: validation and test
// accuracy and the validation loss.
type Evaluation struct {
	ValAcc, TestAcc, ValLoss float64
}

// ScoreBlocks runs m forward (inference, no dropout) on a minibatch that
// carries its float32 feature rows and its seeds' labels, and scores the
// seeds (negative labels are skipped): the number predicted right, the
// number scored and the summed negative log-likelihood. With every fanout
// -1 the logits are the full-graph ones, so a distributed run evaluates
// exactly.
func ScoreBlocks(ctx context.Context, m *nn.Model, mb *batch.MiniBatch) (correct, total int, lossSum float64, err error) {
	if m == nil || mb == nil {
		return 0, 0, 0, fmt.Errorf("engine: no model or no batch")
	}
	if len(mb.Labels) != len(mb.Seeds) {
		return 0, 0, 0, fmt.Errorf("engine: %d labels for %d seeds", len(mb.Labels), len(mb.Seeds))
	}
	if mb.Features.Empty() {
		return 0, 0, 0, fmt.Errorf("engine: the batch carries no feature rows")
	}
	if err := checkLabels(m, mb, mb.Labels); err != nil {
		return 0, 0, 0, err
	}
	res, err := New(m, nil, Config{}).Infer(ctx, m, mb)
	if err != nil {
		return 0, 0, 0, err
	}
	logits := res.Logits
	for i, y := range mb.Labels {
		if y < 0 {
			continue
		}
		row := logits.Row(i)
		if Argmax(row) == y {
			correct++
		}
		lossSum += NLL(row, y)
		total++
	}
	return correct, total, lossSum, nil
}
