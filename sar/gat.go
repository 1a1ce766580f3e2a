package sar

import (
	"fmt"

	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor/autograd"
)

func (x *exchanger) gat(tp *autograd.Tape, l *nn.GATConv, h *autograd.Var, train bool, seed uint64) (*autograd.Var, error) {
	return nil, fmt.Errorf("sar: GAT is not distributed yet")
}
