package nn

import (
	"slices"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// SAGEConv is GraphSAGE's layer with mean aggregation and a separate root
// weight: out = lin_l(mean_{j∈N(i)} x_j) + lin_r(x_i), as PyG's SAGEConv
// (lin_l has the bias, lin_r none).
type SAGEConv struct {
	LinL, BiasL, LinR *autograd.Var
	in, out           int
}

// NewSAGEConv returns a SAGEConv from in to out features.
func NewSAGEConv(ini *Init, in, out int) *SAGEConv {
	return &SAGEConv{
		LinL:  autograd.NewParam("lin_l.weight", ini.glorot(out, in, in, out)),
		BiasL: autograd.NewParam("lin_l.bias", ini.matrix(1, out)),
		LinR:  autograd.NewParam("lin_r.weight", ini.glorot(out, in, in, out)),
		in:    in, out: out,
	}
}

// Forward implements Layer.
func (l *SAGEConv) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	return l.forward(tp, b, x, autograd.NoActivation, tensor.RowDropout{})
}

// forwardReLU is Forward followed by ReLU (and drop), fused (see reluFused).
func (l *SAGEConv) forwardReLU(tp *autograd.Tape, b *Block, x *autograd.Var, drop tensor.RowDropout) *autograd.Var {
	return l.forward(tp, b, x, autograd.ActReLU, drop)
}

// forward computes act(lin_l(mean of neighbours) + lin_r(root) + bias) as
// one fused op (Block.Conv).
func (l *SAGEConv) forward(tp *autograd.Tape, b *Block, x *autograd.Var, act autograd.Activation, drop tensor.RowDropout) *autograd.Var {
	return b.Conv(tp, x, Conv{Agg: AggMean, W: l.LinL, Root: l.LinR, Bias: l.BiasL, ReLU: act == autograd.ActReLU, Drop: drop})
}

// Params implements Layer.
func (l *SAGEConv) Params() []*autograd.Var { return []*autograd.Var{l.LinL, l.BiasL, l.LinR} }

// OutDim implements Layer.
func (l *SAGEConv) OutDim() int { return l.out }

func init() {
	Register(Spec{
		Kind: SAGE, Help: "GraphSAGE (mean aggregation, separate root weight; PyG's SAGEConv)",
		Defaults: Defaults{Hidden: 64, Epochs: 50, Sampled: true, Fanouts: []int{25, 10}, Batch: 64, Note: "sampled minibatches of 64 seeds, fanouts 25,10, hidden 64, 50 epochs (PyG's GraphSAGE example)"},
		Build: func(ini *Init, c *Config, _ []float32) ([]Layer, error) {
			return StackLayers(c, func(l, in, out int) Layer { return NewSAGEConv(ini, in, out) }), nil
		},
	})
}

func (l *SAGEConv) plan(p *planner, s BlockShape, x pv) pv { return l.planAct(p, s, x, false) }

func (l *SAGEConv) planReLU(p *planner, s BlockShape, x pv) pv { return l.planAct(p, s, x, true) }

func (l *SAGEConv) planAct(p *planner, s BlockShape, x pv, relu bool) pv {
	return planAggregateDense(p, s, x, l.in, l.out, relu, 2)
}

// planAggregateDense plans a layer that aggregates over the block's edges
// and applies one Dense op (GCN, SAGE) with terms weighted inputs of width
// in when aggregating first: the aggregation runs on the inputs or on
// their transform, whichever is narrower (aggregateFirst).
func planAggregateDense(p *planner, s BlockShape, x pv, in, out int, relu bool, terms int) pv {
	if aggregateFirst(s, in, out) {
		p.aggregate(x, s.Dst)
		fused := !x.grad && tensor.ReLUGradFused(s.Dst, out, slices.Repeat([]int{in}, terms)) // no matrix for the ReLU's gradient
		return p.dense(s.Dst, out, relu, fused)
	}
	p.aggregate(p.linear(x, out), s.Dst)
	return p.dense(s.Dst, out, relu, false)
}

// indexBytes: SAGE aggregates over the block's own edges; backward needs
// their transpose.
func (l *SAGEConv) indexBytes(s BlockShape, train bool) int64 {
	return transposeBytes(s, int64(s.Edges), train)
}
