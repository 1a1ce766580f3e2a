package train

import (
	"context"
	"errors"

	"github.com/graphmill/graphmill/nn"
)

func (r *Runner) sampledStepper(ctx context.Context, m *nn.Model, opt nn.Optimizer) (stepper, error) {
	return nil, errors.New("sampled training: not wired yet")
}
