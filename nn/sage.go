package nn

import (
	"github.com/graphmill/graphmill/internal/rng"
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
func NewSAGEConv(r *rng.Rand, in, out int) *SAGEConv {
	return &SAGEConv{
		LinL:  autograd.NewParam("lin_l.weight", glorot(r, out, in, in, out)),
		BiasL: autograd.NewParam("lin_l.bias", tensor.New(1, out)),
		LinR:  autograd.NewParam("lin_r.weight", glorot(r, out, in, in, out)),
		in:    in, out: out,
	}
}

// Forward implements Layer.
func (l *SAGEConv) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	neigh := aggregateLinear(tp, b, b.CSR, x, l.LinL, tensor.Mean)
	root := x
	if b.NumDst != x.Value.Rows {
		root = tp.Rows(x, 0, b.NumDst)
	}
	return tp.AddBias(tp.Add(neigh, linear(tp, root, l.LinR)), l.BiasL)
}

// Params implements Layer.
func (l *SAGEConv) Params() []*autograd.Var { return []*autograd.Var{l.LinL, l.BiasL, l.LinR} }

// OutDim implements Layer.
func (l *SAGEConv) OutDim() int { return l.out }

func init() {
	Register(Spec{
		Kind: SAGE, Help: "GraphSAGE (mean aggregation, separate root weight; PyG's SAGEConv)",
		Build: func(r *rng.Rand, c *Config, _ []float32) ([]Layer, error) {
			return stackLayers(c, func(l, in, out int) Layer { return NewSAGEConv(r, in, out) }), nil
		},
	})
}

func (l *SAGEConv) plan(p *planner, s BlockShape, x pv) pv {
	neigh := p.aggregateLinear(x, s, l.in, l.out)
	root := p.rowsIf(x, s.Dst)
	return p.bias(p.add(neigh, p.linear(root, l.out)))
}

// indexBytes: SAGE aggregates over the block's own edges; backward needs
// their transpose.
func (l *SAGEConv) indexBytes(s BlockShape, train bool) int64 {
	return transposeBytes(s, int64(s.Edges), train)
}
